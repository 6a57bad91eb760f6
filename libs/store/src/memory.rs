//! Curated memory rows (see migration 0005): the agent's MEMORY and each end user's USER
//! profile, as ordered entries with a version for optimistic concurrency. What an entry may
//! say and how big a document may grow is decided by the caller (`hermes_agent::memory`).

use sqlx::{PgConnection, Row};

use hermes_core::{AgentId, TenantId};

use crate::admin::audited::tenant_writes;
use crate::{Result, StoreError, views::Agents};

/// Which document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryTarget {
    /// The agent's own notes, shared by everyone who talks to it.
    Memory,
    /// What the agent knows about one end user.
    User,
}

impl MemoryTarget {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryTarget::Memory => "memory",
            MemoryTarget::User => "user",
        }
    }
}

/// Both documents as one session starts with them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    pub memory: Vec<String>,
    pub user: Vec<String>,
}

/// How often a write is retried after losing a race with another session's write.
const MAX_ATTEMPTS: usize = 16;

impl Agents<'_> {
    /// The agent's MEMORY and `user_key`'s USER profile.
    pub async fn memory_snapshot(self, tenant: TenantId, agent: AgentId, user_key: &str) -> Result<MemorySnapshot> {
        memory_snapshot_on(&mut *self.as_tenant(tenant).await?, tenant, agent, user_key).await
    }
}

/// [`Agents::memory_snapshot`](crate::views::Agents::memory_snapshot) on a connection already set to `tenant`.
pub(crate) async fn memory_snapshot_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    user_key: &str,
) -> Result<MemorySnapshot> {
    let rows = sqlx::query(
        "SELECT target, entries FROM memories
         WHERE tenant_id = $1 AND agent_id = $2
           AND ((target = 'memory' AND user_key = '') OR (target = 'user' AND user_key = $3))",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(user_key)
    .fetch_all(conn)
    .await?;
    let mut snapshot = MemorySnapshot::default();
    for row in rows {
        let entries: Vec<String> = row.try_get("entries")?;
        match row.try_get::<String, _>("target")?.as_str() {
            "memory" => snapshot.memory = entries,
            _ => snapshot.user = entries,
        }
    }
    Ok(snapshot)
}

tenant_writes! {
    in Agents;
    /// Reads one document, lets `change` compute its new entries (`Ok(None)`: leave it as it
    /// is), and writes them if nobody else wrote in between; otherwise reads again and retries,
    /// so concurrent sessions never lose an update. Returns the entries as they now are, with
    /// what `change` returned last.
    pub async fn update_memory<E>(
        agent: AgentId,
        target: MemoryTarget,
        user_key: &str,
        change: impl FnMut(&[String]) -> std::result::Result<Option<Vec<String>>, E>,
    ) -> Result<std::result::Result<Vec<String>, E>>
        = update_memory_on;
}

/// [`Agents::update_memory`](crate::views::Agents::update_memory) on a connection already set to `tenant`.
async fn update_memory_on<E>(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    target: MemoryTarget,
    user_key: &str,
    mut change: impl FnMut(&[String]) -> std::result::Result<Option<Vec<String>>, E>,
) -> Result<std::result::Result<Vec<String>, E>> {
    let user_key = match target {
        MemoryTarget::Memory => "",
        MemoryTarget::User => user_key,
    };
    for _ in 0..MAX_ATTEMPTS {
        let row = sqlx::query(
            "SELECT entries, version FROM memories
             WHERE tenant_id = $1 AND agent_id = $2 AND target = $3 AND user_key = $4",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(target.as_str())
        .bind(user_key)
        .fetch_optional(&mut *conn)
        .await?;
        let (current, version): (Vec<String>, Option<i64>) = match row {
            Some(row) => (row.try_get("entries")?, Some(row.try_get("version")?)),
            None => (Vec::new(), None),
        };
        let next = match change(&current) {
            Ok(Some(next)) => next,
            Ok(None) => return Ok(Ok(current)),
            Err(e) => return Ok(Err(e)),
        };
        let written = match version {
            Some(version) => sqlx::query(
                "UPDATE memories SET entries = $5, version = version + 1, updated_at = now()
                 WHERE tenant_id = $1 AND agent_id = $2 AND target = $3 AND user_key = $4 AND version = $6",
            )
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .bind(target.as_str())
            .bind(user_key)
            .bind(&next)
            .bind(version)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
            None => sqlx::query(
                "INSERT INTO memories (tenant_id, agent_id, target, user_key, entries) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT DO NOTHING",
            )
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .bind(target.as_str())
            .bind(user_key)
            .bind(&next)
            .execute(&mut *conn)
            .await?
            .rows_affected(),
        };
        if written == 1 {
            return Ok(Ok(next));
        }
        tracing::debug!(target = target.as_str(), "memory write lost a race; retrying");
    }
    Err(StoreError::Conflict("memory is being changed by many sessions at once; try again".into()))
}
