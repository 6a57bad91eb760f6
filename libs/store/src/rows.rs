//! Reading rows: the typed ids a uuid column holds, and the one place a row's tenant is read;
//! with them the statements of one keyed row that most modules make (read it, delete it).
//!
//! Row types derive [`sqlx::FromRow`] and read a typed id with
//! `#[sqlx(try_from = "crate::rows::Id")]` (or `MaybeId` for a nullable column), the column
//! types of `hermes_wire::rows`, whose bodies the store returns decode the same way. [`Id`] is
//! made only by decoding a column, so a [`TenantId`] built from it is always a tenant a stored
//! row names, never one a caller supplied.

use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, Row};
use uuid::Uuid;

use hermes_core::TenantId;

use crate::{Result, Store, StoreError};

/// The uuid columns a typed id is read through, and the nullable text column an optional
/// vocabulary value is: wire's, so its bodies and the store's rows decode ids (the tenant's
/// above all) the same way.
pub(crate) use hermes_wire::rows::{Id, MaybeId, MaybeText};

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

impl Store {
    /// `tenant`'s rows that `sql` selects (the tenant is `$1`), each read as `T`.
    pub(crate) async fn rows_of<T: for<'r> FromRow<'r, PgRow>>(
        &self,
        tenant: TenantId,
        sql: &'static str,
    ) -> Result<Vec<T>> {
        let rows = sqlx::query(sql).bind(tenant.as_uuid()).fetch_all(&mut *self.as_tenant(tenant).await?).await?;
        rows.iter().map(read).collect()
    }

    /// The row of `tenant` that `sql` selects by `key` (the tenant is `$1`, the key `$2`), read
    /// as `T`, if there is one.
    pub(crate) async fn maybe_row_of<T: for<'r> FromRow<'r, PgRow>>(
        &self,
        tenant: TenantId,
        sql: &'static str,
        key: Uuid,
    ) -> Result<Option<T>> {
        let row = sqlx::query(sql)
            .bind(tenant.as_uuid())
            .bind(key)
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?;
        row.as_ref().map(read).transpose()
    }

    /// [`Store::maybe_row_of`], `NotFound` when there is none (another tenant's row too).
    pub(crate) async fn row_of<T: for<'r> FromRow<'r, PgRow>>(
        &self,
        tenant: TenantId,
        sql: &'static str,
        key: Uuid,
    ) -> Result<T> {
        self.maybe_row_of(tenant, sql, key).await?.ok_or(StoreError::NotFound)
    }

    /// Deletes the row of `tenant` that `sql` names by `key` (the tenant is `$1`, the key `$2`):
    /// whether there was one.
    pub(crate) async fn delete_row_of(&self, tenant: TenantId, sql: &'static str, key: Uuid) -> Result<bool> {
        delete_row_on(&mut *self.as_tenant(tenant).await?, tenant, sql, key).await
    }
}

/// [`Store::delete_row_of`] on a connection already set to `tenant`.
pub(crate) async fn delete_row_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    sql: &'static str,
    key: Uuid,
) -> Result<bool> {
    let done = sqlx::query(sql).bind(tenant.as_uuid()).bind(key).execute(conn).await?;
    Ok(done.rows_affected() > 0)
}

/// A text column read as one of the core vocabularies; a name outside it is `Corrupt` (the
/// column's CHECK constraint should make that impossible).
pub(crate) fn vocab<T: std::str::FromStr<Err = hermes_core::UnknownName>>(text: &str) -> Result<T> {
    text.parse().map_err(|e: hermes_core::UnknownName| crate::StoreError::Corrupt(e.to_string()))
}
