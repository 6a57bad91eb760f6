//! How Telegram reads a message's HTML markup (what the emulator accepts and shows).

/// The text Telegram shows for an HTML message, or `None` if Telegram would refuse the markup
/// (an unknown or unbalanced tag, a bare `<` or `&`).
pub fn visible_html(html: &str) -> Option<String> {
    const TAGS: [&str; 14] =
        ["b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "a", "span", "blockquote"];
    let mut open: Vec<String> = Vec::new();
    let mut out = String::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        match c {
            '<' => {
                let end = rest.find('>')?;
                let tag = &rest[1..end];
                let (closing, body) = tag.strip_prefix('/').map_or((false, tag), |b| (true, b));
                let name = body.split_whitespace().next()?.to_ascii_lowercase();
                if !TAGS.contains(&name.as_str()) {
                    return None;
                }
                if closing {
                    if open.pop()? != name {
                        return None;
                    }
                } else {
                    open.push(name);
                }
                rest = &rest[end + 1..];
            }
            '&' => {
                let end = rest.find(';')?;
                out.push(match &rest[..=end] {
                    "&lt;" => '<',
                    "&gt;" => '>',
                    "&amp;" => '&',
                    "&quot;" => '"',
                    _ => return None,
                });
                rest = &rest[end + 1..];
            }
            c => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    open.is_empty().then_some(out)
}
