//! Files people send (`ContentPart::File`), kept in the agent's sandbox under
//! `/workspace/inbox/` before the turn begins. Each becomes a note saying where it is, its type
//! and size, and the start of what `read_file` gives of it (the text of PDF, DOCX, XLSX, PPTX,
//! ODT, notebooks and text files; an archive's listing), so the model can quote it or page on. Neither the stored conversation nor a
//! model provider ever gets the bytes.

use base64::Engine;
use hermes_core::message::FileData;
use hermes_core::{ChatMessage, Content, ContentPart};
use hermes_sandbox::proto::{PutFileRequest, ReadFileRequest};
use hermes_sandbox::{SandboxClient, SandboxKey, status_error};

use crate::Runtime;

/// Where files people send are kept.
const INBOX: &str = "/workspace/inbox";
/// How many lines of a file's text the note carries.
const NOTE_LINES: u32 = 200;
/// How much of a file's text the note carries, in characters.
const NOTE_CHARS: usize = 20_000;

/// Whether `input` carries files people sent.
pub(crate) fn has_files(input: &ChatMessage) -> bool {
    matches!(&input.content, Some(Content::Parts(parts)) if parts.iter().any(|p| matches!(p, ContentPart::File { .. })))
}

/// `input` with each file kept in the sandbox of `key` and replaced by its note.
pub(crate) async fn deliver(rt: &Runtime, key: SandboxKey, input: ChatMessage) -> ChatMessage {
    let Some(Content::Parts(parts)) = &input.content else { return input };
    if !has_files(&input) {
        return input;
    }
    let client = rt.ctx.sandboxes.open(key).await.map_err(|e| e.to_string());
    let mut storage = Storage::of(rt, key).await;
    let mut delivered = Vec::with_capacity(parts.len());
    for part in parts {
        delivered.push(match part {
            ContentPart::File { file } => ContentPart::Text { text: note(&client, &mut storage, file).await },
            other => other.clone(),
        });
    }
    storage.record(rt, key).await;
    ChatMessage { content: Some(Content::Parts(delivered)), ..input }
}

/// The tenant's file storage as this delivery sees it: what its inboxes hold, its quota, and
/// what this workspace's inbox holds after the files kept so far.
struct Storage {
    used: u64,
    quota: Option<u64>,
    measured: Option<u64>,
}

impl Storage {
    async fn of(rt: &Runtime, key: SandboxKey) -> Self {
        let default = rt.ctx.config.sandbox.file_storage_mb;
        match rt.ctx.store.tenancy().file_storage(key.tenant).await {
            Ok(s) => {
                let mb = s.quota_mb.map_or(default, |q| u64::try_from(q).unwrap_or(0));
                let used = u64::try_from(s.used_bytes).unwrap_or(0);
                Self { used, quota: (mb > 0).then_some(mb * 1024 * 1024), measured: None }
            }
            Err(e) => {
                // Metering, not a wall: a store hiccup does not refuse the person's file.
                tracing::warn!(error = %e, "cannot read the tenant's file storage; delivering unmetered");
                Self { used: 0, quota: None, measured: None }
            }
        }
    }

    /// Why `bytes` more do not fit, if they do not.
    fn refusal(&self, bytes: usize) -> Option<String> {
        let quota = self.quota?;
        (self.used + bytes as u64 > quota).then(|| {
            format!(
                "the team's file storage is full ({} of {} used; an admin can raise the quota, or files in {INBOX} can be deleted)",
                size_words(usize::try_from(self.used).unwrap_or(usize::MAX)),
                size_words(usize::try_from(quota).unwrap_or(usize::MAX))
            )
        })
    }

    async fn record(&self, rt: &Runtime, key: SandboxKey) {
        let Some(bytes) = self.measured else { return };
        let label = key.workspace.label();
        if let Err(e) = rt.ctx.store.tenancy().record_inbox_bytes(key.tenant, key.agent, &label, bytes).await {
            tracing::warn!(error = %e, "cannot record the inbox's size");
        }
    }
}

/// Keeps `file` and says what the model needs to know of it.
async fn note(client: &Result<SandboxClient, String>, storage: &mut Storage, file: &FileData) -> String {
    let name = file.filename.as_deref().unwrap_or("file");
    let Some((mime, data)) = file.file_data.as_deref().and_then(decode) else {
        return format!("[The user sent {name}, but its content did not arrive.]");
    };
    let about = format!("{name} ({mime}, {})", size_words(data.len()));
    if let Some(why) = storage.refusal(data.len()) {
        return format!("[The user sent {about}, but it could not be saved: {why}.]");
    }
    let size = data.len() as u64;
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            return format!(
                "[The user sent {about}, but it could not be saved: the workspace is not reachable ({e}).]"
            );
        }
    };
    let put = client.grpc().put_file(PutFileRequest { dir: INBOX.into(), name: name.into(), data }).await;
    let path = match put {
        Ok(kept) => {
            let kept = kept.into_inner();
            if !kept.existed {
                storage.used += size;
            }
            storage.measured = Some(kept.dir_bytes);
            kept.path
        }
        Err(status) => return format!("[The user sent {about}, but it could not be saved: {}.]", status_error(status)),
    };
    let head = format!("[The user sent {about}. It is saved at {path}.]");
    let read = client.grpc().read_file(ReadFileRequest { path: path.clone(), offset: 1, limit: NOTE_LINES }).await;
    // A file without text sandboxd can read (an archive, a video) is named only.
    let Ok(page) = read.map(|r| r.into_inner()) else { return head };
    let text: String = page.content.chars().take(NOTE_CHARS).collect();
    let cut = text.len() < page.content.len() || page.last_line < page.total_lines;
    let more = if cut {
        format!(
            "\n[The note shows the start; `read_file {path}` with an offset reads on ({} lines).]",
            page.total_lines
        )
    } else {
        String::new()
    };
    format!("{head}\nWhat read_file gives of it, line by line:\n{text}{more}")
}

/// The type and bytes of a `data:<mime>;base64,...` URL.
fn decode(url: &str) -> Option<(String, Vec<u8>)> {
    let (meta, data) = url.strip_prefix("data:")?.split_once(',')?;
    let mime = meta.strip_suffix(";base64")?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()?;
    Some((if mime.is_empty() { "application/octet-stream".to_owned() } else { mime.to_owned() }, bytes))
}

/// `n` bytes in words people read: `812 B`, `14.2 KB`, `3.1 MB`.
fn size_words(n: usize) -> String {
    let n = n as f64;
    if n < 1024.0 {
        format!("{n} B")
    } else if n < 1024.0 * 1024.0 {
        format!("{:.1} KB", n / 1024.0)
    } else {
        format!("{:.1} MB", n / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::{decode, size_words};

    #[test]
    fn a_data_url_gives_its_type_and_bytes_and_anything_else_nothing() {
        assert_eq!(decode("data:application/pdf;base64,JVBERi0="), Some(("application/pdf".into(), b"%PDF-".to_vec())));
        assert_eq!(decode("data:;base64,AA=="), Some(("application/octet-stream".into(), vec![0])));
        assert_eq!(decode("data:text/plain,hello"), None, "only base64 is taken");
        assert_eq!(decode("https://example.com/a.pdf"), None);
        assert_eq!(decode("data:application/pdf;base64,!!"), None);
        assert_eq!(
            (size_words(812), size_words(14_540), size_words(3_250_000)),
            ("812 B".into(), "14.2 KB".into(), "3.1 MB".into())
        );
    }
}
