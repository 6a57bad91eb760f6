//! Narrower tools for wider audiences: a chat bot's chats, an API key or a webhook can keep
//! an agent's turns to some of its toolsets (a public channel without `terminal`, say), never
//! give them more. The worker applies the limits of a turn's source (`turn/audience.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which of its agent's toolsets each kind of chat of a bot may use. A list names the only
/// toolsets allowed; absent means all the agent's. The most specific rule wins: a chat's own,
/// else the one for its kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatToolsets {
    /// Direct messages with one person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<Vec<String>>,
    /// Group chats and channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<String>>,
    /// By the platform's chat id (a Slack channel, a Telegram group).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chats: BTreeMap<String, Vec<String>>,
}

impl ChatToolsets {
    /// The toolsets allowed in `chat_id` (a group chat when `group`), `None` when not limited.
    pub fn limit_for(&self, chat_id: &str, group: bool) -> Option<&[String]> {
        if let Some(own) = self.chats.get(chat_id) {
            return Some(own);
        }
        if group { self.groups.as_deref() } else { self.direct.as_deref() }
    }

    /// Every toolset name the rules mention, to check them when they are set.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.direct.iter().chain(&self.groups).chain(self.chats.values()).flatten()
    }

    /// Whether nothing is limited.
    pub fn is_empty(&self) -> bool {
        self.direct.is_none() && self.groups.is_none() && self.chats.is_empty()
    }
}

/// The limits a turn's sources set: its API key's, its chat's (by its bot's rules) and its
/// webhook's. Each narrows; together they keep what all of them allow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolsetLimits {
    pub api_key: Option<Vec<String>>,
    pub chat: Option<Vec<String>>,
    pub webhook: Option<Vec<String>>,
}

impl ToolsetLimits {
    /// Narrows `toolsets` by every limit.
    pub fn apply(&self, toolsets: &mut Vec<String>) {
        for limit in [&self.api_key, &self.chat, &self.webhook] {
            narrow(toolsets, limit.as_deref());
        }
    }
}

/// Keeps only the toolsets of `toolsets` that `only` allows: a limit narrows, never widens.
pub fn narrow(toolsets: &mut Vec<String>, only: Option<&[String]>) {
    if let Some(only) = only {
        toolsets.retain(|t| only.contains(t));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn a_chat_rule_beats_its_kind_and_unlimited_kinds_keep_everything() {
        let rules = ChatToolsets {
            direct: None,
            groups: Some(list(&["web", "memory"])),
            chats: BTreeMap::from([("C0TEAM".to_owned(), list(&["terminal", "web"]))]),
        };
        assert_eq!(rules.limit_for("D123", false), None, "DMs keep the agent's toolsets");
        assert_eq!(rules.limit_for("C0PUBLIC", true), Some(&list(&["web", "memory"])[..]));
        assert_eq!(rules.limit_for("C0TEAM", true), Some(&list(&["terminal", "web"])[..]));
    }

    #[test]
    fn a_limit_never_adds_a_toolset_the_agent_lacks() {
        let mut agent = list(&["web", "memory", "terminal"]);
        narrow(&mut agent, Some(&list(&["web", "browser"])));
        assert_eq!(agent, list(&["web"]), "browser is not the agent's to give");
        let mut untouched = list(&["web"]);
        narrow(&mut untouched, None);
        assert_eq!(untouched, list(&["web"]));
    }

    #[test]
    fn every_source_narrows_and_together_they_keep_what_all_allow() {
        let limits = ToolsetLimits {
            api_key: Some(list(&["web", "memory", "terminal"])),
            chat: Some(list(&["web", "memory"])),
            webhook: None,
        };
        let mut agent = list(&["terminal", "web", "memory", "browser"]);
        limits.apply(&mut agent);
        assert_eq!(agent, list(&["web", "memory"]));
    }

    #[test]
    fn unknown_fields_are_refused_not_dropped() {
        assert!(serde_json::from_str::<ChatToolsets>(r#"{"group": ["web"]}"#).is_err());
        let parsed: ChatToolsets = serde_json::from_str(r#"{"groups": ["web"]}"#).unwrap();
        assert_eq!(parsed.names().collect::<Vec<_>>(), vec!["web"]);
    }
}
