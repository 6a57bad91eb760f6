//! A ratchet on what issue 36 wants gone from the production code of `libs/` and
//! `services/`: functions longer than 80 lines, import circles between the files of one
//! crate, `json!` bodies in the api role (its bodies are `hermes_wire` types), raw `Uuid`
//! parameters of the store's public functions and columns it reads by name. Each count has a
//! ceiling, today's number: the test fails when a count rises above
//! it (listing every offender) and when it falls below it (so the ceiling is lowered with the
//! fix and the number only goes down). Read from the source text, no compiler: see the
//! `structure/` modules for what is counted. Out of scope: `libs/testkit`, `fuzz/`,
//! `loadtest/`, `tests/` folders, `*_tests.rs` and `tests.rs` files, `#[cfg(test)]` items.

mod circles;
mod functions;
mod imports;
mod lexer;
mod store_api;

use std::collections::BTreeMap;
use std::process::Command;

use circles::Circle;
use functions::Function;

/// Non-test functions longer than [`MAX_LINES`] today; lower it when one is split.
const LONG_FUNCTION_CEILING: usize = 0;
/// Import circles inside crates today; lower it when one is broken.
const CIRCLE_CEILING: usize = 0;
/// `json!` in the api role's production code today: none builds a response body.
const API_JSON_CEILING: usize = 3;
/// Raw `Uuid` parameters of the store's public functions today: the one is the tenant a
/// signed-in person names (`Admin::tenant_for_person`), a `TenantId` only once their
/// membership is found.
const STORE_RAW_ID_CEILING: usize = 1;
/// `try_get("col")` calls in the store today (the rest of its rows are `FromRow` structs).
const STORE_NAMED_READ_CEILING: usize = 14;
/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_LINES: usize = 80;

/// What the scan finds.
struct Scan {
    long_functions: Vec<Function>,
    circles: Vec<Circle>,
    /// `path:line` of each `json!` in the api role.
    api_json: Vec<String>,
    /// `path:line fn(param)` of each raw `Uuid` parameter of a public store function.
    store_raw_ids: Vec<String>,
    /// `try_get("` calls in the store.
    store_named_reads: usize,
}

/// Whether a repository path is production code of a workspace crate.
fn in_scope(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    path.ends_with(".rs")
        && (path.starts_with("libs/") || path.starts_with("services/"))
        && !path.starts_with("libs/testkit/")
        && !path.split('/').any(|dir| matches!(dir, "tests" | "fuzz" | "loadtest"))
        && !name.ends_with("_tests.rs")
        && name != "tests.rs"
}

/// `libs/x/src/a/b.rs` -> (`libs/x`, `a/b.rs`); `None` for files outside a crate's `src/`.
fn crate_and_src(path: &str) -> Option<(&str, &str)> {
    let mut parts = path.splitn(3, '/');
    let (top, name, rest) = (parts.next()?, parts.next()?, parts.next()?);
    let in_src = rest.strip_prefix("src/")?;
    Some((&path[..top.len() + 1 + name.len()], in_src))
}

/// Scans `(repository path, text)` pairs for long functions and import circles.
fn scan(files: &[(String, String)]) -> Scan {
    let mut long_functions = Vec::new();
    let mut api_json = Vec::new();
    let (mut store_raw_ids, mut store_named_reads) = (Vec::new(), 0);
    let mut crates: BTreeMap<&str, Vec<imports::CrateFile>> = BTreeMap::new();
    for (path, text) in files {
        let code = lexer::without_test_items(&lexer::code_only(text));
        long_functions.extend(functions::functions(path, &code).into_iter().filter(|f| f.lines > MAX_LINES));
        if path.starts_with("services/api/src/") {
            api_json.extend(json_macros(&code).map(|line| format!("{path}:{line}")));
        }
        if path.starts_with("libs/store/src/") {
            store_raw_ids.extend(store_api::raw_uuid_params(path, &code));
            store_named_reads += store_api::named_column_reads(&code);
        }
        if let Some((krate, in_src)) = crate_and_src(path) {
            let file = imports::CrateFile { path: path.clone(), module: imports::module_of(in_src), code };
            crates.entry(krate).or_default().push(file);
        }
    }
    long_functions.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.path.cmp(&b.path)));
    let circles = crates.values().flat_map(|files| circles::circles(&imports::crate_edges(files))).collect();
    Scan { long_functions, circles, api_json, store_raw_ids, store_named_reads }
}

