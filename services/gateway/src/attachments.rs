//! Files a chat answer hands over: its `MEDIA:<path>` lines (`hermes_core::media`) are taken
//! out of the text, and the files the worker kept for the turn are sent after it, as parts of
//! the same outbox reply (so a retry sends only what is missing). A file that could not be
//! read is replaced by a note saying so; a link stays in the text. The platforms that upload
//! files and show buttons (Slack, Telegram) send a reply as an [`Outgoing`], with
//! [`Gateway::send_uploads`].

use hermes_core::media::split_media;
use hermes_core::outbox::OutboxPayload;
use hermes_store::OutboxItem;
use hermes_store::turn_files::TurnFile;

use hermes_chat::OutFile;

use crate::Gateway;
use crate::interact::Buttons;
use crate::outbox::{Failure, render_reply};

/// One part of a reply.
pub(crate) enum Part {
    Text(String),
    File(TurnFile),
}

impl Part {
    /// A file that could not be read becomes a note.
    pub(crate) fn note(file: &TurnFile) -> Option<String> {
        file.data.as_ref().err().map(|why| format!("(I could not attach {}: {why})", file.name))
    }

    /// What sending the part sends, on a platform that uploads files: its text (for a file
    /// that could not be read, the note saying so), and the file to upload.
    pub(crate) fn to_send(&self) -> (Option<String>, Option<OutFile<'_>>) {
        match self {
            Part::Text(t) => (Some(t.clone()), None),
            Part::File(f) => {
                let out = f.data.as_ref().ok().map(|data| OutFile { name: &f.name, mime: &f.mime, data });
                (Part::note(f), out)
            }
        }
    }
}

/// The reply's parts: its text cut at `max`, then its files.
fn parts(text: &str, files: Vec<TurnFile>, max: usize) -> Vec<Part> {
    let mut out: Vec<Part> = Vec::new();
    if !text.trim().is_empty() || files.is_empty() {
        out.extend(hermes_chat::split::split(text, max).into_iter().map(Part::Text));
    }
    out.extend(files.into_iter().map(Part::File));
    out
}

/// A reply as a platform with buttons and uploads sends it (Slack, Telegram).
pub(crate) struct Outgoing {
    pub parts: Vec<Part>,
    buttons: Buttons,
    /// The last text part: the buttons go under it.
    last_text: Option<usize>,
    /// The streamed preview this answer replaces (chat, message), removed once it is sent.
    pub preview: Option<(String, String)>,
}

impl Outgoing {
    /// The buttons that go under part `i`, if any.
    pub fn buttons_under(&self, i: usize) -> Option<&Buttons> {
        (Some(i) == self.last_text && !self.buttons.is_empty()).then_some(&self.buttons)
    }
}

impl Gateway {
    /// The reply `item` carries as the parts to send (its text cut in parts of at most `max`
    /// UTF-16 units, then the files it hands over), and the buttons that go under it.
    pub(crate) async fn reply_parts(&self, item: &OutboxItem, max: usize) -> Result<(Vec<Part>, Buttons), Failure> {
        let (text, buttons) = render_reply(item);
        let (text, files) = self.attachments(item, text).await?;
        Ok((parts(&text, files, max), buttons))
    }

    /// [`Self::reply_parts`] with the buttons placed, taking the answer's preview over.
    pub(crate) async fn outgoing(&self, item: &OutboxItem, max: usize) -> Result<Outgoing, Failure> {
        let (parts, buttons) = self.reply_parts(item, max).await?;
        let preview = self.take_preview(item).await?;
        let last_text = parts.iter().rposition(|p| matches!(p, Part::Text(_)));
        Ok(Outgoing { parts, buttons, last_text, preview })
    }

    /// [`Self::send_parts_recovering`] on a platform that uploads files: `send` gets a part's
    /// text and file ([`Part::to_send`]). Only a text part in doubt is looked for (`recover`
    /// gets its text); a file in doubt is sent again.
    pub(crate) async fn send_uploads<'a, Fut, RFut>(
        &self,
        item: &OutboxItem,
        parts: &'a [Part],
        mut send: impl FnMut(usize, Option<String>, Option<OutFile<'a>>) -> Fut,
        mut recover: impl FnMut(usize, &'a str) -> RFut,
    ) -> Result<(), Failure>
    where
        Fut: Future<Output = Result<String, Failure>>,
        RFut: Future<Output = Option<String>>,
    {
        let send = |i, part: &'a Part| {
            let (text, file) = part.to_send();
            send(i, text, file)
        };
        let recover = |i, part: &'a Part| {
            let looking = match part {
                Part::Text(text) => Some(recover(i, text)),
                Part::File(_) => None,
            };
            async move {
                match looking {
                    Some(found) => found.await,
                    None => None,
                }
            }
        };
        self.send_parts_recovering(item, parts, send, recover).await
    }

    /// The reply's text without its `MEDIA:` lines, and the files they name.
    pub(crate) async fn attachments(
        &self,
        item: &OutboxItem,
        text: String,
    ) -> Result<(String, Vec<TurnFile>), Failure> {
        let (Some(turn), OutboxPayload::Answer { .. }) = (item.turn_id, &item.payload) else {
            return Ok((text, Vec::new()));
        };
        let (mut body, targets) = split_media(&text);
        if targets.is_empty() {
            return Ok((text, Vec::new()));
        }
        let kept =
            self.store.turns().turn_files(item.tenant_id, turn).await.map_err(|e| Failure::Passing(e.to_string()))?;
        let mut files = Vec::new();
        for target in targets {
            match kept.iter().find(|f| f.target == target) {
                Some(file) => files.push(file.clone()),
                // A link, or a file the worker could not keep: named in the text.
                None => body = format!("{body}\n{target}").trim().to_owned(),
            }
        }
        Ok((body, files))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, data: Result<Vec<u8>, String>) -> TurnFile {
        TurnFile { target: format!("/workspace/{name}"), name: name.into(), mime: "image/png".into(), data }
    }

    #[test]
    fn files_follow_the_text_and_unreadable_ones_become_notes() {
        let max = 4_096;
        let got = parts("Here.", vec![file("a.png", Ok(vec![1])), file("b.png", Err("too big".into()))], max);
        assert_eq!(got.len(), 3);
        assert!(matches!(&got[0], Part::Text(t) if t == "Here."));
        let Part::File(b) = &got[2] else { panic!("a file part") };
        assert_eq!(Part::note(b).as_deref(), Some("(I could not attach b.png: too big)"));
        // Only files: no empty text part.
        assert_eq!(parts("", vec![file("a.png", Ok(vec![1]))], max).len(), 1);
    }
}
