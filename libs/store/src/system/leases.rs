//! A worker's heartbeat: the leases of every turn it runs, whatever their tenants, extended in
//! one statement a beat. One statement per turn (with its tenant's `set_config`) was 5,000
//! statements a second at 10,000 waiting turns, and that alone filled both cores.

use std::time::Duration;

use hermes_core::{TenantId, TurnId};

use crate::turns::{LeaseState, TurnStatus};
use crate::{Result, views::System};

/// A lease a worker holds: which turn, of which tenant, under which owner.
#[derive(Debug, Clone, Copy)]
pub struct HeldLease<'a> {
    pub tenant: TenantId,
    pub turn: TurnId,
    pub owner: &'a str,
}

#[derive(sqlx::FromRow)]
struct LeaseRow {
    #[sqlx(try_from = "crate::rows::Id")]
    id: TurnId,
    extended: bool,
    cancel: bool,
    /// Another statement holds the row (a finish, a cancellation): not extended this beat.
    busy: bool,
    /// `None` when the turn is gone.
    status: Option<String>,
}

impl System<'_> {
    /// Extends each lease in `held` that its owner still holds on a running turn, by `lease`,
    /// and says for each what it found. A row another statement has locked is skipped (`Busy`)
    /// rather than waited for: a heartbeat never queues behind a turn's own finish, and never
    /// deadlocks with it. The pair (tenant, turn) must match: a turn named with another
    /// tenant's id is `Lost`, never extended.
    pub async fn extend_leases(self, held: &[HeldLease<'_>], lease: Duration) -> Result<Vec<(TurnId, LeaseState)>> {
        if held.is_empty() {
            return Ok(Vec::new());
        }
        let tenants: Vec<uuid::Uuid> = held.iter().map(|h| h.tenant.as_uuid()).collect();
        let turns: Vec<uuid::Uuid> = held.iter().map(|h| h.turn.as_uuid()).collect();
        let owners: Vec<&str> = held.iter().map(|h| h.owner).collect();
        let rows: Vec<LeaseRow> = sqlx::query_as(
            "WITH held AS (
                SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS h(tenant_id, id, owner)
             ), mine AS (
                SELECT t.tenant_id, t.id FROM turns t
                JOIN held h ON t.tenant_id = h.tenant_id AND t.id = h.id AND t.lease_owner = h.owner
                WHERE t.status = 'running'
                ORDER BY t.tenant_id, t.id
                FOR UPDATE OF t SKIP LOCKED
             ), extended AS (
                UPDATE turns t SET lease_expires_at = now() + make_interval(secs => $4)
                FROM mine m WHERE t.tenant_id = m.tenant_id AND t.id = m.id
                RETURNING t.tenant_id, t.id, t.cancel_requested_at IS NOT NULL AS cancel
             )
             SELECT h.id, e.id IS NOT NULL AS extended, coalesce(e.cancel, false) AS cancel,
                    coalesce(e.id IS NULL AND t.status = 'running' AND t.lease_owner = h.owner, false) AS busy,
                    t.status::text AS status
             FROM held h
             LEFT JOIN extended e ON e.tenant_id = h.tenant_id AND e.id = h.id
             LEFT JOIN turns t ON t.tenant_id = h.tenant_id AND t.id = h.id",
        )
        .bind(&tenants)
        .bind(&turns)
        .bind(&owners)
        .bind(lease.as_secs_f64())
        .fetch_all(self.system_pool())
        .await?;
        rows.into_iter().map(|row| Ok((row.id, lease_state(&row)?))).collect()
    }
}

fn lease_state(row: &LeaseRow) -> Result<LeaseState> {
    let status = row.status.as_deref().map(crate::rows::vocab::<TurnStatus>).transpose()?;
    Ok(match (row.extended, row.cancel, row.busy, status) {
        (true, true, _, _) => LeaseState::CancelRequested,
        (true, false, _, _) => LeaseState::Held,
        (false, _, true, _) => LeaseState::Busy,
        (false, _, _, Some(s)) if s.is_final() => LeaseState::Ended,
        _ => LeaseState::Lost,
    })
}
