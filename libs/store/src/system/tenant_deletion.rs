//! Deleting a tenant and everything it owns, in three steps that can each be run again:
//!
//! 1. [`begin_tenant_deletion`]: in one transaction, the tenant is marked (`deleting_since`)
//!    and every way in is removed: API keys, chat channels, webhooks, event hooks, cron jobs,
//!    memberships, invitations, admin tokens, single sign-on, and the people who belong to no
//!    other tenant. From its commit no request, message, trigger or schedule reaches the tenant;
//!    a turn already queued finds its rows gone and ends.
//! 2. [`purge_tenant_rows`]: every table holding the tenant's rows (found from the schema,
//!    `tenant_tables`) is emptied in small batches, each its own short transaction, tables that
//!    others reference last, so no statement holds locks or cascades for long and turns of
//!    other tenants go on.
//! 3. [`finish_tenant_deletion`]: one last count of every table, then the tenant's row, in the
//!    transaction that records the deletion in the installation's audit log (the tenant's own
//!    entries went with it).
//!
//! A process that dies between the steps leaves the mark; the scheduler resumes marked tenants
//! ([`unfinished_tenant_deletions`]). The batches run as the tenant role (row-level security
//! keeps a wrong condition from reaching another tenant); the audit log, append-only, goes
//! through a function that deletes only a marked tenant's entries; the people and the tenant's
//! row need the system role.
//!
//! [`begin_tenant_deletion`]: crate::views::System::begin_tenant_deletion
//! [`purge_tenant_rows`]: crate::views::System::purge_tenant_rows
//! [`finish_tenant_deletion`]: crate::views::System::finish_tenant_deletion
//! [`unfinished_tenant_deletions`]: crate::views::System::unfinished_tenant_deletions

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::AssertSqlSafe;

use hermes_core::TenantId;

use crate::admin::{Audit, Change};
use crate::tenant_tables::{self, OwnedTable};
use crate::{Result, StoreError, views::System};

/// The ways into a tenant, removed in the first step: each `WHERE tenant_id = $1`.
const ENTRY_POINTS: [&str; 10] = [
    "api_keys",
    "channels",
    "webhooks",
    "event_hooks",
    "cron_jobs",
    "invitations",
    "admin_tokens",
    "tenant_identity_providers",
    "process_watches",
    "memberships",
];

/// The one table the tenant role may not delete from (append-only).
const AUDIT_LOG: &str = "audit_log";

/// Rows removed, table by table.
pub type Removed = BTreeMap<String, u64>;

