//! Long pages, deterministically (upstream's rule, no model summarising them): a page within
//! the budget comes whole; a longer one comes as its head (75 % of the budget) and tail (25 %),
//! each cut on a line boundary, with a `[TRUNCATED]` footer saying where the full text was
//! saved and the exact `read_file` calls that page through the middle.

/// The budget's bounds: a `char_limit` outside them is clamped.
pub const MIN_BUDGET: usize = 2_000;
pub const MAX_BUDGET: usize = 500_000;

/// The most of a page that is kept at all (upstream's 2 MB of text).
pub const MAX_STORED_CHARS: usize = 2_000_000;

/// Lines per `read_file` page the footer suggests (the tool's default is 500).
const READ_PAGE_LINES: usize = 500;

/// `requested` (a call's `char_limit`), else `default`, clamped to the bounds.
pub fn budget(requested: Option<u64>, default: usize) -> usize {
    let wanted = requested.map_or(default, |n| usize::try_from(n).unwrap_or(MAX_BUDGET));
    wanted.clamp(MIN_BUDGET, MAX_BUDGET)
}

/// A page as the model gets it.
#[derive(Debug, PartialEq, Eq)]
pub enum Window<'a> {
    Whole(&'a str),
    /// The head and tail shown; the omitted middle is lines `first_omitted_line..` up to
    /// `tail_line` (1-based, as `read_file` counts).
    Cut {
        head: &'a str,
        tail: &'a str,
        first_omitted_line: usize,
        tail_line: usize,
        total_chars: usize,
    },
}

/// The byte index of the `n`th character (or the end).
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `text` within `budget` characters.
pub fn window(text: &str, budget: usize) -> Window<'_> {
    let total_chars = text.chars().count();
    if total_chars <= budget {
        return Window::Whole(text);
    }
    let head_chars = budget * 3 / 4;
    let tail_chars = budget - head_chars;
    // The head ends after its last whole line; a first line longer than the head is cut.
    let head_end = byte_at(text, head_chars);
    let head = match text[..head_end].rfind('\n') {
        Some(nl) if nl > 0 => &text[..=nl],
        _ => &text[..head_end],
    };
    // The tail starts at a line's beginning within its share (one huge line is cut anyway).
    let raw = byte_at(text, total_chars - tail_chars);
    let tail_start = if raw == 0 || text[..raw].ends_with('\n') {
        raw
    } else {
        match text[raw..].find('\n') {
            Some(nl) if raw + nl + 1 < text.len() => raw + nl + 1,
            _ => raw,
        }
    };
    let tail_start = tail_start.max(head.len());
    let tail = &text[tail_start..];
    let first_omitted_line = head.matches('\n').count() + 1;
    let tail_line = text[..tail_start].matches('\n').count() + 1;
    Window::Cut { head, tail, first_omitted_line, tail_line, total_chars }
}

/// The footer of a cut page: where the full text is (`saved`: its path, or why it is not)
/// and how to read what was left out.
pub fn footer(window: &Window<'_>, saved: Result<&str, &str>) -> String {
    let Window::Cut { head, tail, first_omitted_line, tail_line, total_chars } = window else {
        return String::new();
    };
    let shown = head.chars().count() + tail.chars().count();
    let mut out = format!(
        "\n\n[TRUNCATED: {shown} of {total_chars} characters shown; lines {first_omitted_line}-{} are left out.",
        tail_line.saturating_sub(1).max(*first_omitted_line)
    );
    match saved {
        Ok(path) => {
            out.push_str(&format!(" The full text is saved at {path}. Read the omitted middle with:"));
            let mut line = *first_omitted_line;
            let mut calls = 0;
            while line < *tail_line && calls < 8 {
                out.push_str(&format!("\n  read_file(path=\"{path}\", offset={line}, limit={READ_PAGE_LINES})"));
                line += READ_PAGE_LINES;
                calls += 1;
            }
            if line < *tail_line {
                out.push_str(&format!("\n  ... and on with offset={line} in steps of {READ_PAGE_LINES}"));
            }
        }
        Err(why) => out.push_str(&format!(
            " The full text could not be kept ({why}); call again with a larger char_limit to see more."
        )),
    }
    out.push(']');
    out
}

