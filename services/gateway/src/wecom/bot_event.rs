//! A WeCom AI bot's `aibot_msg_callback` as the gateway's [`Incoming`]. The bot hears group
//! messages only when mentioned, so every message is addressed to it; the mention itself
//! (`@Bot` at the start) is dropped. Voice arrives already transcribed.

use serde_json::Value;

use crate::incoming::{ChatKind, Incoming, IncomingFile};

/// The message in a callback's body, answered under `req_id`.
pub fn parse(body: &Value, req_id: &str) -> Option<Incoming> {
    let user = body["from"]["userid"].as_str()?.to_owned();
    let (kind, chat_id) = match body["chattype"].as_str() {
        Some("group") => (ChatKind::Group, body["chatid"].as_str()?.to_owned()),
        _ => (ChatKind::Direct, user.clone()),
    };
    let mut texts = Vec::new();
    let mut files = Vec::new();
    read_item(body, &mut texts, &mut files);
    if let Some(items) = body["mixed"]["msg_item"].as_array() {
        for item in items {
            read_item(item, &mut texts, &mut files);
        }
    }
    let mut text = texts.join("\n");
    if kind == ChatKind::Group {
        text = without_leading_mention(&text);
    }
    if text.trim().is_empty() && files.is_empty() {
        return None;
    }
    Some(Incoming {
        dedupe_key: body["msgid"].as_str()?.to_owned(),
        chat_id,
        kind,
        thread: None,
        user_id: user,
        user_name: None,
        message_id: None,
        text: text.trim().to_owned(),
        addressed: true,
        files,
        reply_token: Some(req_id.to_owned()),
    })
}

/// The text or media of one message (or one item of a `mixed` message).
fn read_item(item: &Value, texts: &mut Vec<String>, files: &mut Vec<IncomingFile>) {
    match item["msgtype"].as_str() {
        Some("text") => texts.extend(item["text"]["content"].as_str().map(str::to_owned)),
        Some("voice") => texts.extend(item["voice"]["content"].as_str().map(str::to_owned)),
        Some(kind @ ("image" | "file")) => {
            let media = &item[kind];
            if let Some(url) = media["url"].as_str() {
                files.push(IncomingFile {
                    file_id: url.to_owned(),
                    name: media["filename"].as_str().map(str::to_owned),
                    // WeCom says what an image is only in its bytes; the download checks.
                    mime: if kind == "image" { "image/jpeg" } else { "application/octet-stream" }.to_owned(),
                    size: None,
                    key: media["aeskey"].as_str().map(str::to_owned),
                });
            }
        }
        _ => {}
    }
}

fn without_leading_mention(text: &str) -> String {
    let trimmed = text.trim_start();
    match trimmed.strip_prefix('@') {
        Some(rest) => {
            rest.split_once(char::is_whitespace).map(|(_, after)| after.trim_start()).unwrap_or("").to_owned()
        }
        None => trimmed.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn group_messages_lose_the_mention_and_keep_the_chat() {
        let body = json!({"msgid": "m1", "aibotid": "b", "chatid": "g1", "chattype": "group",
            "from": {"userid": "zhangsan"}, "msgtype": "text", "text": {"content": "@小助手 帮我总结一下"}});
        let msg = parse(&body, "r1").unwrap();
        assert_eq!((msg.chat_id.as_str(), msg.kind, msg.text.as_str()), ("g1", ChatKind::Group, "帮我总结一下"));
        assert_eq!(msg.reply_token.as_deref(), Some("r1"));
        let dm = json!({"msgid": "m2", "chattype": "single", "from": {"userid": "lisi"},
            "msgtype": "voice", "voice": {"content": "明天的会议几点"}});
        let msg = parse(&dm, "r2").unwrap();
        assert_eq!((msg.chat_id.as_str(), msg.kind, msg.text.as_str()), ("lisi", ChatKind::Direct, "明天的会议几点"));
    }

    #[test]
    fn mixed_messages_bring_their_text_and_images() {
        let body = json!({"msgid": "m3", "chattype": "single", "from": {"userid": "u"}, "msgtype": "mixed",
            "mixed": {"msg_item": [
                {"msgtype": "text", "text": {"content": "what is this?"}},
                {"msgtype": "image", "image": {"url": "https://x/1", "aeskey": "k"}}]}});
        let msg = parse(&body, "r").unwrap();
        assert_eq!(msg.text, "what is this?");
        assert_eq!(msg.files.len(), 1);
        assert_eq!(msg.files[0].key.as_deref(), Some("k"));
        let empty = json!({"msgid": "m4", "chattype": "single", "from": {"userid": "u"}, "msgtype": "event"});
        assert!(parse(&empty, "r").is_none());
    }
}