/// The lines (1-based) of `code` where a `json!` macro is called.
fn json_macros(code: &str) -> impl Iterator<Item = usize> + '_ {
    code.lines().enumerate().flat_map(|(i, line)| {
        line.match_indices("json!").filter(move |(at, _)| !line[..*at].ends_with(lexer::is_ident)).map(move |_| i + 1)
    })
}

/// The production files of the workspace with their text, as git lists them.
fn workspace_files() -> Vec<(String, String)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let out = Command::new("git").args(["ls-files", "*.rs"]).current_dir(root).output().expect("git ls-files runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8(out.stdout).expect("paths are UTF-8");
    let files: Vec<(String, String)> = listed
        .lines()
        .filter(|p| in_scope(p))
        // A file still in the index but deleted in the work tree (mid-move) is not code.
        .filter_map(|p| Some((p.to_owned(), std::fs::read_to_string(format!("{root}/{p}")).ok()?)))
        .collect();
    // A broken listing would pass every ceiling by finding nothing.
    assert!(files.len() > 200, "only {} production files found", files.len());
    files
}

/// Fails when `count` differs from `ceiling`: above it with the offenders, below it asking
/// for the ceiling to come down.
fn ratchet(what: &str, count: usize, ceiling: usize, offenders: &str) {
    eprintln!("{what}: {count} (ceiling {ceiling})\n{offenders}");
    assert!(count <= ceiling, "{what}: {count}, more than the ceiling of {ceiling}:\n{offenders}");
    assert!(count >= ceiling, "{what}: {count}, fewer than the ceiling: lower the ceiling to {count}");
}

#[test]
fn long_functions_only_get_fewer() {
    let scan = scan(&workspace_files());
    let list: String =
        scan.long_functions.iter().map(|f| format!("  {}:{} {} {}\n", f.path, f.line, f.name, f.lines)).collect();
    ratchet("functions over 80 lines", scan.long_functions.len(), LONG_FUNCTION_CEILING, &list);
}

#[test]
fn json_bodies_in_the_api_only_get_fewer() {
    let scan = scan(&workspace_files());
    let list: String = scan.api_json.iter().map(|at| format!("  {at}\n")).collect();
    ratchet("json! in the api role", scan.api_json.len(), API_JSON_CEILING, &list);
}

#[test]
fn import_circles_only_get_fewer() {
    let scan = scan(&workspace_files());
    let list: String = scan.circles.iter().map(ToString::to_string).collect();
    ratchet("import circles", scan.circles.len(), CIRCLE_CEILING, &list);
}

#[test]
fn the_store_takes_typed_ids_and_reads_rows_by_type() {
    let scan = scan(&workspace_files());
    let list: String = scan.store_raw_ids.iter().map(|p| format!("  {p}\n")).collect();
    ratchet("raw Uuid parameters of public store functions", scan.store_raw_ids.len(), STORE_RAW_ID_CEILING, &list);
    ratchet("try_get(\"col\") in the store", scan.store_named_reads, STORE_NAMED_READ_CEILING, "");
}

#[test]
fn the_store_scan_sees_raw_uuid_parameters_of_public_functions_only() {
    let code = "pub async fn a(self, tenant: TenantId, id: uuid::Uuid) -> Result<()> {}\n\
                pub fn b(x: Option<Uuid>, f: impl Fn(Uuid) -> u8, ids: &[Uuid], n: u8) {}\n\
                fn private(id: Uuid) {}\n\
                pub(crate) fn helper(key: Uuid) {}\n\
                pub async fn typed(id: ChannelId, pair: (AgentId, String)) {}\n\
                tenant_writes! { in Chat; pub async fn d(channel: Uuid) -> Result<()> = d_on; }\n";
    let code = lexer::code_only(code);
    let found = store_api::raw_uuid_params("libs/store/src/x.rs", &code);
    assert_eq!(
        found,
        [
            "libs/store/src/x.rs:1 a(id: uuid::Uuid)",
            "libs/store/src/x.rs:2 b(x: Option<Uuid>)",
            "libs/store/src/x.rs:2 b(f: impl Fn(Uuid) -> u8)",
            "libs/store/src/x.rs:2 b(ids: &[Uuid])",
            "libs/store/src/x.rs:6 d(channel: Uuid)",
        ]
    );
    assert_eq!(store_api::named_column_reads(&lexer::code_only("r.try_get(\"id\")?; r.try_get(0)?;")), 1);
}

