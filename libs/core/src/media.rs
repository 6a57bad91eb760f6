//! `MEDIA:<path or URL>` lines in an answer: files the agent hands to the chat (upstream's
//! directive). The worker fetches the named workspace files when a chat turn ends; the gateway
//! sends them after the answer's text.

/// Files one answer may hand over.
pub const MAX_MEDIA: usize = 10;

/// The answer without its `MEDIA:` lines, and what they name, in order, each once. Lines
/// inside code fences are text.
pub fn split_media(text: &str) -> (String, Vec<String>) {
    let mut kept = Vec::new();
    let mut media: Vec<String> = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
        }
        match trimmed.strip_prefix("MEDIA:").map(str::trim) {
            Some(target) if !fenced && !target.is_empty() && !target.contains(char::is_whitespace) => {
                if media.len() < MAX_MEDIA && !media.iter().any(|m| m == target) {
                    media.push(target.to_owned());
                }
            }
            _ => kept.push(line),
        }
    }
    if media.is_empty() {
        return (text.to_owned(), media);
    }
    (kept.join("\n").trim().to_owned(), media)
}

/// A file's type from its name.
pub fn mime_for(name: &str) -> &'static str {
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "txt" | "log" | "md" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "html" => "text/html",
        "zip" => "application/zip",
        "mp3" => "audio/mpeg",
        "ogg" => "audio/ogg",
        "mp4" => "video/mp4",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx" => "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt" => "application/vnd.oasis.opendocument.text",
        "ipynb" => "application/x-ipynb+json",
        _ => "application/octet-stream",
    }
}

/// The API's id of a file a turn kept (`file-<turn>-<name>`, OpenAI's `file-` prefix): it
/// names the turn, so the API finds it within the caller's tenant and nowhere else. Only plain
/// names (letters, digits, `.`, `_`, `-`; what tools name the files they make) have one.
pub fn file_id(turn: crate::TurnId, name: &str) -> Option<String> {
    plain_name(name).then(|| format!("file-{}-{name}", turn.as_uuid().simple()))
}

/// The turn and name a [`file_id`] names.
pub fn parse_file_id(id: &str) -> Option<(crate::TurnId, String)> {
    let rest = id.strip_prefix("file-")?;
    let (turn, name) = (rest.get(..32)?, rest.get(32..)?.strip_prefix('-')?);
    let turn = uuid::Uuid::try_parse(turn).ok()?;
    plain_name(name).then(|| (crate::TurnId::from_uuid(turn), name.to_owned()))
}

fn plain_name(name: &str) -> bool {
    (1..=120).contains(&name.len())
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_id_names_its_turn_and_file_and_nothing_else_parses() {
        let turn = crate::TurnId::new();
        let id = file_id(turn, "image-call1.png").unwrap();
        assert_eq!(parse_file_id(&id), Some((turn, "image-call1.png".to_owned())));
        assert_eq!(file_id(turn, "../etc/passwd"), None, "no path in a name");
        assert_eq!(file_id(turn, "a b.png"), None);
        assert_eq!(parse_file_id("file-abc-x.png"), None);
        assert_eq!(parse_file_id(&id.replace("image", "../image")), None);
        assert_eq!(parse_file_id(&format!("file-{}-", turn.as_uuid().simple())), None);
    }

    #[test]
    fn media_lines_leave_the_text_and_name_the_files() {
        let (text, media) = split_media("Here is the chart.\nMEDIA:/workspace/chart.png\nMEDIA: out/report.pdf\nBye.");
        assert_eq!(text, "Here is the chart.\nBye.");
        assert_eq!(media, ["/workspace/chart.png", "out/report.pdf"]);
        let fenced = "```\nMEDIA:/x.png\n```";
        assert_eq!(split_media(fenced), (fenced.to_owned(), vec![]));
        let (_, once) = split_media("MEDIA:/a.png\nMEDIA:/a.png");
        assert_eq!(once, ["/a.png"]);
        assert_eq!(split_media("MEDIA: two words").1, Vec::<String>::new());
        assert_eq!(mime_for("Chart.PNG"), "image/png");
        assert_eq!(mime_for("notes"), "application/octet-stream");
    }
}