impl System<'_> {
    /// Step 1: marks `tenant` as being deleted and removes every way into it (see the module
    /// docs), recorded as `tenant.deletion_started` in the installation's log. Returns the
    /// tenant's name and what went. `NotFound` when there is no such tenant. Running it again on
    /// a marked tenant removes whatever way in appeared since.
    pub async fn begin_tenant_deletion(self, tenant: TenantId, by: &Audit) -> Result<(String, Removed)> {
        let mut tx = self.system_pool().begin().await?;
        let (name, marked): (String, bool) =
            sqlx::query_as("SELECT name, deleting_since IS NOT NULL FROM tenants WHERE id = $1 FOR UPDATE")
                .bind(tenant.as_uuid())
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
        sqlx::query("UPDATE tenants SET deleting_since = now() WHERE id = $1 AND deleting_since IS NULL")
            .bind(tenant.as_uuid())
            .execute(&mut *tx)
            .await?;
        // Its open turns are asked to stop (a worker checks between steps); those still
        // writing when their tables are emptied are caught by the last count.
        sqlx::query(
            "UPDATE turns SET cancel_requested_at = coalesce(cancel_requested_at, now())
             WHERE tenant_id = $1 AND status IN ('queued', 'running', 'waiting')",
        )
        .bind(tenant.as_uuid())
        .execute(&mut *tx)
        .await?;
        let mut removed = Removed::new();
        // People whose only tenant this is, operators aside, go with it (their memberships,
        // console sessions, identities and links cascade).
        let people = sqlx::query(
            "DELETE FROM people p WHERE NOT p.operator
               AND EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = p.id AND m.tenant_id = $1)
               AND NOT EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = p.id AND m.tenant_id <> $1)",
        )
        .bind(tenant.as_uuid())
        .execute(&mut *tx)
        .await?;
        removed.insert("people".into(), people.rows_affected());
        for table in ENTRY_POINTS {
            let sql = format!("DELETE FROM \"{table}\" WHERE tenant_id = $1");
            let done = sqlx::query(AssertSqlSafe(sql)).bind(tenant.as_uuid()).execute(&mut *tx).await?;
            removed.insert(table.into(), done.rows_affected());
        }
        sqlx::query("DELETE FROM console_sessions WHERE limited_to_tenant = $1")
            .bind(tenant.as_uuid())
            .execute(&mut *tx)
            .await?;
        if !marked {
            let change = Change::new("tenant.deletion_started", "tenant", tenant)
                .before(serde_json::json!({ "name": name }))
                .after(&removed);
            crate::admin::audit::record(&mut tx, None, by, change).await?;
        }
        tx.commit().await?;
        Ok((name, removed))
    }

    /// Step 2: empties every table holding `tenant`'s rows, `batch` rows a statement, until
    /// none is left. Refuses a tenant that is not marked (step 1 comes first) and a schema
    /// with a table no one classified (`tenant_tables`).
    pub async fn purge_tenant_rows(self, tenant: TenantId, batch: i64) -> Result<Removed> {
        self.require_marked(tenant).await?;
        let tables = tenant_tables::owned_tables(&mut *self.system_pool().acquire().await?).await?;
        let mut removed = Removed::new();
        for table in tables.iter().filter(|t| t.by_tenant_column) {
            let mut total = 0u64;
            loop {
                let n = self.delete_batch(tenant, table, batch).await?;
                total += n;
                if n < u64::try_from(batch).unwrap_or(u64::MAX) {
                    break;
                }
            }
            if total > 0 {
                removed.insert(table.name.clone(), total);
            }
        }
        Ok(removed)
    }

    async fn delete_batch(self, tenant: TenantId, table: &OwnedTable, batch: i64) -> Result<u64> {
        if table.name == AUDIT_LOG {
            // Append-only: its entries go only through this function, and only once the
            // tenant is marked (migration 0073).
            let gone: i64 = sqlx::query_scalar("SELECT hermes_forget_deleted_tenant_audit($1, $2)")
                .bind(tenant.as_uuid())
                .bind(i32::try_from(batch).unwrap_or(i32::MAX))
                .fetch_one(self.system_pool())
                .await?;
            return Ok(u64::try_from(gone).unwrap_or(0));
        }
        let name = table.quoted();
        let sql = format!(
            "DELETE FROM {name} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {name} WHERE {} LIMIT $2))",
            table.condition
        );
        let query = sqlx::query(AssertSqlSafe(sql)).bind(tenant.as_uuid()).bind(batch);
        Ok(query.execute(&mut *self.as_tenant(tenant).await?).await?.rows_affected())
    }

    /// Step 3: counts every table once more and, when nothing of `tenant`'s is left but its
    /// own row (and what only cascades from it), deletes that row and records
    /// `tenant.deleted` in the installation's log, in one transaction. `Busy` naming the
    /// tables when rows appeared since the purge (run step 2 again).
    pub async fn finish_tenant_deletion(self, tenant: TenantId, by: &Audit, removed: &Removed) -> Result<()> {
        let mut tx = self.system_pool().begin().await?;
        let name: String =
            sqlx::query_scalar("SELECT name FROM tenants WHERE id = $1 AND deleting_since IS NOT NULL FOR UPDATE")
                .bind(tenant.as_uuid())
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
        let tables = tenant_tables::owned_tables(&mut tx).await?;
        let mut left = Vec::new();
        for table in tables.iter().filter(|t| t.by_tenant_column) {
            let sql = format!("SELECT EXISTS (SELECT 1 FROM {} WHERE {})", table.quoted(), table.condition);
            let any: bool = sqlx::query_scalar(AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_one(&mut *tx).await?;
            if any {
                left.push(table.name.clone());
            }
        }
        if !left.is_empty() {
            return Err(StoreError::Busy(format!("rows of the tenant appeared while it was deleted: {left:?}")));
        }
        sqlx::query("DELETE FROM skill_versions WHERE scope = $1").bind(tenant.as_uuid()).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM tenants WHERE id = $1").bind(tenant.as_uuid()).execute(&mut *tx).await?;
        let change =
            Change::new("tenant.deleted", "tenant", tenant).before(serde_json::json!({ "name": name })).after(removed);
        crate::admin::audit::record(&mut tx, None, by, change).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Tenants marked for deletion before `before` and still there: a process died between
    /// the steps (or is still at them: the steps may run twice at once).
    pub async fn unfinished_tenant_deletions(self, before: DateTime<Utc>) -> Result<Vec<TenantId>> {
        let rows = sqlx::query(
            "SELECT id AS tenant_id FROM tenants WHERE deleting_since < $1 ORDER BY deleting_since LIMIT 100",
        )
        .bind(before)
        .fetch_all(self.system_pool())
        .await?;
        rows.iter().map(crate::rows::tenant_of).collect()
    }

    /// The tenants deleted here (as the installation's log records) or being deleted: their
    /// sandboxes and workspaces may go. A tenant the database does not know is not among them,
    /// so a worker pointed at the wrong database removes nothing.
    pub async fn deleted_tenants(self) -> Result<Vec<TenantId>> {
        let rows = sqlx::query(
            "SELECT id AS tenant_id FROM tenants WHERE deleting_since IS NOT NULL
             UNION
             SELECT object_id::uuid FROM audit_log
             WHERE tenant_id IS NULL AND action = 'tenant.deleted'
               AND object_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'",
        )
        .fetch_all(self.system_pool())
        .await?;
        rows.iter().map(crate::rows::tenant_of).collect()
    }

    async fn require_marked(self, tenant: TenantId) -> Result<()> {
        let marked: Option<bool> = sqlx::query_scalar("SELECT deleting_since IS NOT NULL FROM tenants WHERE id = $1")
            .bind(tenant.as_uuid())
            .fetch_optional(self.system_pool())
            .await?;
        match marked {
            Some(true) => Ok(()),
            Some(false) => Err(StoreError::Invalid("the tenant's deletion has not begun".into())),
            None => Err(StoreError::NotFound),
        }
    }
}
