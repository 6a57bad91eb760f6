//! Splitting a long reply into messages a platform accepts: each part within the limit
//! (counted in UTF-16 units, the strictest count any platform uses), cut at a newline or a
//! space where one is near, code fences closed at a cut and reopened in the next part, and
//! `(i/n)` added when there is more than one part.

/// Room kept in each part for the `(i/n)` marker and a closing fence.
const RESERVE: usize = 16;

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// `text` in parts of at most `limit` UTF-16 units.
pub fn split(text: &str, limit: usize) -> Vec<String> {
    if utf16_len(text) <= limit {
        return vec![text.to_owned()];
    }
    let budget = limit.saturating_sub(RESERVE).max(16);
    let mut parts: Vec<String> = Vec::new();
    let mut rest = text;
    // The fence (with its language) that the previous part left open.
    let mut open_fence: Option<String> = None;
    while !rest.is_empty() {
        let prefix = open_fence.as_ref().map(|f| format!("{f}\n")).unwrap_or_default();
        let room = budget.saturating_sub(utf16_len(&prefix)).max(8);
        let cut = cut_point(rest, room);
        let (head, tail) = rest.split_at(cut);
        let mut part = format!("{prefix}{}", head.trim_end_matches('\n'));
        open_fence = fence_left_open(&part);
        if open_fence.is_some() && !tail.trim().is_empty() {
            part.push_str("\n```");
        }
        parts.push(part);
        rest = tail.trim_start_matches('\n');
    }
    let n = parts.len();
    if n > 1 {
        for (i, part) in parts.iter_mut().enumerate() {
            part.push_str(&format!("\n({}/{n})", i + 1));
        }
    }
    parts
}

/// The byte index to cut `text` at so the head has at most `room` UTF-16 units: the last
/// newline in the second half of the window, else the last space, else a hard cut.
fn cut_point(text: &str, room: usize) -> usize {
    let mut units = 0;
    let mut hard = text.len();
    for (i, c) in text.char_indices() {
        units += c.len_utf16();
        if units > room {
            hard = i;
            break;
        }
    }
    if hard == text.len() {
        return hard;
    }
    let window = &text[..hard];
    let half = hard / 2;
    if let Some(nl) = window.rfind('\n').filter(|&p| p >= half) {
        return nl + 1;
    }
    if let Some(sp) = window.rfind(' ').filter(|&p| p >= half) {
        return sp + 1;
    }
    // A hard cut never splits a character; an empty head would loop forever.
    if hard == 0 { text.chars().next().map_or(text.len(), char::len_utf8) } else { hard }
}

/// The opening fence line (e.g. "```rust") if `part` has an odd number of fences.
fn fence_left_open(part: &str) -> Option<String> {
    let mut open: Option<String> = None;
    for line in part.lines() {
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            open = match open {
                Some(_) => None,
                None => Some(format!("```{}", lang.trim())),
            };
        }
    }
    open
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part_without_a_marker() {
        assert_eq!(split("hello", 4096), vec!["hello".to_owned()]);
    }

    #[test]
    fn ten_thousand_characters_split_at_newlines_within_the_limit() {
        let line = "word ".repeat(19) + "end\n"; // 99 characters
        let text = line.repeat(101); // 9,999 characters
        let parts = split(&text, 4096);
        assert_eq!(parts.len(), 3);
        for (i, p) in parts.iter().enumerate() {
            assert!(utf16_len(p) <= 4096, "part {i} is {}", utf16_len(p));
            assert!(p.ends_with(&format!("({}/3)", i + 1)));
        }
        let joined: String = parts.iter().map(|p| p.rsplit_once('\n').unwrap().0.to_owned() + "\n").collect();
        assert_eq!(joined.matches("end").count(), 101, "nothing lost");
        assert!(parts[0].trim_end_matches(|c: char| c != '\n').ends_with("end\n"), "cut at a line end");
    }

    #[test]
    fn astral_characters_count_twice_and_are_never_cut_in_half() {
        let text = "😀".repeat(3000); // 6,000 UTF-16 units
        let parts = split(&text, 4096);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| utf16_len(p) <= 4096));
        assert_eq!(parts.iter().map(|p| p.matches('😀').count()).sum::<usize>(), 3000);
    }

    #[test]
    fn a_code_block_cut_in_two_is_closed_and_reopened() {
        let code = format!("Here:\n```python\n{}```\nDone.", "print('x')\n".repeat(600));
        let parts = split(&code, 4096);
        assert!(parts.len() >= 2);
        for p in &parts {
            assert_eq!(p.matches("```").count() % 2, 0, "balanced fences in {p:.80}");
        }
        assert!(parts[1].starts_with("```python\n"));
    }
}
