//! Where a chat message belongs and where its answer goes: its conversation (per person, group
//! or thread, on one bot) and the chat, thread and message a reply is addressed to.

use hermes_core::outbox::Destination;
use hermes_core::{GroupSessions, SessionSource};
use hermes_store::{Channel, Route};

use crate::incoming::{ChatKind, Incoming};

/// The conversation a message belongs to: per person in a direct chat, per group chat (or per
/// person in it, if the channel says so), and per thread (forum topic) within either.
pub fn route_for(channel: &Channel, msg: &Incoming) -> Route {
    let per_user = msg.kind == ChatKind::Group && channel.group_sessions == GroupSessions::User;
    let base = match msg.kind {
        ChatKind::Direct => format!("{}:{}:dm:{}", channel.platform, channel.id, msg.user_id),
        ChatKind::Group if per_user => {
            format!("{}:{}:group:{}:user:{}", channel.platform, channel.id, msg.chat_id, msg.user_id)
        }
        ChatKind::Group => format!("{}:{}:group:{}", channel.platform, channel.id, msg.chat_id),
    };
    let key = match &msg.thread {
        Some(t) => format!("{base}:thread:{t}"),
        None => base,
    };
    // Per channel: a user id is unique only within one bot's platform account (migration 0039).
    let user_key = match msg.kind {
        ChatKind::Direct => format!("{}:{}:user:{}", channel.platform, channel.id, msg.user_id),
        ChatKind::Group if per_user => format!("{}:{}:user:{}", channel.platform, channel.id, msg.user_id),
        ChatKind::Group => format!("{}:{}:chat:{}", channel.platform, channel.id, msg.chat_id),
    };
    Route { agent: channel.agent_id, key, source: SessionSource::from(channel.platform), user_key }
}

/// Where a channel's inbound rows are recorded (`platform:channel`).
pub(crate) fn source_of(channel: &Channel) -> String {
    format!("{}:{}", channel.platform, channel.id)
}

/// Where replies to `msg` go.
pub fn destination(channel: &Channel, msg: &Incoming) -> Destination {
    Destination {
        reply_to: msg.message_id,
        reply_token: msg.reply_token.clone(),
        group: msg.kind == ChatKind::Group,
        ..Destination::chat(channel.platform, channel.id, msg.chat_id.clone(), msg.thread.clone())
    }
}

#[cfg(test)]
mod tests {
    use crate::access::tests::{channel, msg};
    use crate::incoming::ChatKind;

    #[test]
    fn the_same_user_id_on_two_bots_is_two_people() {
        // Two WeCom companies bound to one agent: each has its own `zhangsan`.
        let (mut a, mut b) = (channel("open", "mention", &[], &["*"]), channel("open", "mention", &[], &["*"]));
        (a.id, b.id) = (hermes_core::ChannelId::new(), hermes_core::ChannelId::new());
        b.agent_id = a.agent_id;
        let dm = msg(ChatKind::Direct, "zhangsan", "zhangsan", true);
        let (ra, rb) = (super::route_for(&a, &dm), super::route_for(&b, &dm));
        assert_ne!(ra.user_key, rb.user_key, "no shared USER profile or search history");
        assert_ne!(ra.key, rb.key, "nor one conversation");
        assert_eq!(ra.user_key, format!("telegram:{}:user:zhangsan", a.id));
        let group = msg(ChatKind::Group, "zhangsan", "room-1", true);
        assert_ne!(super::route_for(&a, &group).user_key, super::route_for(&b, &group).user_key);
    }
}
