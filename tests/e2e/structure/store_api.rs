//! What the store's public functions take and how it reads rows: a raw `Uuid` parameter could
//! be any kind's id (a channel's passed as an interaction's compiles), and `try_get("col")`
//! reads a column by a name the compiler never checks.

/// `path:line name(param)` of each parameter of a `pub` function in `code` (including those
/// `tenant_writes!` declares) whose type names a raw `Uuid`: bare, `&`, `Option<..>` or a slice.
/// `pub(crate)` helpers are the store's own business and are not counted.
pub fn raw_uuid_params(path: &str, code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("fn ") {
        let head = &code[..at];
        let declared = head.rsplit(['\n', ';', '{', '}']).next().unwrap_or_default();
        let mut words = declared.split_whitespace();
        if words.next() != Some("pub") || !words.all(|w| matches!(w, "async" | "const" | "unsafe")) {
            continue;
        }
        let rest = &code[at + 3..];
        let Some(open) = rest.find('(') else { continue };
        let name = rest[..open].split('<').next().unwrap_or_default().trim();
        let line = head.matches('\n').count() + 1;
        for param in top_level_params(&rest[open + 1..]) {
            let Some((_, ty)) = param.split_once(':') else { continue };
            if ty.split(|c: char| !c.is_alphanumeric() && c != '_').any(|word| word == "Uuid") {
                found.push(format!("{path}:{line} {name}({})", param.trim()));
            }
        }
    }
    found
}

/// The parameters of a list that starts just after its `(`, split at its top-level commas.
fn top_level_params(list: &str) -> Vec<&str> {
    let (mut depth, mut start, mut params) = (0usize, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '(' | '<' | '[' => depth += 1,
            ')' if depth == 0 => {
                params.push(&list[start..i]);
                return params;
            }
            ')' | '>' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                params.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    params
}

/// How many `try_get("` calls `code` makes: columns read by name.
pub fn named_column_reads(code: &str) -> usize {
    code.matches("try_get(\"").count()
}
