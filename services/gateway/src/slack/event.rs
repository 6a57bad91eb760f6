//! Slack events and interactions as the gateway's [`Incoming`] and [`ButtonPress`].

use serde_json::Value;

use crate::incoming::{ButtonPress, ChatKind, Incoming, IncomingFile};

/// The message in an `event_callback`, if it is one a person wrote to the bot.
pub fn parse(envelope: &Value, bot_user: Option<&str>) -> Option<Incoming> {
    let event = envelope.get("event")?;
    // Shared files arrive as `file_share`; other subtypes are edits, joins and bot messages.
    if event.get("bot_id").is_some() || event.get("subtype").is_some_and(|s| s != "file_share") {
        return None;
    }
    let user = event["user"].as_str()?;
    if Some(user) == bot_user {
        return None;
    }
    let kind = match (event["type"].as_str()?, event["channel_type"].as_str()) {
        ("message", Some("im")) => ChatKind::Direct,
        // In channels only mentions count: Slack also sends them as `message`, which would
        // start a second turn.
        ("app_mention", _) => ChatKind::Group,
        _ => return None,
    };
    let ts = event["ts"].as_str()?;
    let mention = bot_user.map(|b| format!("<@{b}>"));
    let mut text = event["text"].as_str().unwrap_or_default().to_owned();
    if let Some(m) = &mention {
        text = text.replace(m.as_str(), " ");
    }
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // Slack keeps typed slash commands to itself inside threads: `!cmd` stands for `/cmd`.
    if let Some(rest) = text.strip_prefix('!') {
        text = format!("/{rest}");
    }
    Some(Incoming {
        dedupe_key: envelope["event_id"].as_str().unwrap_or(ts).to_owned(),
        chat_id: event["channel"].as_str()?.to_owned(),
        kind,
        thread: match kind {
            ChatKind::Group => Some(event["thread_ts"].as_str().unwrap_or(ts).to_owned()),
            ChatKind::Direct => event["thread_ts"].as_str().map(str::to_owned),
        },
        user_id: user.to_owned(),
        user_name: None,
        message_id: None,
        text,
        addressed: true,
        files: files(event),
        reply_token: None,
    })
}

fn files(event: &Value) -> Vec<IncomingFile> {
    let Some(list) = event["files"].as_array() else { return Vec::new() };
    list.iter()
        .filter_map(|f| {
            Some(IncomingFile {
                file_id: f["url_private_download"].as_str().or_else(|| f["url_private"].as_str())?.to_owned(),
                name: f["name"].as_str().map(str::to_owned),
                mime: f["mimetype"].as_str().unwrap_or("application/octet-stream").to_owned(),
                size: f["size"].as_u64(),
                key: None,
            })
        })
        .collect()
}

/// A `/hermes ...` slash command as a message (`/hermes new` is the `/new` command).
pub fn parse_command(form: &std::collections::HashMap<String, String>) -> Option<Incoming> {
    let chat = form.get("channel_id")?;
    let text = form.get("text").map(|t| t.trim()).unwrap_or_default();
    let first = text.split_whitespace().next().unwrap_or_default();
    let text = if crate::commands::is_command(&format!("/{first}")) { format!("/{text}") } else { text.to_owned() };
    Some(Incoming {
        dedupe_key: format!("cmd:{}", form.get("trigger_id")?),
        chat_id: chat.clone(),
        kind: if chat.starts_with('D') { ChatKind::Direct } else { ChatKind::Group },
        thread: None,
        user_id: form.get("user_id")?.clone(),
        user_name: form.get("user_name").cloned(),
        message_id: None,
        text: if text.is_empty() { "/help".into() } else { text },
        addressed: true,
        files: Vec::new(),
        reply_token: None,
    })
}

/// A `block_actions` interaction: a press of one of the bot's buttons.
pub fn parse_press(payload: &Value) -> Option<ButtonPress> {
    if payload["type"] != "block_actions" {
        return None;
    }
    let action = payload["actions"].as_array()?.first()?;
    let chat = payload.pointer("/channel/id").or_else(|| payload.pointer("/container/channel_id"))?.as_str()?;
    let ts = payload.pointer("/message/ts").or_else(|| payload.pointer("/container/message_ts"));
    Some(ButtonPress {
        dedupe_key: format!("act:{}", action["action_ts"].as_str().unwrap_or_default()),
        callback_id: payload["trigger_id"].as_str().unwrap_or_default().to_owned(),
        chat_id: chat.to_owned(),
        kind: if chat.starts_with('D') { ChatKind::Direct } else { ChatKind::Group },
        thread: payload.pointer("/message/thread_ts").and_then(Value::as_str).map(str::to_owned),
        user_id: payload.pointer("/user/id")?.as_str()?.to_owned(),
        user_name: payload.pointer("/user/username").and_then(Value::as_str).map(str::to_owned),
        message_ref: ts.and_then(Value::as_str).map(str::to_owned),
        data: action["value"].as_str()?.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mentions_start_threads_dms_are_per_person_and_bots_are_ignored() {
        let mention = json!({"event_id": "Ev1", "event": {"type": "app_mention", "user": "U1", "channel": "C1",
            "ts": "1700.0001", "text": "<@UBOT> deploy please"}});
        let m = parse(&mention, Some("UBOT")).unwrap();
        assert_eq!(
            (m.text.as_str(), m.thread.as_deref(), m.kind),
            ("deploy please", Some("1700.0001"), ChatKind::Group)
        );
        let dm = json!({"event_id": "Ev2", "event": {"type": "message", "channel_type": "im", "user": "U1",
            "channel": "D1", "ts": "1700.0002", "text": "!new"}});
        let m = parse(&dm, Some("UBOT")).unwrap();
        assert_eq!((m.text.as_str(), m.kind, m.dedupe_key.as_str()), ("/new", ChatKind::Direct, "Ev2"));
        let from_bot = json!({"event": {"type": "message", "channel_type": "im", "bot_id": "B1", "user": "UBOT",
            "channel": "D1", "ts": "1", "text": "echo"}});
        assert!(parse(&from_bot, Some("UBOT")).is_none());
        let plain_channel = json!({"event": {"type": "message", "channel_type": "channel", "user": "U1",
            "channel": "C1", "ts": "1", "text": "chatter"}});
        assert!(parse(&plain_channel, Some("UBOT")).is_none());
    }

    #[test]
    fn slash_commands_ask_the_agent_or_run_a_gateway_command() {
        let form = |text: &str| {
            [("channel_id", "C1"), ("user_id", "U1"), ("trigger_id", "t1"), ("text", text)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect::<std::collections::HashMap<_, _>>()
        };
        assert_eq!(parse_command(&form("what is up")).unwrap().text, "what is up");
        assert_eq!(parse_command(&form("new")).unwrap().text, "/new");
        assert_eq!(parse_command(&form("")).unwrap().text, "/help");
        assert_eq!(parse_command(&form("status")).unwrap().kind, ChatKind::Group);
    }
}
