//! Who may talk to a channel's agent, decided before anything reaches it: the DM policy
//! (open, allowlist, pairing, disabled), the group policy (mention or reply required by
//! default), and the channel's allowlists of users and group chats. Groups are closed until an
//! admin lists them (`allow_chats`, or `*` for every group): anyone can add a bot to a group of
//! their own. Unknown users in groups are ignored silently; in a direct chat they are told why,
//! or given a pairing code.

use hermes_core::{DmPolicy, GroupPolicy};
use hermes_store::Channel;

use crate::incoming::{ChatKind, Incoming};

/// What to do with a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Drop it without a word.
    Ignore,
    /// Tell the sender why not.
    Refuse(String),
    /// An unknown person in a direct chat of a `pairing` channel: give them a code.
    Pair,
}

fn listed(list: &[String], id: &str) -> bool {
    list.iter().any(|x| x == id)
}

pub fn decide(channel: &Channel, msg: &Incoming) -> Verdict {
    let admin = channel.is_admin(&msg.user_id);
    let allowed_user = admin || listed(&channel.allow_users, &msg.user_id);
    match msg.kind {
        ChatKind::Direct => match channel.dm_policy {
            DmPolicy::Open => Verdict::Allow,
            DmPolicy::Disabled => Verdict::Ignore,
            _ if allowed_user => Verdict::Allow,
            DmPolicy::Pairing => Verdict::Pair,
            DmPolicy::Allowlist => Verdict::Refuse(format!(
                "Sorry, this assistant only talks to people its team has allowed. Ask your admin to allow \
                 your user id {}.",
                msg.user_id
            )),
        },
        ChatKind::Group => {
            let chat_ok = channel.admits_group(&msg.chat_id);
            let user_ok = channel.allow_users.is_empty() || allowed_user;
            let policy_ok = match channel.group_policy {
                GroupPolicy::Open => true,
                GroupPolicy::Disabled => false,
                GroupPolicy::Mention => msg.addressed,
            };
            if chat_ok && user_ok && policy_ok { Verdict::Allow } else { Verdict::Ignore }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn channel(dm: &str, group: &str, users: &[&str], chats: &[&str]) -> Channel {
        Channel {
            id: uuid::Uuid::nil().into(),
            #[expect(clippy::disallowed_methods, reason = "test fixture")]
            tenant_id: hermes_core::TenantId::from_authenticated(uuid::Uuid::nil()),
            agent_id: hermes_core::AgentId::new(),
            platform: hermes_core::Platform::Telegram,
            mode: hermes_core::ChannelMode::Poll,
            api_base: String::new(),
            sealed_credentials: vec![],
            bot_username: Some("bot".into()),
            webhook_secret: String::new(),
            dm_policy: dm.parse().unwrap(),
            group_policy: group.parse().unwrap(),
            allow_users: users.iter().map(|s| (*s).to_owned()).collect(),
            allow_chats: chats.iter().map(|s| (*s).to_owned()).collect(),
            admins: vec!["9".into()],
            busy_mode: hermes_core::BusyMode::Interrupt,
            streaming: false,
            group_sessions: hermes_core::GroupSessions::Chat,
            admin_commands: vec![],
            tool_progress: true,
            show_reasoning: false,
            home_chat: None,
            toolsets: Default::default(),
            status: hermes_core::ChannelStatus::Active,
            status_reason: None,
            poll_offset: 0,
            created_at: chrono::Utc::now(),
        }
    }

    pub(crate) fn msg(kind: ChatKind, user: &str, chat: &str, addressed: bool) -> Incoming {
        Incoming {
            dedupe_key: "1".into(),
            chat_id: chat.into(),
            kind,
            thread: None,
            user_id: user.into(),
            user_name: None,
            message_id: None,
            text: "hi".into(),
            addressed,
            files: Vec::new(),
            reply_token: None,
        }
    }

    #[test]
    fn direct_chats_follow_the_dm_policy_and_say_why_not() {
        let open = channel("open", "mention", &[], &[]);
        assert_eq!(decide(&open, &msg(ChatKind::Direct, "5", "5", true)), Verdict::Allow);
        let listed = channel("allowlist", "mention", &["5"], &[]);
        assert_eq!(decide(&listed, &msg(ChatKind::Direct, "5", "5", true)), Verdict::Allow);
        assert_eq!(decide(&listed, &msg(ChatKind::Direct, "9", "9", true)), Verdict::Allow, "admins may");
        assert!(
            matches!(decide(&listed, &msg(ChatKind::Direct, "6", "6", true)), Verdict::Refuse(t) if t.contains("6"))
        );
        assert_eq!(
            decide(&channel("disabled", "mention", &[], &[]), &msg(ChatKind::Direct, "9", "9", true)),
            Verdict::Ignore
        );
    }

    #[test]
    fn groups_need_a_mention_and_ignore_strangers_silently() {
        let c = channel("open", "mention", &[], &["*"]);
        assert_eq!(decide(&c, &msg(ChatKind::Group, "5", "-1", true)), Verdict::Allow);
        assert_eq!(decide(&c, &msg(ChatKind::Group, "5", "-1", false)), Verdict::Ignore);
        let only = channel("open", "mention", &["5"], &["-1"]);
        assert_eq!(decide(&only, &msg(ChatKind::Group, "6", "-1", true)), Verdict::Ignore);
        assert_eq!(decide(&only, &msg(ChatKind::Group, "5", "-2", true)), Verdict::Ignore);
        assert_eq!(
            decide(&channel("open", "open", &[], &["*"]), &msg(ChatKind::Group, "5", "-1", false)),
            Verdict::Allow
        );
    }

    #[test]
    fn a_group_nobody_listed_is_closed_even_to_everyone_open() {
        let c = channel("open", "open", &[], &[]);
        assert_eq!(decide(&c, &msg(ChatKind::Group, "5", "-1", true)), Verdict::Ignore, "a stranger's own group");
        assert_eq!(decide(&c, &msg(ChatKind::Group, "9", "-1", true)), Verdict::Ignore, "not even an admin's");
        assert_eq!(decide(&c, &msg(ChatKind::Direct, "5", "5", true)), Verdict::Allow, "DMs follow the DM policy");
    }
}
