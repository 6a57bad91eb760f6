//! How an agent uses its skills (views, uses, pins) and the curator that tidies the skills an
//! agent wrote itself: unused for 30 days they are marked stale, for 90 archived (hidden from
//! the index); pinned ones are exempt; a stale or archived skill that is used again is active.
//! Every change is logged in `skill_events` (by `skills.rs`'s log, which every change to a
//! skill goes through). Picking the agents due a pass spans tenants:
//! [`crate::system::curator`].

use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

use hermes_core::{AgentId, SkillState, TenantId};

use crate::skills::{bump_version, log_event};
use crate::{Result, StoreError, views::Agents};

/// What happened to a skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkillUse {
    /// Its text was read (`skill_view`).
    Viewed,
    /// It was loaded for a task (`/skill-name`).
    Used,
}

/// The curator's thresholds.
#[derive(Debug, Clone, Copy)]
pub struct CuratorRules {
    pub stale_after: Duration,
    pub archive_after: Duration,
}

impl Default for CuratorRules {
    fn default() -> Self {
        Self { stale_after: Duration::days(30), archive_after: Duration::days(90) }
    }
}

/// One change the curator made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuratorChange {
    pub name: String,
    pub from: SkillState,
    pub to: SkillState,
}

/// An entry of the skill log.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct SkillEvent {
    pub name: String,
    pub action: String,
    pub actor: String,
    pub detail: Value,
    pub created_at: DateTime<Utc>,
}

/// A skill the curator looks at: its state, whether it is pinned, and when it was last touched.
#[derive(sqlx::FromRow)]
struct Curated {
    name: String,
    #[sqlx(try_from = "String")]
    state: SkillState,
    pinned: bool,
    last_touched: DateTime<Utc>,
}

impl Agents<'_> {
    /// Counts a view or a use of `name` by `agent` at `now`; a stale or archived skill becomes
    /// active again.
    pub async fn record_skill_use(
        self,
        tenant: TenantId,
        agent: AgentId,
        name: &str,
        kind: SkillUse,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let (views, uses) = match kind {
            SkillUse::Viewed => (1, 0),
            SkillUse::Used => (0, 1),
        };
        let mut tx = self.tenant_tx(tenant).await?;
        let revived: Option<String> = sqlx::query_scalar(
            "WITH before AS (
                SELECT state FROM skill_usage WHERE tenant_id = $1 AND agent_id = $2 AND name = $3 FOR UPDATE
             ), upsert AS (
                INSERT INTO skill_usage (tenant_id, agent_id, name, view_count, use_count, last_used_at)
                VALUES ($1, $2, $3, $4, $5, $6)
                ON CONFLICT (tenant_id, agent_id, name) DO UPDATE SET
                    view_count = skill_usage.view_count + $4, use_count = skill_usage.use_count + $5,
                    last_used_at = $6, state = 'active',
                    state_changed_at = CASE WHEN skill_usage.state <> 'active' THEN $6 ELSE skill_usage.state_changed_at END
             )
             SELECT state FROM before WHERE state <> 'active'",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(name)
        .bind(views)
        .bind(uses)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(from) = revived.as_deref().map(crate::rows::vocab::<SkillState>).transpose()? {
            log_event(&mut tx, tenant, Some(agent), name, "revive", "usage", &json!({"from": from})).await?;
            bump_version(&mut tx, tenant.as_uuid()).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Pins (exempts from the curator) or unpins a skill for `agent`.
    pub async fn set_skill_pinned(self, tenant: TenantId, agent: AgentId, name: &str, pinned: bool) -> Result<()> {
        let mut tx = self.tenant_tx(tenant).await?;
        sqlx::query(
            "INSERT INTO skill_usage (tenant_id, agent_id, name, pinned) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, agent_id, name) DO UPDATE SET pinned = $4",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(name)
        .bind(pinned)
        .execute(&mut *tx)
        .await
        .map_err(StoreError::not_found_on_foreign_key)?;
        let action = if pinned { "pin" } else { "unpin" };
        log_event(&mut tx, tenant, Some(agent), name, action, "operator", &Value::Null).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The agent's skill log, newest first.
    pub async fn skill_events(self, tenant: TenantId, agent: AgentId, limit: i64) -> Result<Vec<SkillEvent>> {
        Ok(sqlx::query_as::<_, SkillEvent>(
            "SELECT name, action, actor, detail, created_at FROM skill_events
             WHERE tenant_id = $1 AND agent_id = $2 ORDER BY id DESC LIMIT $3",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(limit)
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// One curator pass over the skills `agent` wrote: unused (no use, view or change) for
    /// `rules.stale_after` become stale, for `rules.archive_after` archived; pinned are exempt.
    pub async fn curate_agent_skills(
        self,
        tenant: TenantId,
        agent: AgentId,
        now: DateTime<Utc>,
        rules: CuratorRules,
    ) -> Result<Vec<CuratorChange>> {
        let mut tx = self.tenant_tx(tenant).await?;
        let rows = sqlx::query(
            "SELECT s.name, COALESCE(u.state, 'active') AS state, COALESCE(u.pinned, false) AS pinned,
                    GREATEST(COALESCE(u.last_used_at, s.updated_at), s.updated_at) AS last_touched
             FROM skills s
             LEFT JOIN skill_usage u ON u.tenant_id = s.tenant_id AND u.agent_id = s.agent_id AND u.name = s.name
             WHERE s.tenant_id = $1 AND s.agent_id = $2
             FOR UPDATE OF s",
        )
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .fetch_all(&mut *tx)
        .await?;
        let mut changes = Vec::new();
        for row in &rows {
            // A state outside its vocabulary is `Corrupt`.
            let Curated { name, state, pinned, last_touched } = crate::rows::read(row)?;
            let idle = now - last_touched;
            let verdict = if pinned {
                SkillState::Active
            } else if idle >= rules.archive_after {
                SkillState::Archived
            } else if idle >= rules.stale_after {
                SkillState::Stale
            } else {
                SkillState::Active
            };
            if verdict == state || (pinned && state == SkillState::Active) {
                continue;
            }
            sqlx::query(
                "INSERT INTO skill_usage (tenant_id, agent_id, name, state, state_changed_at) VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (tenant_id, agent_id, name) DO UPDATE SET state = $4, state_changed_at = $5",
            )
            .bind(tenant.as_uuid())
            .bind(agent.as_uuid())
            .bind(&name)
            .bind(verdict.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let detail = json!({"from": state, "to": verdict, "idle_days": idle.num_days()});
            log_event(&mut tx, tenant, Some(agent), &name, verdict.as_str(), "curator", &detail).await?;
            changes.push(CuratorChange { name, from: state, to: verdict });
        }
        if !changes.is_empty() {
            bump_version(&mut tx, tenant.as_uuid()).await?;
        }
        tx.commit().await?;
        Ok(changes)
    }
}
