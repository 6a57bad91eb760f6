//! Just enough `multipart/form-data` reading for the emulators (file uploads).

/// One field of a form.
#[derive(Debug, Clone)]
pub struct FormPart {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Vec<u8>,
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// The fields of a body sent with `content_type` (`multipart/form-data; boundary=...`).
pub fn parse(content_type: &str, body: &[u8]) -> Option<Vec<FormPart>> {
    let boundary = content_type.split(';').find_map(|p| p.trim().strip_prefix("boundary="))?.trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    let mut at = find(body, &delimiter, 0)? + delimiter.len();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            return Some(parts);
        }
        let head_start = at + 2;
        let head_end = find(body, b"\r\n\r\n", head_start)?;
        let head = String::from_utf8_lossy(&body[head_start..head_end]).to_string();
        let data_start = head_end + 4;
        let next = find(body, &delimiter, data_start)?;
        let data = body[data_start..next.saturating_sub(2)].to_vec();
        let mut part = FormPart { name: String::new(), filename: None, content_type: None, data };
        for line in head.lines() {
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("content-disposition:") {
                for attr in line.split(';').map(str::trim) {
                    if let Some(v) = attr.strip_prefix("name=") {
                        part.name = v.trim_matches('"').to_owned();
                    } else if let Some(v) = attr.strip_prefix("filename=") {
                        part.filename = Some(v.trim_matches('"').to_owned());
                    }
                }
            } else if lower.starts_with("content-type:") {
                part.content_type = line.split_once(':').map(|(_, v)| v.trim().to_owned());
            }
        }
        parts.push(part);
        at = next + delimiter.len();
    }
}
