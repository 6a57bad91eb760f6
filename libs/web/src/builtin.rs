//! Hermes's own extractor, so `web_extract` works with no third-party service: fetch the page
//! through the public-address client (byte cap, total timeout, each redirect re-checked),
//! then keep the main content as Markdown (readability, as Firefox's reader view does), a
//! PDF as its text, and any other text as it is.

use dom_smoothie::{Config, Readability, TextMode};
use hermes_net_policy::outbound::{ReadError, read_capped};

use crate::services::{Page, describe};

/// What kind of document a response is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Pdf,
    Text,
    Other,
}

fn kind_of(content_type: &str, body: &[u8]) -> Kind {
    let mime = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    let sniffed = || {
        let start = String::from_utf8_lossy(&body[..body.len().min(512)]).trim_start().to_ascii_lowercase();
        if body.starts_with(b"%PDF-") {
            Kind::Pdf
        } else if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Kind::Html
        } else {
            Kind::Other
        }
    };
    match mime.as_str() {
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "application/pdf" => Kind::Pdf,
        "" | "application/octet-stream" => sniffed(),
        m if m.starts_with("text/") || m.ends_with("json") || m.ends_with("xml") => Kind::Text,
        _ => Kind::Other,
    }
}

/// Fetches `url` with `client` (the model's client) and reads it, at most `max_bytes`.
pub(crate) async fn fetch(client: &reqwest::Client, url: &str, max_bytes: usize) -> Page {
    let response = match client
        .get(url)
        .header("Accept", "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5")
        .send()
        .await
    {
        Ok(r) => r,
        Err(e) => return Page::failed(url, format!("could not fetch the page: {}", describe(&e))),
    };
    let status = response.status();
    if !status.is_success() {
        return Page::failed(url, format!("the page answered HTTP {}", status.as_u16()));
    }
    let final_url = response.url().to_string();
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body = match read_capped(response, max_bytes).await {
        Ok(b) => b,
        Err(ReadError::TooLarge(max)) => {
            return Page::failed(url, format!("the page is larger than {} MB; it was not read", max / (1024 * 1024)));
        }
        Err(e) => return Page::failed(url, e.to_string()),
    };
    let kind = kind_of(&content_type, &body);
    let page_url = final_url.clone();
    // Parsing is CPU work on a possibly hostile document: off the async threads, and a panic
    // in a parser is one failed page, not a failed turn.
    let read = tokio::task::spawn_blocking(move || read(kind, &body, &page_url, &content_type)).await;
    match read {
        Ok(Ok((title, content))) => Page { url: url.to_owned(), title, content, error: None },
        Ok(Err(e)) => Page::failed(url, e),
        Err(_) => Page::failed(url, "the document could not be parsed"),
    }
}

/// The title and text of a fetched document.
fn read(kind: Kind, body: &[u8], url: &str, content_type: &str) -> Result<(String, String), String> {
    match kind {
        Kind::Html => html_to_markdown(&String::from_utf8_lossy(body), url),
        Kind::Pdf => pdf_extract::extract_text_from_mem(body)
            .map(|text| (String::new(), tidy(&text)))
            .map_err(|e| format!("the PDF could not be read: {e}")),
        Kind::Text => Ok((String::new(), String::from_utf8_lossy(body).into_owned())),
        Kind::Other => Err(format!(
            "not a text page ({}); images go to vision tools, other files to the terminal",
            if content_type.is_empty() { "unknown type" } else { content_type }
        )),
    }
}

/// The page's main content as Markdown, and its title.
pub(crate) fn html_to_markdown(html: &str, url: &str) -> Result<(String, String), String> {
    let config = Config { text_mode: TextMode::Markdown, ..Config::default() };
    let mut reader = Readability::new(html, Some(url), Some(config)).map_err(|e| format!("unreadable HTML: {e}"))?;
    let article = reader
        .parse()
        .map_err(|_| "no main content found (a page built by JavaScript needs the browser tools)".to_owned())?;
    Ok((article.title.to_string(), tidy(&article.text_content)))
}

/// Collapses runs of blank lines and trailing spaces that extraction leaves.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_told_apart_by_type_then_by_their_first_bytes() {
        assert_eq!(kind_of("text/html; charset=utf-8", b""), Kind::Html);
        assert_eq!(kind_of("application/pdf", b""), Kind::Pdf);
        assert_eq!(kind_of("", b"%PDF-1.7 ..."), Kind::Pdf);
        assert_eq!(kind_of("application/octet-stream", b"  <!DOCTYPE html><html>"), Kind::Html);
        assert_eq!(kind_of("text/markdown", b"# hi"), Kind::Text);
        assert_eq!(kind_of("application/json", b"{}"), Kind::Text);
        assert_eq!(kind_of("image/png", b"\x89PNG"), Kind::Other);
    }

    #[test]
    fn the_main_content_becomes_markdown_without_the_page_chrome() {
        let html = r#"<!doctype html><html><head><title>Agents in 2026 - The Daily</title></head><body>
            <nav><a href="/">Home</a> <a href="/about">About</a> <a href="/login">Log in</a></nav>
            <article><h1>Agents in 2026</h1>
            <p>Autonomous agents now run for <strong>whole teams</strong>, not one person at a laptop. This paragraph
            is long enough to count as content for the readability scoring, which wants real sentences with commas,
            like this one, and more of them.</p>
            <h2>What changed</h2>
            <p>Hosting moved to the cloud, with sandboxes per tenant and quotas, and the agents learned to write their
            own skills. Operators care about isolation, about cost, and about an audit trail they can trust.</p>
            <ul><li>Per-tenant sandboxes</li><li>Daily quotas</li></ul>
            <p>Read more at <a href="/more">the follow-up</a>.</p></article>
            <footer>Copyright The Daily. Cookie settings. Subscribe.</footer></body></html>"#;
        let (title, md) = html_to_markdown(html, "https://daily.example/agents").unwrap();
        assert!(title.contains("Agents in 2026"), "{title}");
        assert!(md.contains("**whole teams**"), "{md}");
        assert!(md.contains("## What changed"), "{md}");
        assert!(md.contains("Per-tenant sandboxes"), "{md}");
        assert!(md.contains("https://daily.example/more"), "relative links become absolute: {md}");
        assert!(!md.contains("Cookie settings") && !md.contains("Log in"), "chrome is dropped: {md}");
    }

    #[test]
    fn blank_runs_collapse() {
        assert_eq!(tidy("a  \n\n\n\nb\n"), "a\n\nb");
    }
}
