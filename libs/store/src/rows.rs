//! Reading rows: the typed ids a uuid column holds, and the one place a row's tenant is read.
//!
//! Row types derive [`sqlx::FromRow`] and read a typed id with
//! `#[sqlx(try_from = "crate::rows::Id")]` (or `MaybeId` for a nullable column). [`Id`] is
//! made only by decoding a column, so a [`TenantId`] built from it is always a tenant a stored
//! row names, never one a caller supplied.

use sqlx::postgres::PgRow;
use sqlx::{FromRow, Row};
use uuid::Uuid;

use hermes_core::{AdminTokenId, AgentId, ApiKeyId, InvitationId, PersonId, SessionId, TenantId, TurnId};

use crate::Result;

/// A non-null uuid column, on its way to a typed id.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub(crate) struct Id(Uuid);

/// A nullable uuid column, on its way to an optional typed id.
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub(crate) struct MaybeId(Option<Uuid>);

/// A nullable text column, on its way to an optional vocabulary value
/// (`#[sqlx(try_from = "crate::rows::MaybeText")]`).
#[derive(sqlx::Type)]
#[sqlx(transparent)]
pub(crate) struct MaybeText(Option<String>);

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

open_ids!(AgentId, SessionId, TurnId, ApiKeyId, PersonId, AdminTokenId, InvitationId);

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

/// The tenant a row belongs to (its `tenant_id` column).
pub(crate) fn tenant_of(row: &PgRow) -> Result<TenantId> {
    Ok(row.try_get::<Id, _>("tenant_id")?.into())
}

/// A row read as `T`, with a mapping failure as a [`crate::StoreError`]: a column whose text is
/// not one of its vocabulary's names (decoded with `#[sqlx(try_from = "String")]`) is
/// [`crate::StoreError::Corrupt`], since the database held something no writer should have put there.
pub(crate) fn read<T: for<'r> FromRow<'r, PgRow>>(row: &PgRow) -> Result<T> {
    T::from_row(row).map_err(|e| match e {
        sqlx::Error::ColumnDecode { index, source } => crate::StoreError::Corrupt(format!("column {index}: {source}")),
        other => other.into(),
    })
}

/// A text column read as one of the core vocabularies; a name outside it is `Corrupt` (the
/// column's CHECK constraint should make that impossible).
pub(crate) fn vocab<T: std::str::FromStr<Err = hermes_core::UnknownName>>(text: &str) -> Result<T> {
    text.parse().map_err(|e: hermes_core::UnknownName| crate::StoreError::Corrupt(e.to_string()))
}
