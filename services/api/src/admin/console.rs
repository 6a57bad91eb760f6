//! `/console`: the web console, a few ES modules and a stylesheet compiled into the binary (no
//! build step, nothing fetched at run time). Every page is the same shell; the script routes.
//! The content security policy allows scripts, styles and requests of this origin only, and
//! no inline script at all.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};

/// Every asset: its path under `/console/assets/`, its type, its text.
const ASSETS: &[(&str, &str, &str)] = &[
    ("app.js", "text/javascript; charset=utf-8", include_str!("../../console/app.js")),
    ("dom.js", "text/javascript; charset=utf-8", include_str!("../../console/dom.js")),
    ("i18n.js", "text/javascript; charset=utf-8", include_str!("../../console/i18n.js")),
    ("toolsets.js", "text/javascript; charset=utf-8", include_str!("../../console/toolsets.js")),
    ("pages/auth.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/auth.js")),
    ("pages/home.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/home.js")),
    ("pages/tenant.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/tenant.js")),
    ("pages/people.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/people.js")),
    ("pages/sso.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/sso.js")),
    ("pages/credentials.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/credentials.js")),
    ("pages/audit.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/audit.js")),
    ("pages/sessions.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/sessions.js")),
    ("pages/agents.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/agents.js")),
    ("pages/mcp.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/mcp.js")),
    ("pages/secrets.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/secrets.js")),
    ("pages/live.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/live.js")),
    ("pages/usage.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/usage.js")),
    ("pages/channels.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/channels.js")),
    ("pages/automation.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/automation.js")),
    ("pages/skills.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/skills.js")),
    ("pages/providers.js", "text/javascript; charset=utf-8", include_str!("../../console/pages/providers.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../../console/style.css")),
];

const SHELL: &str = include_str!("../../console/index.html");

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
                   base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The console's routes.
pub(crate) fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/console", get(shell))
        .route("/console/assets/{*file}", get(asset))
        .route("/console/{*page}", get(shell))
}

/// An ETag for each asset and the shell, from their contents (computed once).
fn etags() -> &'static Vec<String> {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|(_, _, text)| *text)
            .chain(std::iter::once(SHELL))
            .map(|text| {
                let digest = Sha256::digest(text.as_bytes());
                format!("\"{}\"", digest.iter().take(12).map(|b| format!("{b:02x}")).collect::<String>())
            })
            .collect()
    })
}

fn answer(headers: &HeaderMap, kind: &'static str, text: &'static str, etag: &str) -> Response {
    let mut response = if headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()) == Some(etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, kind)], text).into_response()
    };
    let h = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(etag) {
        h.insert(header::ETAG, tag);
    }
    // Revalidated on every load (cheap: a 304), so a new release is picked up at once.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

async fn shell(headers: HeaderMap) -> Response {
    let tag = etags().last().cloned().unwrap_or_default();
    answer(&headers, "text/html; charset=utf-8", SHELL, &tag)
}