/// A function of `lines` lines whose body holds braces the lexer must not count.
fn sample_function(name: &str, lines: usize) -> String {
    let tricky = [
        r##"    let s = "}"; let c = '{'; let r = r"}"; let h = r#"}"#; // }"##,
        r##"    /* { /* } */ */ let b = b'}'; let q = '\''; let l: &'static str = "\"{";"##,
        r##"    let w = r"\"; let v = "{"; let z = r#"say "}" now"#;"##,
        r##"    let m = "a { multi-line"##,
        r##"    string }"; let e = b"}"; let bs = '\\'; let u = '\u{7b}';"##,
    ];
    let filler = (0..lines - 2 - tricky.len()).map(|i| format!("    let x{i} = {i};\n"));
    let body: String = tricky.iter().map(|l| format!("{l}\n")).chain(filler).collect();
    format!("pub(crate) async fn {name}() {{\n{body}}}\n")
}

#[test]
fn scan_finds_a_circle_and_a_long_function() {
    let a = format!(
        "use crate::b::{{B, helper as h}};\npub struct A;\n{}{}\
         pub trait T {{ fn decl(&self) -> [u8; 4]; }}\n\
         #[cfg(test)]\nmod tests {{\n{}}}\n",
        sample_function("long", 81),
        sample_function("fits", 80),
        sample_function("in_test", 90),
    );
    let files = [
        ("libs/fake/src/lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n".to_owned()),
        ("libs/fake/src/a.rs", a),
        ("libs/fake/src/b.rs", "pub struct B;\npub fn helper() -> super::a::A { super::a::A }\n".to_owned()),
        ("libs/fake/src/c.rs", "fn f() { let _ = crate::a::A; let _ = crate::A; }\n".to_owned()),
    ];
    let files: Vec<(String, String)> = files.into_iter().map(|(p, t)| (p.to_owned(), t)).collect();
    let scan = scan(&files);
    let found: Vec<(&str, usize, usize)> =
        scan.long_functions.iter().map(|f| (f.name.as_str(), f.line, f.lines)).collect();
    assert_eq!(found, [("long", 3, 81)]);
    assert_eq!(scan.circles.len(), 1, "{:?}", scan.circles);
    let circle = &scan.circles[0];
    assert_eq!(circle.files, ["libs/fake/src/a.rs", "libs/fake/src/b.rs"]);
    let edges: Vec<(&str, &str, String)> =
        circle.edges.iter().map(|(a, b, names)| (a.as_str(), b.as_str(), names.join(","))).collect();
    assert_eq!(
        edges,
        [
            ("libs/fake/src/a.rs", "libs/fake/src/b.rs", "B,helper".into()),
            ("libs/fake/src/b.rs", "libs/fake/src/a.rs", "A".into())
        ]
    );
}

#[test]
fn scope_leaves_out_test_code() {
    for path in ["libs/llm/src/wire.rs", "services/api/src/admin/oidc.rs", "libs/store/build.rs"] {
        assert!(in_scope(path), "{path}");
    }
    for path in [
        "libs/testkit/src/slack.rs",
        "libs/store/tests/contracts/main.rs",
        "libs/agent/src/loop_tests.rs",
        "libs/x/src/a/tests.rs",
        "tests/e2e/chat.rs",
        "fuzz/fuzz_targets/x.rs",
        "loadtest/src/main.rs",
    ] {
        assert!(!in_scope(path), "{path}");
    }
}

#[test]
fn the_json_count_sees_calls_in_the_api_and_not_tests_comments_strings_or_other_crates() {
    let api = "fn a() -> Value { json!({}) }\n\
               // json!({}) in a comment\n\
               fn b() -> Value { serde_json::json!({ \"s\": \"json!\" }) }\n\
               fn c() { my_json!(); }\n\
               #[cfg(test)]\nmod tests {\n fn t() { json!(1); }\n}\n";
    let files = [
        ("services/api/src/x.rs", api.to_owned()),
        ("services/worker/src/x.rs", "fn w() -> Value { json!({}) }\n".to_owned()),
    ];
    let files: Vec<(String, String)> = files.into_iter().map(|(p, t)| (p.to_owned(), t)).collect();
    assert_eq!(scan(&files).api_json, ["services/api/src/x.rs:1", "services/api/src/x.rs:3"]);
}
