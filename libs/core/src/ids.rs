//! Typed identifiers. All ids are UUIDv7 so they sort by creation time.
//!
//! `TenantId` is special: the only constructor from a raw UUID is
//! [`TenantId::from_authenticated`], which clippy forbids outside the few places that
//! authenticate a caller (API-key lookup, the admin CLI) — so a handler cannot invent one.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A string that is not a valid id.
#[derive(Debug, thiserror::Error)]
#[error("invalid {kind} id: {value:?}")]
pub struct IdParseError {
    kind: &'static str,
    value: String,
}

macro_rules! typed_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// The underlying UUID, for storage.
            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", $kind, self.0)
            }
        }
    };
}

macro_rules! open_id {
    ($(#[$meta:meta])* $name:ident, $kind:literal) => {
        typed_id!($(#[$meta])* $name, $kind);

        impl $name {
            /// A fresh, time-ordered id.
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            /// Wraps a UUID read from storage or from a client (clients' ids are always
            /// looked up together with the authenticated tenant).
            pub fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        /// For `FromRow` rows: `#[sqlx(try_from = "uuid::Uuid")]` on a typed-id field.
        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl FromStr for $name {
            type Err = IdParseError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self).map_err(|_| IdParseError {
                    kind: $kind,
                    value: s.chars().take(64).collect(),
                })
            }
        }
    };
}

typed_id!(
    /// The tenant a request acts for. Comes only from authentication.
    TenantId,
    "tenant"
);

impl TenantId {
    /// Wraps a tenant UUID that an authentication step has just established (an API key
    /// resolved in the database, an operator naming a tenant in the admin CLI, a work item
    /// this cluster wrote itself). Clippy's `disallowed_methods` keeps it out of everything else.
    pub fn from_authenticated(id: Uuid) -> Self {
        Self(id)
    }

    /// A new tenant's id, minted when the tenant is created.
    pub fn mint() -> Self {
        Self(Uuid::now_v7())
    }
}

open_id!(
    /// An agent (a Hermes "profile") inside a tenant.
    AgentId,
    "agent"
);
open_id!(
    /// A conversation with an agent.
    SessionId,
    "session"
);
open_id!(
    /// One user input and everything the agent did to answer it.
    TurnId,
    "turn"
);
open_id!(
    /// An API key's public id.
    ApiKeyId,
    "api key"
);

open_id!(
    /// A person who signs in to the admin console (one person may belong to several tenants).
    PersonId,
    "person"
);
open_id!(
    /// An admin API token's public id.
    AdminTokenId,
    "admin token"
);
open_id!(
    /// An invitation to join a tenant.
    InvitationId,
    "invitation"
);
open_id!(
    /// A cron job: an agent run on a schedule.
    JobId,
    "cron job"
);
open_id!(
    /// A webhook trigger: an outside service's event starts a turn or fires a cron job.
    WebhookId,
    "webhook"
);
open_id!(
    /// An event endpoint: an outside URL the tenant's events are delivered to.
    EventHookId,
    "event hook"
);

open_id!(
    /// A provider key in a tenant's credential pool.
    CredentialId,
    "credential"
);
open_id!(
    /// A skill (bundled, the tenant's, or one agent's).
    SkillId,
    "skill"
);
open_id!(
    /// One run of a cron job (or of a webhook that fires one).
    CronRunId,
    "cron run"
);
open_id!(
    /// A signed-in admin console session.
    ConsoleSessionId,
    "console session"
);
open_id!(
    /// A chat channel: one bot account on one platform, bound to an agent.
    ChannelId,
    "channel"
);
open_id!(
    /// A question a parked turn put to the user (an approval or a clarification).
    InteractionId,
    "interaction"
);
open_id!(
    /// Money set aside against a spending cap before a paid call, settled or released after.
    SpendReservationId,
    "spend reservation"
);
open_id!(
    /// One delivery of an event to an event endpoint.
    EventDeliveryId,
    "event delivery"
);
open_id!(
    /// One `delegate_task(background=true)` call: its children and the report they end in.
    DelegationId,
    "delegation"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_strings_and_reject_garbage() {
        let id = SessionId::new();
        let parsed: SessionId = id.to_string().parse().unwrap();
        assert_eq!(id, parsed);
        let err = "not-a-uuid".parse::<SessionId>().unwrap_err();
        assert!(err.to_string().contains("session"));
    }

    #[test]
    fn new_ids_sort_by_creation_time() {
        let a = TurnId::new();
        let b = TurnId::new();
        assert!(a < b);
    }
}
