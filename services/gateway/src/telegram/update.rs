//! Telegram updates as the gateway's [`Incoming`] messages.

use serde_json::Value;

use crate::incoming::{ButtonPress, ChatKind, Incoming, IncomingFile};

/// A button press in an update (`callback_query`).
pub fn parse_button(update: &Value) -> Option<ButtonPress> {
    let query = update.get("callback_query")?;
    let message = query.get("message")?;
    let chat = &message["chat"];
    let kind = match chat["type"].as_str() {
        Some("private") => ChatKind::Direct,
        Some("group" | "supergroup") => ChatKind::Group,
        _ => return None,
    };
    Some(ButtonPress {
        dedupe_key: format!("cb:{}", query["id"].as_str()?),
        callback_id: query["id"].as_str()?.to_owned(),
        chat_id: id_text(&chat["id"])?,
        kind,
        thread: message["message_thread_id"].as_i64().map(|t| t.to_string()),
        user_id: id_text(&query["from"]["id"])?,
        user_name: query["from"]["username"].as_str().map(str::to_owned),
        message_ref: message["message_id"].as_i64().map(|id| id.to_string()),
        data: query["data"].as_str()?.to_owned(),
    })
}

/// The message in an update, if it is one a person wrote to the bot (text or a caption).
pub fn parse(update: &Value, bot_username: Option<&str>) -> Option<Incoming> {
    let update_id = update["update_id"].as_i64()?;
    let message = update.get("message").or_else(|| update.get("edited_message"))?;
    let from = message.get("from")?;
    if from["is_bot"].as_bool() == Some(true) {
        return None;
    }
    let files = files(message);
    let raw_text = match message["text"].as_str().or_else(|| message["caption"].as_str()) {
        Some(t) => t,
        None if !files.is_empty() => "",
        None => return None,
    };
    let chat = &message["chat"];
    let chat_id = id_text(&chat["id"])?;
    let kind = match chat["type"].as_str() {
        Some("private") => ChatKind::Direct,
        Some("group" | "supergroup") => ChatKind::Group,
        _ => return None,
    };
    let bot = bot_username.map(|b| format!("@{}", b.to_lowercase()));
    let mentioned = bot.as_deref().is_some_and(|b| raw_text.to_lowercase().contains(b));
    let replied_to_bot = message
        .pointer("/reply_to_message/from")
        .is_some_and(|f| f["is_bot"].as_bool() == Some(true) && bot_matches(f["username"].as_str(), bot_username));
    Some(Incoming {
        dedupe_key: update_id.to_string(),
        chat_id,
        kind,
        thread: message["message_thread_id"]
            .as_i64()
            .filter(|_| message["is_topic_message"] == true)
            .map(|t| t.to_string()),
        user_id: id_text(&from["id"])?,
        user_name: from["username"].as_str().map(str::to_owned),
        message_id: message["message_id"].as_i64(),
        text: without_mention(raw_text, bot.as_deref()),
        addressed: kind == ChatKind::Direct || mentioned || replied_to_bot,
        files,
        reply_token: None,
    })
}

/// A message's photo (its largest size), voice note, audio file or document.
fn files(message: &Value) -> Vec<IncomingFile> {
    for (kind, mime) in [("voice", "audio/ogg"), ("audio", "audio/mpeg")] {
        let recording = &message[kind];
        if let Some(id) = recording["file_id"].as_str() {
            return vec![IncomingFile {
                file_id: id.to_owned(),
                name: recording["file_name"].as_str().map(str::to_owned),
                mime: recording["mime_type"].as_str().unwrap_or(mime).to_owned(),
                size: recording["file_size"].as_u64(),
                key: None,
            }];
        }
    }
    if let Some(best) = message["photo"].as_array().and_then(|sizes| sizes.last()) {
        return best["file_id"]
            .as_str()
            .map(|id| IncomingFile {
                file_id: id.to_owned(),
                name: None,
                mime: "image/jpeg".into(),
                size: best["file_size"].as_u64(),
                key: None,
            })
            .into_iter()
            .collect();
    }
    let doc = &message["document"];
    doc["file_id"]
        .as_str()
        .map(|id| IncomingFile {
            file_id: id.to_owned(),
            name: doc["file_name"].as_str().map(str::to_owned),
            mime: doc["mime_type"].as_str().unwrap_or("application/octet-stream").to_owned(),
            size: doc["file_size"].as_u64(),
            key: None,
        })
        .into_iter()
        .collect()
}

