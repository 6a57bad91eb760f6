//! Everything a claimed turn reads before it runs, on one connection.
//!
//! Each checkout of the tenant pool costs two round trips besides its statements (naming the
//! tenant, and sqlx's ping when the connection goes back), and Postgres spends more on those
//! than on these small indexed reads. Read one after another on one connection, the turn's
//! inputs cost one checkout instead of eight (docs/PERFORMANCE.md).

use std::collections::BTreeSet;

use sqlx::PgConnection;

use hermes_core::{InteractionAnswer, TenantId, ToolsetName};

use crate::{Agent, ClaimedTurn, CredentialPools, MemorySnapshot, Result, Store, StoredMessage};

/// What a claimed turn needs to plan its run.
#[derive(Debug)]
pub struct TurnInputs {
    pub agent: Agent,
    /// The session's transcript so far.
    pub messages: Vec<StoredMessage>,
    pub pools: CredentialPools,
    /// The latest answer to one of the turn's questions, when it resumes after one.
    pub resolution: Option<(String, InteractionAnswer)>,
    /// Command patterns allowed for the agent and this session.
    pub grants: BTreeSet<String>,
    /// Whether a spending cap covers the agent. Read once a turn: a cap set while a turn runs
    /// applies from the next one.
    pub capped: bool,
    /// Whether the session has an active goal (only then is the answer judged against one).
    pub goal_active: bool,
    /// MEMORY and USER as they are now, for a session whose prompt is not frozen yet and whose
    /// agent keeps memory.
    pub memory: Option<MemorySnapshot>,
}

impl Store {
    /// Reads the inputs of `turn` on one connection.
    pub async fn turn_inputs(&self, tenant: TenantId, turn: &ClaimedTurn) -> Result<TurnInputs> {
        let mut pooled = self.as_tenant(tenant).await?;
        let conn: &mut PgConnection = &mut pooled;
        let agent = crate::agents::agent_on(conn, tenant, turn.agent_id).await?;
        let messages = crate::messages::messages_after_on(conn, tenant, turn.session_id, 0, None).await?;
        let pools = crate::credentials::credential_pools_on(conn, tenant).await?;
        let resolution = crate::interactions::turn_resolution_on(conn, tenant, turn.turn_id).await?;
        let grants = crate::interactions::approval_grants_on(conn, tenant, turn.agent_id, turn.session_id).await?;
        let (capped, goal_active): (bool, bool) = sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM budgets WHERE tenant_id = $1 AND (agent_id IS NULL OR agent_id = $2)),
                    EXISTS (SELECT 1 FROM session_goals WHERE tenant_id = $1 AND session_id = $3 AND state = 'active')",
        )
        .bind(tenant.as_uuid())
        .bind(turn.agent_id.as_uuid())
        .bind(turn.session_id.as_uuid())
        .fetch_one(&mut *conn)
        .await?;
        let memory = if turn.system_prompt.is_none() && ToolsetName::Memory.enabled_in(&agent.toolsets) {
            Some(crate::memory::memory_snapshot_on(conn, tenant, agent.id, &turn.session_user_key).await?)
        } else {
            None
        };
        Ok(TurnInputs { agent, messages, pools, resolution, grants, capped, goal_active, memory })
    }
}
