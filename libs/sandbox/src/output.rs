//! Shortening long command output for the model: keep the start and the (usually more
//! telling) end, as upstream Hermes does (40 % head, 60 % tail).

/// Returns `text` if it has at most `max_chars` characters; otherwise its first 40 % and last
/// 60 % around a marker that says how much was left out.
pub fn cap_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_owned();
    }
    let head = max_chars * 2 / 5;
    let tail = max_chars - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text.char_indices().nth(total - tail).map_or(text.len(), |(i, _)| i);
    format!("{}\n\n[... {} characters omitted ...]\n\n{}", &text[..head_end], total - head - tail, &text[tail_start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_short_text_and_cuts_the_middle_of_long_text() {
        assert_eq!(cap_middle("short", 10), "short");
        let long: String = (0..1000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = cap_middle(&long, 100);
        assert!(out.starts_with(&long[..40]));
        assert!(out.ends_with(&long[940..]));
        assert!(out.contains("900 characters omitted"));
        // multi-byte characters are never split
        let wide = "é".repeat(500);
        assert!(cap_middle(&wide, 50).contains("450 characters omitted"));
    }
}
