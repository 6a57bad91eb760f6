//! Setting, pausing, resuming and dropping a session's goal from outside its turns: a chat's
//! `/goal` commands, `/api/sessions/{id}/goal` and the console (whose changes are audited: each
//! is also a method of [`AuditedTx`](crate::admin::AuditedTx)). The judge's steps are in
//! [`crate::goals`].

use sqlx::PgConnection;

use hermes_core::{AgentId, ApiKeyId, ChatMessage, SessionId, TenantId, TurnId};

use crate::admin::audited::tenant_writes;
use crate::goals::{Goal, continuation, drop_continuations};
use crate::{NewTurn, Result, StoreError, TurnTarget};

tenant_writes! {
    in Conversations;
    /// Sets `goal` (with `subgoals`) on the session, replacing any other (a step of it still
    /// waiting is dropped), and queues the turn that takes its first step, under `api_key`
    /// when an API client set it (its limits and usage): what `/goal TEXT` does in a chat, for
    /// the API and the console. `NotFound` for a session that is not the tenant's.
    pub async fn start_goal(
        session: SessionId,
        goal: &str,
        subgoals: &[String],
        max_turns: i32,
        api_key: Option<ApiKeyId>,
    ) -> Result<(Goal, TurnId)> = start_goal_on in transaction;

    /// Resumes the goal with a fresh budget and, when the session has no turn waiting or at
    /// work, queues the next step (under `api_key`, as [`start_goal`](Self::start_goal)).
    /// `None` when the session has no goal.
    pub async fn resume_goal(session: SessionId, api_key: Option<ApiKeyId>)
        -> Result<Option<(Goal, Option<TurnId>)>> = resume_goal_on in transaction;

    /// Pauses (`active: false`) or resumes the goal; resuming gives it a fresh budget. A pause
    /// also drops a continuation still waiting in the queue.
    pub async fn set_goal_active(session: SessionId, active: bool) -> Result<Option<Goal>> = set_goal_active_on in transaction;

    /// Removes the goal (and a continuation still waiting); `false` when there was none.
    pub async fn clear_goal(session: SessionId) -> Result<bool> = clear_goal_on in transaction;
}

async fn start_goal_on(
    tx: &mut PgConnection,
    tenant: TenantId,
    session: SessionId,
    goal: &str,
    subgoals: &[String],
    max_turns: i32,
    api_key: Option<ApiKeyId>,
) -> Result<(Goal, TurnId)> {
    let agent: Option<crate::rows::Id> =
        sqlx::query_scalar("SELECT agent_id FROM sessions WHERE tenant_id = $1 AND id = $2 FOR UPDATE")
            .bind(tenant.as_uuid())
            .bind(session.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
    let agent = AgentId::from(agent.ok_or(StoreError::NotFound)?);
    let subgoals: Vec<String> = subgoals.iter().map(|s| crate::messages::without_nul(s)).collect();
    let goal: Goal = sqlx::query_as(
        "INSERT INTO session_goals (tenant_id, session_id, goal, max_turns, subgoals) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (tenant_id, session_id) DO UPDATE SET goal = $3, max_turns = $4, state = 'active',
             subgoals = $5, turns_used = 0, judge_failures = 0, last_reason = NULL, updated_at = now()
         RETURNING *",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(crate::messages::without_nul(goal))
    .bind(max_turns)
    .bind(&subgoals)
    .fetch_one(&mut *tx)
    .await?;
    drop_continuations(&mut *tx, tenant, session).await?;
    // Marked as every step is, so a pause or a new goal drops it while it waits.
    let text = continuation(&goal.goal, &goal.subgoals);
    let first = NewTurn { api_key, ..NewTurn::new(agent, TurnTarget::Existing(session), ChatMessage::user(text)) };
    let (_, turn) = crate::turns::enqueue_in(tx, tenant, &first).await?;
    Ok((goal, turn))
}

async fn resume_goal_on(
    tx: &mut PgConnection,
    tenant: TenantId,
    session: SessionId,
    api_key: Option<ApiKeyId>,
) -> Result<Option<(Goal, Option<TurnId>)>> {
    let Some(goal) = set_goal_active_on(&mut *tx, tenant, session, true).await? else { return Ok(None) };
    let (agent, busy): (crate::rows::Id, bool) = sqlx::query_as(
        "SELECT s.agent_id, EXISTS (SELECT 1 FROM turns t WHERE t.tenant_id = $1 AND t.session_id = $2
                                      AND t.status IN ('queued', 'running', 'waiting'))
         FROM sessions s WHERE s.tenant_id = $1 AND s.id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .fetch_one(&mut *tx)
    .await?;
    if busy {
        // The running turn is judged when it ends, and the goal goes on from there.
        return Ok(Some((goal, None)));
    }
    let text = continuation(&goal.goal, &goal.subgoals);
    let next =
        NewTurn { api_key, ..NewTurn::new(agent.into(), TurnTarget::Existing(session), ChatMessage::user(text)) };
    let (_, turn) = crate::turns::enqueue_in(tx, tenant, &next).await?;
    Ok(Some((goal, Some(turn))))
}

async fn set_goal_active_on(
    tx: &mut PgConnection,
    tenant: TenantId,
    session: SessionId,
    active: bool,
) -> Result<Option<Goal>> {
    let goal: Option<Goal> = sqlx::query_as(
        "UPDATE session_goals SET state = CASE WHEN $3 THEN 'active' ELSE 'paused' END,
                turns_used = CASE WHEN $3 THEN 0 ELSE turns_used END, judge_failures = 0, updated_at = now()
         WHERE tenant_id = $1 AND session_id = $2 RETURNING *",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(active)
    .fetch_optional(&mut *tx)
    .await?;
    if !active {
        drop_continuations(tx, tenant, session).await?;
    }
    Ok(goal)
}

async fn clear_goal_on(tx: &mut PgConnection, tenant: TenantId, session: SessionId) -> Result<bool> {
    let done = sqlx::query("DELETE FROM session_goals WHERE tenant_id = $1 AND session_id = $2")
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .execute(&mut *tx)
        .await?;
    drop_continuations(tx, tenant, session).await?;
    Ok(done.rows_affected() > 0)
}
