//! Everything a claimed turn reads before it runs, on one connection.
//!
//! Each checkout of the tenant pool costs two round trips besides its statements (naming the
//! tenant, and sqlx's ping when the connection goes back), and Postgres spends more on those
//! than on these small indexed reads. Read one after another on one connection, the turn's
//! inputs cost one checkout instead of nine, and four to six statements (docs/PERFORMANCE.md).

use std::collections::BTreeSet;
use std::time::Duration;

use sqlx::PgConnection;

use hermes_core::audience::{ChatToolsets, ToolsetLimits};
use hermes_core::{InteractionAnswer, SessionId, TenantId, ToolsetName};

use crate::turns::{Claim, claim_next_turn_on};
use crate::{Agent, ClaimedTurn, CredentialPools, MemorySnapshot, Result, StoredMessage, views::Turns};

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
    /// The skill index versions (bundled, tenant) as [`Agents::skill_index_version`](crate::views::Agents::skill_index_version) reads them,
    /// so a cached skills index is checked without a checkout of its own.
    pub skill_versions: (i64, i64),
    /// The toolset limits of the turn's API key, chat and webhook, as they are now.
    pub limits: ToolsetLimits,
}

/// A claimed turn and its inputs, read on the claim's connection. Reading the inputs may fail
/// after the claim succeeded: the turn is the worker's then, and it ends the turn as it would
/// for any failed read.
#[derive(Debug)]
pub struct ClaimedWithInputs {
    pub turn: ClaimedTurn,
    pub inputs: Result<TurnInputs>,
}

impl Turns<'_> {
    /// Reads the inputs of `turn` on one connection.
    pub async fn turn_inputs(self, tenant: TenantId, turn: &ClaimedTurn) -> Result<TurnInputs> {
        turn_inputs_on(&mut *self.as_tenant(tenant).await?, tenant, turn).await
    }

    /// [`Turns::claim_next_turn`](crate::views::Turns::claim_next_turn), then the claimed turn's inputs on the same connection (one
    /// checkout instead of two).
    pub async fn claim_with_inputs(
        self,
        tenant: TenantId,
        session: SessionId,
        owner: &str,
        lease: Duration,
        token: i64,
    ) -> Result<Option<ClaimedWithInputs>> {
        let mut pooled = self.as_tenant(tenant).await?;
        let claim = Claim { session, owner, lease, token };
        let Some(turn) = claim_next_turn_on(&mut pooled, tenant, claim).await? else {
            return Ok(None);
        };
        let inputs = turn_inputs_on(&mut pooled, tenant, &turn).await;
        Ok(Some(ClaimedWithInputs { turn, inputs }))
    }
}

/// [`Turns::turn_inputs`](crate::views::Turns::turn_inputs) on a connection already set to `tenant`.
async fn turn_inputs_on(conn: &mut PgConnection, tenant: TenantId, turn: &ClaimedTurn) -> Result<TurnInputs> {
    let agent = crate::agents::agent_on(conn, tenant, turn.agent_id).await?;
    let messages = crate::messages::messages_after_on(conn, tenant, turn.session_id, 0, None).await?;
    let pools = crate::credentials::credential_pools_on(conn, tenant).await?;
    // A question is asked during a run, so only a turn claimed again can have an answer.
    let resolution = if turn.attempt > 1 {
        crate::interactions::turn_resolution_on(conn, tenant, turn.turn_id).await?
    } else {
        None
    };
    // The small reads in one statement: each statement is a round trip.
    let row: SmallReads = sqlx::query_as(SMALL_READS)
        .bind(tenant.as_uuid())
        .bind(turn.agent_id.as_uuid())
        .bind(turn.session_id.as_uuid())
        .bind(crate::skills::BUNDLED_SCOPE)
        .bind(turn.turn_id.as_uuid())
        .bind(webhook_of(&turn.session_user_key))
        .fetch_one(&mut *conn)
        .await?;
    let SmallReads { capped, goal_active, bundled_skills, tenant_skills, grants, .. } = row;
    let limits = ToolsetLimits {
        api_key: row.key_toolsets,
        chat: row.chat_rules.and_then(|rules| rules.0.limit_for(&row.chat_id, row.group_chat).map(<[String]>::to_vec)),
        webhook: row.hook_toolsets,
    };
    let memory = if turn.system_prompt.is_none() && ToolsetName::Memory.enabled_in(&agent.toolsets) {
        Some(crate::memory::memory_snapshot_on(conn, tenant, agent.id, &turn.session_user_key).await?)
    } else {
        None
    };
    Ok(TurnInputs {
        agent,
        messages,
        pools,
        resolution,
        grants: grants.into_iter().collect(),
        capped,
        goal_active,
        memory,
        skill_versions: (bundled_skills, tenant_skills),
        limits,
    })
}

/// The turn's small reads: spending cap, goal, skill index versions, approval grants, and the
/// toolset limits of its API key, its chat's bot and its webhook.
const SMALL_READS: &str =
    "SELECT EXISTS (SELECT 1 FROM budgets WHERE tenant_id = $1 AND (agent_id IS NULL OR agent_id = $2)) AS capped,
            EXISTS (SELECT 1 FROM session_goals WHERE tenant_id = $1 AND session_id = $3 AND state = 'active')
                AS goal_active,
            COALESCE((SELECT version FROM skill_versions WHERE scope = $4), 0) AS bundled_skills,
            COALESCE((SELECT version FROM skill_versions WHERE scope = $1), 0) AS tenant_skills,
            ARRAY(SELECT pattern_key FROM approval_grants
                  WHERE tenant_id = $1 AND agent_id = $2 AND (session_id IS NULL OR session_id = $3)) AS grants,
            (SELECT k.toolsets FROM turns t JOIN api_keys k ON k.id = t.api_key_id
              WHERE t.tenant_id = $1 AND t.id = $5) AS key_toolsets,
            (SELECT c.toolsets FROM turns t
               JOIN channels c ON c.tenant_id = t.tenant_id AND c.id = (t.reply_to ->> 'channel_id')::uuid
              WHERE t.tenant_id = $1 AND t.id = $5 AND c.toolsets <> '{}'::jsonb) AS chat_rules,
            COALESCE((SELECT t.reply_to ->> 'chat_id' FROM turns t WHERE t.tenant_id = $1 AND t.id = $5), '')
                AS chat_id,
            COALESCE((SELECT (t.reply_to ->> 'group')::boolean FROM turns t WHERE t.tenant_id = $1 AND t.id = $5),
                     false) AS group_chat,
            (SELECT w.toolsets FROM webhooks w WHERE w.tenant_id = $1 AND w.id = $6) AS hook_toolsets";

#[derive(sqlx::FromRow)]
struct SmallReads {
    capped: bool,
    goal_active: bool,
    bundled_skills: i64,
    tenant_skills: i64,
    grants: Vec<String>,
    key_toolsets: Option<Vec<String>>,
    chat_rules: Option<sqlx::types::Json<ChatToolsets>>,
    chat_id: String,
    group_chat: bool,
    hook_toolsets: Option<Vec<String>>,
}

/// The webhook a session of `user_key` belongs to (`webhook:<id>`), if any.
fn webhook_of(user_key: &str) -> Option<uuid::Uuid> {
    user_key.strip_prefix("webhook:").and_then(|id| id.parse().ok())
}