fn id_text(v: &Value) -> Option<String> {
    v.as_i64().map(|n| n.to_string())
}

fn bot_matches(name: Option<&str>, bot: Option<&str>) -> bool {
    match (name, bot) {
        (Some(n), Some(b)) => n.eq_ignore_ascii_case(b),
        _ => false,
    }
}

/// The text without the bot's `@name` (also in `/cmd@name`), with spaces tidied. User names
/// are ASCII, so a match starts at `@` and ends after ASCII bytes: both are char boundaries.
fn without_mention(text: &str, bot: Option<&str>) -> String {
    let Some(bot) = bot.filter(|b| b.is_ascii() && !b.is_empty()) else { return text.trim().to_owned() };
    let (t, b) = (text.as_bytes(), bot.as_bytes());
    let mut out = String::with_capacity(text.len());
    let (mut start, mut i) = (0, 0);
    while i + b.len() <= t.len() {
        if t[i..i + b.len()].eq_ignore_ascii_case(b) {
            out.push_str(&text[start..i]);
            i += b.len();
            start = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[start..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn update(chat_type: &str, text: &str, reply_from_bot: bool) -> Value {
        let mut u = json!({"update_id": 7, "message": {"message_id": 3, "chat": {"id": -100, "type": chat_type},
            "from": {"id": 42, "is_bot": false, "username": "ann"}, "text": text}});
        if reply_from_bot {
            u["message"]["reply_to_message"] =
                json!({"message_id": 2, "from": {"id": 1, "is_bot": true, "username": "HermesBot"}});
        }
        u
    }

    #[test]
    fn groups_address_the_bot_by_mention_or_reply_and_the_mention_is_removed() {
        let m = parse(&update("supergroup", "hey @hermesbot what is up", false), Some("HermesBot")).unwrap();
        assert!(m.addressed);
        assert_eq!(m.text, "hey what is up");
        assert_eq!(m.kind, ChatKind::Group);
        let m = parse(&update("supergroup", "/new@HermesBot", false), Some("HermesBot")).unwrap();
        assert_eq!(m.text, "/new");
        assert!(parse(&update("supergroup", "just chatting", true), Some("HermesBot")).unwrap().addressed);
        assert!(!parse(&update("supergroup", "just chatting", false), Some("HermesBot")).unwrap().addressed);
        let dm = parse(&update("private", "hello", false), Some("HermesBot")).unwrap();
        assert!(dm.addressed && dm.kind == ChatKind::Direct);
        assert_eq!((dm.user_id.as_str(), dm.dedupe_key.as_str()), ("42", "7"));
        // Non-ASCII text around a mention is kept whole.
        let m = parse(&update("supergroup", "İstanbul @HERMESBOT 你好", false), Some("HermesBot")).unwrap();
        assert_eq!(m.text, "İstanbul 你好");
    }

    #[test]
    fn bots_channels_and_updates_without_text_are_not_messages() {
        let mut from_bot = update("private", "hi", false);
        from_bot["message"]["from"]["is_bot"] = json!(true);
        assert!(parse(&from_bot, Some("HermesBot")).is_none());
        assert!(parse(&update("channel", "hi", false), Some("HermesBot")).is_none());
        assert!(parse(&json!({"update_id": 1, "my_chat_member": {}}), Some("HermesBot")).is_none());
    }
}
