//! Whose workspace a turn's tools use. An agent's `workspace` setting ([`WorkspaceScope`])
//! gives everyone who talks to it one shared sandbox (`agent`), each end user their own
//! (`person`: a chat user, or an API caller's `X-Hermes-Session-Key`), or each conversation its
//! own (`session`). Its files, inbox, processes, checkpoints and browser profile are that
//! sandbox's; the agent's skills and MEMORY stay shared.

use crate::kinds::vocabulary;

vocabulary! {
    /// An agent's `workspace` setting (`agents.workspace`).
    WorkspaceScope ("workspace") {
        /// One workspace for everyone who talks to the agent (agents made before issue 38).
        Agent = "agent",
        /// One per end user (new agents).
        Person = "person",
        /// One per conversation (with its sub-agents, forks and compressed continuations).
        Session = "session",
    }
}

/// One workspace of an agent: the shared one, or one person's or conversation's own, told
/// apart by a digest of who it is for (never the raw user key: it names containers and pods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Workspace {
    #[default]
    Shared,
    Own(u64),
}

impl Workspace {
    /// The workspace of a turn under `scope`: for its session's end user `user_key`, or its
    /// conversation `conversation` (the session that began it).
    pub fn for_turn(scope: WorkspaceScope, user_key: &str, conversation: crate::SessionId) -> Self {
        match scope {
            WorkspaceScope::Agent => Self::Shared,
            WorkspaceScope::Person => Self::Own(digest("person", user_key)),
            WorkspaceScope::Session => Self::Own(digest("session", &conversation.to_string())),
        }
    }

    /// What names of its objects end with: nothing for the shared one (so an agent's existing
    /// workspace keeps its name), `-<16 hex digits>` for an own one.
    pub fn suffix(self) -> String {
        match self {
            Self::Shared => String::new(),
            Self::Own(id) => format!("-{id:016x}"),
        }
    }

    /// The value of its label on containers and pods: `shared` or the 16 hex digits.
    pub fn label(self) -> String {
        match self {
            Self::Shared => "shared".to_owned(),
            Self::Own(id) => format!("{id:016x}"),
        }
    }

    /// The workspace a label names; a missing label is the shared one (objects made before
    /// workspaces had owners).
    pub fn from_label(label: Option<&str>) -> Option<Self> {
        match label {
            None | Some("shared") => Some(Self::Shared),
            Some(hex) if hex.len() == 16 => u64::from_str_radix(hex, 16).ok().map(Self::Own),
            Some(_) => None,
        }
    }
}

/// The first 8 bytes of SHA-256 over `kind` and `who`: stable across builds and processes.
fn digest(kind: &str, who: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(format!("{kind}\0{who}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SessionId;

    #[test]
    fn each_person_gets_one_stable_workspace_and_the_shared_one_keeps_its_old_names() {
        let conversation = SessionId::new();
        let alice = Workspace::for_turn(WorkspaceScope::Person, "telegram:c1:user:1", conversation);
        let bob = Workspace::for_turn(WorkspaceScope::Person, "telegram:c1:user:2", conversation);
        assert_ne!(alice, bob);
        assert_eq!(alice, Workspace::for_turn(WorkspaceScope::Person, "telegram:c1:user:1", SessionId::new()));
        assert_eq!(Workspace::for_turn(WorkspaceScope::Agent, "telegram:c1:user:1", conversation).suffix(), "");
        let own = Workspace::for_turn(WorkspaceScope::Session, "telegram:c1:user:1", conversation);
        assert_ne!(own, Workspace::for_turn(WorkspaceScope::Session, "telegram:c1:user:1", SessionId::new()));
        assert_eq!(own.suffix().len(), 17);
        // Pinned: a workspace's name must not change between releases.
        assert_eq!(
            Workspace::Own(digest("person", "api-key:x")).label(),
            format!("{:016x}", digest("person", "api-key:x"))
        );
    }

    #[test]
    fn labels_round_trip_and_a_missing_one_is_the_shared_workspace() {
        for ws in [Workspace::Shared, Workspace::Own(7), Workspace::Own(u64::MAX)] {
            assert_eq!(Workspace::from_label(Some(&ws.label())), Some(ws));
        }
        assert_eq!(Workspace::from_label(None), Some(Workspace::Shared));
        assert_eq!(Workspace::from_label(Some("../etc")), None);
    }
}
