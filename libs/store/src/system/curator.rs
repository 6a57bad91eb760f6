//! The skill curator's claims: agents of any tenant that are idle and due a curator pass.

use chrono::{DateTime, Duration, Utc};
use sqlx::Row;

use hermes_core::{AgentId, TenantId};

use crate::rows::Id;
use crate::{Result, views::System};

impl System<'_> {
    /// Agents the curator should visit at `now`: idle for `idle` (no session activity) and not
    /// curated within `every`. Claims them by setting `curated_at`, so replicas never overlap.
    pub async fn claim_agents_for_curation(
        self,
        now: DateTime<Utc>,
        idle: Duration,
        every: Duration,
        limit: i64,
    ) -> Result<Vec<(TenantId, AgentId)>> {
        let rows = sqlx::query(
            "UPDATE agents SET curated_at = $1 WHERE id IN (
                SELECT a.id FROM agents a
                WHERE (a.curated_at IS NULL OR a.curated_at < $1 - make_interval(secs => $3))
                  AND EXISTS (SELECT 1 FROM skills s WHERE s.tenant_id = a.tenant_id AND s.agent_id = a.id)
                  AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.tenant_id = a.tenant_id AND x.agent_id = a.id
                                  AND x.updated_at > $1 - make_interval(secs => $2))
                ORDER BY a.curated_at NULLS FIRST LIMIT $4
                FOR UPDATE SKIP LOCKED
             ) RETURNING tenant_id, id",
        )
        .bind(now)
        .bind(idle.num_seconds() as f64)
        .bind(every.num_seconds() as f64)
        .bind(limit)
        .fetch_all(self.system_pool())
        .await?;
        rows.iter().map(|r| Ok((crate::rows::tenant_of(r)?, r.try_get::<Id, _>("id")?.into()))).collect()
    }
}
