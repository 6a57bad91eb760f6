//! Reading the bodies the store returns straight from its rows (the `sqlx` feature, which only
//! `hermes-store` turns on): the column types a typed id is decoded through.
//!
//! A body derives `sqlx::FromRow` and reads a typed id with
//! `#[sqlx(try_from = "crate::rows::Id")]` (or `MaybeId` for a nullable column); the store's
//! own rows use the same two types. [`Id`] is made only by decoding a column, so a
//! [`TenantId`] built from it is always a tenant a stored row names, never one a caller
//! supplied.

use uuid::Uuid;

use hermes_core::{
    AdminTokenId, AgentId, ApiKeyId, ChannelId, ConsoleSessionId, CredentialId, CronRunId, DelegationId,
    EventDeliveryId, EventHookId, InteractionId, InvitationId, JobId, PersonId, SessionId, SkillId, SpendReservationId,
    TenantId, TurnId, WebhookId,
};

/// A non-null uuid column, on its way to a typed id.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub struct Id(Uuid);

/// A nullable uuid column, on its way to an optional typed id.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub struct MaybeId(Option<Uuid>);

macro_rules! open_ids {
    ($($id:ident),*) => {$(
        impl From<Id> for $id {
            fn from(column: Id) -> Self {
                $id::from_uuid(column.0)
            }
        }

        impl From<MaybeId> for Option<$id> {
            fn from(column: MaybeId) -> Self {
                column.0.map($id::from_uuid)
            }
        }
    )*};
}

open_ids!(
    AgentId,
    SessionId,
    TurnId,
    ApiKeyId,
    PersonId,
    AdminTokenId,
    InvitationId,
    JobId,
    WebhookId,
    EventHookId,
    CredentialId,
    SkillId,
    CronRunId,
    ConsoleSessionId,
    ChannelId,
    InteractionId,
    SpendReservationId,
    EventDeliveryId,
    DelegationId
);

impl From<Id> for TenantId {
    fn from(column: Id) -> Self {
        #[expect(clippy::disallowed_methods, reason = "a stored row's own tenant, read with the row")]
        TenantId::from_authenticated(column.0)
    }
}

impl From<MaybeId> for Option<TenantId> {
    fn from(column: MaybeId) -> Self {
        #[expect(clippy::disallowed_methods, reason = "a tenant a stored row names, read with the row")]
        column.0.map(TenantId::from_authenticated)
    }
}

/// A nullable text column, on its way to an optional vocabulary value
/// (`#[sqlx(try_from = "crate::rows::MaybeText")]`).
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub struct MaybeText(Option<String>);

macro_rules! optional_vocabularies {
    ($($vocab:ty),*) => {$(
        impl TryFrom<MaybeText> for Option<$vocab> {
            type Error = hermes_core::UnknownName;

            fn try_from(column: MaybeText) -> std::result::Result<Self, Self::Error> {
                column.0.map(|text| text.parse()).transpose()
            }
        }
    )*};
}

optional_vocabularies!(hermes_core::RunOutcome);

/// A stored trace context that does not parse is no trace: it must never fail a claim.
impl From<MaybeText> for Option<hermes_core::trace::TraceParent> {
    fn from(column: MaybeText) -> Self {
        column.0.as_deref().and_then(hermes_core::trace::TraceParent::parse)
    }
}
