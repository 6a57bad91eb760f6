//! A tenant's data past its retention (issue 42): finished turns (their streams, questions,
//! stored Responses API objects and files go with them), the files turns were given (not while
//! their turn is open: one may wait days on an approval), and usage
//! detail (one row per model call; the daily totals stay), each after the tenant's own period
//! or else the installation's (`retention.*`). Sessions have their own sweep
//! ([`prune_sessions`](crate::views::System::prune_sessions)).
//!
//! Tenant by tenant, each batch its own short statement on a partial or leading-`tenant_id`
//! index, so a sweep never holds for long a lock a turn waits on, and a tenant with years of
//! data to drop does not hold up the others for more than a batch at a time.

use hermes_core::TenantId;
use sqlx::AssertSqlSafe;

use crate::{Result, views::System};

/// The installation's periods in days (0 keeps).
#[derive(Debug, Clone, Copy, Default)]
pub struct RetentionDefaults {
    pub turns_days: u32,
    pub files_days: u32,
    pub usage_detail_days: u32,
}

/// What one sweep deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub turns: u64,
    pub files: u64,
    pub usage_detail: u64,
}

/// One kind of data with a retention period: its tenant column and its delete of one batch
/// (`$1` the tenant, `$2` the days, `$3` the batch).
struct Kind {
    column: &'static str,
    batch: &'static str,
}

const TURNS: Kind = Kind {
    column: "turn_retention_days",
    batch: "DELETE FROM turns WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM turns WHERE tenant_id = $1 AND finished_at IS NOT NULL
                  AND finished_at < now() - make_interval(days => $2)
                  AND status IN ('completed', 'failed', 'cancelled')
                LIMIT $3))",
};

const FILES: Kind = Kind {
    column: "file_retention_days",
    batch: "DELETE FROM turn_files WHERE ctid = ANY(ARRAY(
                SELECT f.ctid FROM turn_files f
                WHERE f.tenant_id = $1 AND f.created_at < now() - make_interval(days => $2)
                  AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.tenant_id = f.tenant_id AND u.id = f.turn_id
                                  AND u.status IN ('queued', 'running', 'waiting'))
                LIMIT $3))",
};

const USAGE_DETAIL: Kind = Kind {
    column: "usage_detail_retention_days",
    batch: "DELETE FROM model_calls WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM model_calls WHERE tenant_id = $1 AND created_at < now() - make_interval(days => $2)
                LIMIT $3))",
};

impl System<'_> {
    /// Deletes every tenant's finished turns, files and usage detail past their periods,
    /// `batch` rows a statement.
    pub async fn prune_past_retention(self, defaults: RetentionDefaults, batch: i64) -> Result<Pruned> {
        Ok(Pruned {
            turns: self.prune_kind(&TURNS, defaults.turns_days, batch).await?,
            files: self.prune_kind(&FILES, defaults.files_days, batch).await?,
            usage_detail: self.prune_kind(&USAGE_DETAIL, defaults.usage_detail_days, batch).await?,
        })
    }

    async fn prune_kind(self, kind: &Kind, default_days: u32, batch: i64) -> Result<u64> {
        let sql = format!(
            "SELECT id AS tenant_id, coalesce({col}, $1) AS days FROM tenants
             WHERE coalesce({col}, $1) > 0 AND deleting_since IS NULL",
            col = kind.column
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(i32::try_from(default_days).unwrap_or(i32::MAX))
            .fetch_all(self.system_pool())
            .await?;
        let mut total = 0;
        for row in &rows {
            let tenant: TenantId = crate::rows::tenant_of(row)?;
            let days: i32 = sqlx::Row::try_get(row, "days")?;
            loop {
                let done = sqlx::query(kind.batch)
                    .bind(tenant.as_uuid())
                    .bind(days)
                    .bind(batch)
                    .execute(self.system_pool())
                    .await?
                    .rows_affected();
                total += done;
                if done < u64::try_from(batch).unwrap_or(u64::MAX) {
                    break;
                }
            }
        }
        Ok(total)
    }
}