async fn asset(Path(file): Path<String>, headers: HeaderMap) -> Response {
    match ASSETS.iter().position(|(name, _, _)| *name == file) {
        Some(i) => {
            let (_, kind, text) = ASSETS[i];
            let tag = etags().get(i).cloned().unwrap_or_default();
            answer(&headers, kind, text, &tag)
        }
        None => (StatusCode::NOT_FOUND, "no such file").into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_console_source_parses_markup_or_evaluates_text() {
        // User text (transcripts, memory, tool output) must never become markup or code: the
        // console builds DOM with `dom.js`'s `h` only.
        for (name, _, text) in ASSETS {
            for banned in
                ["innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "srcdoc"]
            {
                assert!(!text.contains(banned), "{name} uses {banned}");
            }
        }
    }

    /// The lines of `i18n.js`'s message table (`const messages = { key: ['...', '...'], ... };`).
    fn message_lines() -> Vec<&'static str> {
        let text = include_str!("../../console/i18n.js");
        let start = text.find("const messages = {\n").unwrap_or_default();
        let block = &text[start..];
        let block = &block[..block.find("\n};").unwrap_or(block.len())];
        block.lines().skip(1).collect()
    }

    #[test]
    fn english_and_chinese_name_the_same_things_once_each() {
        // One message a line: its key, then its English and its Chinese text.
        let entry =
            regex::Regex::new(r#"^  ([A-Za-z_]+): \[('(?:[^'\\]|\\.)*'|"[^"]*"), ('(?:[^'\\]|\\.)*'|"[^"]*")\],$"#)
                .unwrap();
        let lines = message_lines();
        assert!(lines.len() > 100, "the messages were read: {}", lines.len());
        let mut seen = std::collections::HashSet::new();
        for line in lines {
            let key = entry.captures(line).map(|c| c[1].to_owned());
            let key = key.unwrap_or_else(|| panic!("not one key with its English and Chinese text: {line}"));
            assert!(seen.insert(key.clone()), "{key} is named twice (the later one wins)");
        }
    }

    /// The module `target` names, imported from `from` (both relative to the console's root).
    fn resolve(from: &str, target: &str) -> String {
        let base = std::path::Path::new(from).parent().unwrap_or(std::path::Path::new(""));
        let mut parts: Vec<&str> = Vec::new();
        let joined = base.join(target);
        for part in joined.iter().filter_map(|p| p.to_str()) {
            match part {
                "." => {}
                ".." => {
                    parts.pop();
                }
                p => parts.push(p),
            }
        }
        parts.join("/")
    }

    /// `text`'s imports: static (`from '...'`) and dynamic (`import('...')`).
    fn imports(text: &str) -> (Vec<&str>, Vec<&str>) {
        let of = |marker: &str| -> Vec<&str> {
            text.split(marker).skip(1).map(|rest| rest.split('\'').next().unwrap_or_default()).collect()
        };
        (of("from '"), of("import('"))
    }

    fn asset(name: &str) -> Option<&'static str> {
        ASSETS.iter().find(|(n, _, _)| *n == name).map(|(_, _, t)| *t)
    }

    /// Bytes of script a page that starts from `entries` loads before it draws: the entries and
    /// everything they import statically.
    fn first_load(entries: &[&str]) -> usize {
        let mut todo: Vec<String> = entries.iter().map(|e| (*e).to_owned()).collect();
        let mut seen = std::collections::HashSet::new();
        let mut bytes = 0;
        while let Some(name) = todo.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let text = asset(&name).unwrap_or_default();
            bytes += text.len();
            todo.extend(imports(text).0.into_iter().map(|t| resolve(&name, t)));
        }
        bytes
    }

    #[test]
    fn every_module_the_console_imports_is_served_and_each_first_page_stays_small() {
        let names: Vec<&str> = ASSETS.iter().map(|(n, _, _)| *n).collect();
        for (name, _, text) in ASSETS {
            let (fixed, lazy) = imports(text);
            for target in fixed.into_iter().chain(lazy) {
                let resolved = resolve(name, target);
                assert!(
                    names.contains(&resolved.as_str()),
                    "{name} imports {target} ({resolved}), which is not served"
                );
            }
        }
        // The shell loads one page module at a time (dynamic imports): each first page is the
        // shell and that module, with what they import statically.
        for page in ["pages/auth.js", "pages/home.js", "pages/tenant.js"] {
            let bytes = first_load(&["app.js", page]);
            assert!(bytes < 100_000, "a first page from {page} loads {bytes} bytes of script; the budget is 100 KB");
        }
        let whole: usize = ASSETS.iter().filter(|(n, _, _)| n.ends_with(".js")).map(|(_, _, t)| t.len()).sum();
        assert!(first_load(&["app.js", "pages/tenant.js"]) < whole, "pages load lazily, not all at once");
    }
}