/// The page's text as the model gets it: whole, or cut with its footer.
pub fn render(window: &Window<'_>, saved: Result<&str, &str>) -> String {
    match window {
        Window::Whole(text) => (*text).to_owned(),
        Window::Cut { head, tail, .. } => {
            let mut out = String::with_capacity(head.len() + tail.len() + 600);
            out.push_str(head);
            if !head.ends_with('\n') {
                out.push('\n');
            }
            out.push_str("\n[... middle omitted ...]\n\n");
            out.push_str(tail);
            out.push_str(&footer(window, saved));
            out
        }
    }
}

/// At most [`MAX_STORED_CHARS`] of `text`, and whether it was cut.
pub fn stored(text: &str) -> (&str, bool) {
    let end = byte_at(text, MAX_STORED_CHARS);
    (&text[..end], end < text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(lines: usize, width: usize) -> String {
        (1..=lines).map(|i| format!("{i:0width$}\n")).collect()
    }

    #[test]
    fn the_budget_is_clamped_to_upstreams_bounds() {
        assert_eq!(budget(None, 15_000), 15_000);
        assert_eq!(budget(Some(10), 15_000), 2_000);
        assert_eq!(budget(Some(40_000), 15_000), 40_000);
        assert_eq!(budget(Some(9_000_000), 15_000), 500_000);
        assert_eq!(budget(None, 1), 2_000, "a configured default is clamped too");
    }

    #[test]
    fn a_page_within_the_budget_comes_whole() {
        let text = numbered(100, 9);
        assert_eq!(window(&text, 2_000), Window::Whole(&text));
        assert_eq!(render(&window(&text, 2_000), Ok("/x")), text);
    }

    #[test]
    fn a_long_page_keeps_three_quarters_head_and_a_quarter_tail_on_line_boundaries() {
        // 1,000 lines of 10 characters: 10,000 characters against a 4,000 budget.
        let text = numbered(1_000, 9);
        let Window::Cut { head, tail, first_omitted_line, tail_line, total_chars } = window(&text, 4_000) else {
            panic!("cut expected");
        };
        assert_eq!(total_chars, 10_000);
        assert_eq!(head.len(), 3_000, "75 %: 300 whole lines");
        assert!(head.ends_with("000000300\n"));
        assert_eq!(tail.len(), 1_000, "25 %: the last 100 lines");
        assert!(tail.starts_with("000000901\n") && tail.ends_with("000001000\n"));
        assert_eq!((first_omitted_line, tail_line), (301, 901));
        let shown = render(&window(&text, 4_000), Ok("/tmp/hermes-results/call_1-page1.md"));
        assert!(shown.contains("[TRUNCATED: 4000 of 10000 characters shown; lines 301-900 are left out."));
        assert!(shown.contains("read_file(path=\"/tmp/hermes-results/call_1-page1.md\", offset=301, limit=500)"));
        assert!(shown.contains("offset=801, limit=500"));
        assert!(!shown.contains("offset=1301"));
    }

    #[test]
    fn lines_that_do_not_fall_on_the_cut_are_not_split_and_one_huge_line_is_cut_anyway() {
        let text = numbered(1_000, 9).replace("000000500\n", &format!("{}\n", "x".repeat(5_000)));
        let Window::Cut { head, tail, .. } = window(&text, 4_000) else { panic!("cut expected") };
        assert!(head.ends_with('\n') && tail.ends_with('\n'));
        let one_line = "y".repeat(10_000);
        let Window::Cut { head, tail, .. } = window(&one_line, 4_000) else { panic!("cut expected") };
        assert_eq!((head.len(), tail.len()), (3_000, 1_000));
    }

    #[test]
    fn a_page_that_could_not_be_saved_says_so_and_how_to_see_more() {
        let text = numbered(1_000, 9);
        let shown = render(&window(&text, 4_000), Err("no sandbox"));
        assert!(shown.contains("could not be kept (no sandbox); call again with a larger char_limit"), "{shown}");
        assert!(!shown.contains("read_file("));
    }

    #[test]
    fn at_most_two_million_characters_are_kept() {
        let big = "é".repeat(MAX_STORED_CHARS + 10);
        let (kept, cut) = stored(&big);
        assert_eq!((kept.chars().count(), cut), (MAX_STORED_CHARS, true));
        assert_eq!(stored("short"), ("short", false));
    }
}
