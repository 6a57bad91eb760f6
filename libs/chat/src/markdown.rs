//! The Markdown agents write, as Telegram's HTML: fenced and inline code, bold, italic,
//! strike-through, links and headings become tags; everything else is escaped, so no text
//! can break the markup. Every tag is emitted with its closing tag. Telegram counts a
//! message's length after markup, so a part split to the limit stays within it.

/// Escapes text for Telegram's HTML.
fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

/// `md` as Telegram HTML.
pub fn telegram_html(md: &str) -> String {
    let mut out = String::with_capacity(md.len() + 32);
    let mut code: Option<(String, String)> = None; // (language, body)
    for (i, line) in md.split('\n').enumerate() {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            match code.take() {
                Some((lang, body)) => close_block(&lang, &body, &mut out),
                None => {
                    if i > 0 && !out.is_empty() && !out.ends_with('\n') {
                        out.push('\n');
                    }
                    code = Some((lang.trim().to_owned(), String::new()));
                }
            }
            continue;
        }
        if let Some((_, body)) = code.as_mut() {
            if !body.is_empty() {
                body.push('\n');
            }
            body.push_str(line);
            continue;
        }
        if i > 0 && !out.ends_with("</pre>\n") {
            out.push('\n');
        }
        let heading = trimmed.trim_start_matches('#');
        if trimmed.starts_with('#') && heading.starts_with(' ') && trimmed.len() - heading.len() <= 6 {
            out.push_str("<b>");
            inline(heading.trim(), &mut out);
            out.push_str("</b>");
        } else if let Some(item) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str("• ");
            inline(item, &mut out);
        } else {
            inline(line, &mut out);
        }
    }
    if let Some((lang, body)) = code {
        close_block(&lang, &body, &mut out);
    }
    out.trim_end_matches('\n').to_owned()
}

fn close_block(lang: &str, body: &str, out: &mut String) {
    let safe_lang: String =
        lang.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#')).collect();
    if safe_lang.is_empty() {
        out.push_str("<pre>");
    } else {
        out.push_str(&format!("<pre><code class=\"language-{safe_lang}\">"));
    }
    escape(body, out);
    out.push_str(if safe_lang.is_empty() { "</pre>\n" } else { "</code></pre>\n" });
}

/// Inline markup of one line.
fn inline(text: &str, out: &mut String) {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let rest = &chars[i..];
        // `code`
        if c == '`'
            && let Some(end) = find(&chars, i + 1, &['`'])
        {
            out.push_str("<code>");
            escape(&chars[i + 1..end].iter().collect::<String>(), out);
            out.push_str("</code>");
            i = end + 1;
            continue;
        }
        // **bold**, __bold__, ~~strike~~
        let mut matched = false;
        for (marker, tag) in [(['*', '*'], "b"), (['_', '_'], "b"), (['~', '~'], "s")] {
            if rest.starts_with(&marker)
                && let Some(end) = find(&chars, i + 2, &marker).filter(|&e| e > i + 2)
            {
                out.push_str(&format!("<{tag}>"));
                inline(&chars[i + 2..end].iter().collect::<String>(), out);
                out.push_str(&format!("</{tag}>"));
                i = end + 2;
                matched = true;
                break;
            }
        }
        if matched {
            continue;
        }
        // *italic* and _italic_ (not inside a word, so snake_case stays as it is)
        if (c == '*' || c == '_') && word_start(&chars, i) {
            let mut j = i + 1;
            let mut end = None;
            while let Some(e) = find(&chars, j, &[c]) {
                if e > i + 1 && word_end(&chars, e) && !chars[e - 1].is_whitespace() {
                    end = Some(e);
                    break;
                }
                j = e + 1;
            }
            if let Some(end) = end.filter(|_| !chars[i + 1].is_whitespace()) {
                out.push_str("<i>");
                inline(&chars[i + 1..end].iter().collect::<String>(), out);
                out.push_str("</i>");
                i = end + 1;
                continue;
            }
        }
        // [text](http...)
        if c == '['
            && let Some(close) = find(&chars, i + 1, &[']'])
            && chars.get(close + 1) == Some(&'(')
            && let Some(paren) = find(&chars, close + 2, &[')'])
        {
            let url: String = chars[close + 2..paren].iter().collect();
            if url.starts_with("https://") || url.starts_with("http://") {
                out.push_str("<a href=\"");
                escape(&url, out);
                out.push_str("\">");
                inline(&chars[i + 1..close].iter().collect::<String>(), out);
                out.push_str("</a>");
                i = paren + 1;
                continue;
            }
        }
        escape(&c.to_string(), out);
        i += 1;
    }
}

/// The index where `marker` next starts at or after `from`.
fn find(chars: &[char], from: usize, marker: &[char]) -> Option<usize> {
    (from..chars.len()).find(|&k| chars[k..].starts_with(marker))
}

fn word_start(chars: &[char], i: usize) -> bool {
    i == 0 || !chars[i - 1].is_alphanumeric()
}

fn word_end(chars: &[char], i: usize) -> bool {
    chars.get(i + 1).is_none_or(|c| !c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_balanced_telegram_html_and_text_is_escaped() {
        assert_eq!(
            telegram_html("**bold** and *it* and `a<b>`"),
            "<b>bold</b> and <i>it</i> and <code>a&lt;b&gt;</code>"
        );
        assert_eq!(telegram_html("5 < 6 & 7 > 3"), "5 &lt; 6 &amp; 7 &gt; 3");
        assert_eq!(telegram_html("snake_case_name stays"), "snake_case_name stays");
        assert_eq!(telegram_html("# Title\n- one\n- two"), "<b>Title</b>\n• one\n• two");
        assert_eq!(
            telegram_html("see [docs](https://x.dev/a?b=1&c=2) or [bad](javascript:x)"),
            "see <a href=\"https://x.dev/a?b=1&amp;c=2\">docs</a> or [bad](javascript:x)"
        );
        assert_eq!(telegram_html("~~old~~ new"), "<s>old</s> new");
    }

    #[test]
    fn code_blocks_keep_their_text_and_an_unclosed_one_is_closed() {
        let html = telegram_html("Run:\n```bash\necho \"<hi>\" && ls\n```\nDone.");
        assert_eq!(
            html,
            "Run:\n<pre><code class=\"language-bash\">echo &quot;&lt;hi&gt;&quot; &amp;&amp; ls</code></pre>\nDone."
        );
        assert_eq!(telegram_html("```\nno end"), "<pre>no end</pre>");
    }

    #[test]
    fn stray_markers_stay_as_text() {
        assert_eq!(telegram_html("2 * 3 = 6"), "2 * 3 = 6");
        assert_eq!(telegram_html("**not closed"), "**not closed");
        assert_eq!(telegram_html("a ` b"), "a ` b");
    }

    #[test]
    fn any_mix_of_markers_gives_markup_telegram_accepts() {
        // Every string of up to four pieces from these, each one checked with the emulator's
        // reading of Telegram's HTML rules.
        let pieces = ["**", "*", "_", "__", "`", "```", "~~", "[a](https://b)", "<", "&", "x", " ", "\n", "#", "- "];
        let mut checked = 0;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    for d in pieces {
                        let md = format!("{a}{b}{c}{d}");
                        let html = telegram_html(&md);
                        assert!(hermes_testkit::telegram::visible_html(&html).is_some(), "{md:?} gave {html:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 15 * 15 * 15 * 15);
    }
}
