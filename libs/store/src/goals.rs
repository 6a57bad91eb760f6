//! Standing goals (`/goal`, migration 0032): one per session. The worker judges each finished
//! turn of a session with an active goal and takes the next step in one transaction
//! ([`Conversations::goal_step`](crate::views::Conversations::goal_step)): the goal's counters, the continuation turn and the chat's notice.

use sqlx::Row;

use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{AgentId, ChatMessage, GoalState, SessionId, TenantId, TurnId};

use crate::{NewTurn, Result, TurnTarget, views::Conversations};

/// A session's goal: the wire's view of its row.
pub use hermes_wire::v1::SessionGoal as Goal;

/// What the judge's verdict does to a goal.
#[derive(Debug, Clone)]
pub struct GoalStep {
    pub state: GoalState,
    pub turns_used: i32,
    pub judge_failures: i32,
    pub reason: String,
    /// Told to the chat the turn answered.
    pub notice: Option<String>,
    /// The next turn's input, when the goal goes on.
    pub continuation: Option<String>,
}

/// Queued turns whose input is a goal's continuation start with this.
pub const CONTINUATION_MARKER: &str = "[Continuing toward your standing goal]";

/// The input of the next turn toward `goal` (and its `/subgoal` criteria).
pub fn continuation(goal: &str, subgoals: &[String]) -> String {
    let mut text = format!("{CONTINUATION_MARKER}\nGoal: {goal}\n");
    if !subgoals.is_empty() {
        text.push_str("Also required (added along the way):\n");
        for (i, sub) in subgoals.iter().enumerate() {
            text.push_str(&format!("{}. {sub}\n", i + 1));
        }
    }
    text.push_str(
        "\nTake the next concrete step toward this goal. If it is done, say so plainly and stop; if you are \
         blocked or need me, say what is missing and stop.",
    );
    text
}

impl Conversations<'_> {
    /// Sets (or replaces) the session's goal, active with a fresh budget.
    pub async fn set_goal(self, tenant: TenantId, session: SessionId, goal: &str, max_turns: i32) -> Result<Goal> {
        let row = sqlx::query(
            "INSERT INTO session_goals (tenant_id, session_id, goal, max_turns) VALUES ($1, $2, $3, $4)
             ON CONFLICT (tenant_id, session_id) DO UPDATE SET goal = $3, max_turns = $4, state = 'active',
                 subgoals = '{}', turns_used = 0, judge_failures = 0, last_reason = NULL, updated_at = now()
             RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(crate::messages::without_nul(goal))
        .bind(max_turns)
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::rows::read::<Goal>(&row)
    }

    pub async fn goal(self, tenant: TenantId, session: SessionId) -> Result<Option<Goal>> {
        let sql = "SELECT * FROM session_goals WHERE tenant_id = $1 AND session_id = $2";
        self.maybe_row_of(tenant, sql, session.as_uuid()).await
    }

    /// Changes the goal's `/subgoal` criteria (`change` edits the list), unless the goal is
    /// done; `None` when there is no goal still going.
    pub async fn edit_subgoals(
        self,
        tenant: TenantId,
        session: SessionId,
        change: impl FnOnce(&mut Vec<String>),
    ) -> Result<Option<Goal>> {
        let mut tx = self.tenant_tx(tenant).await?;
        let row = sqlx::query(
            "SELECT * FROM session_goals WHERE tenant_id = $1 AND session_id = $2 AND state <> 'done' FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let mut subgoals: Vec<String> = row.try_get("subgoals")?;
        change(&mut subgoals);
        let subgoals: Vec<String> = subgoals.iter().map(|s| crate::messages::without_nul(s)).collect();
        let row = sqlx::query(
            "UPDATE session_goals SET subgoals = $3, updated_at = now()
             WHERE tenant_id = $1 AND session_id = $2 RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(&subgoals)
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        crate::rows::read::<Goal>(&row).map(Some)
    }

    /// The session's goal when a finished turn is to be judged against it: active, and no
    /// turn waiting (those run first, and the last of them is judged). One query, on the path
    /// of every turn.
    pub async fn goal_to_judge(self, tenant: TenantId, session: SessionId) -> Result<Option<Goal>> {
        let sql = "SELECT * FROM session_goals g WHERE g.tenant_id = $1 AND g.session_id = $2 AND g.state = 'active'
               AND NOT EXISTS (SELECT 1 FROM turns t
                               WHERE t.tenant_id = $1 AND t.session_id = $2 AND t.status = 'queued')";
        self.maybe_row_of(tenant, sql, session.as_uuid()).await
    }

    /// Applies the judge's verdict on `turn` to the session's active goal (`decide` maps the
    /// goal to its next step, or to `None` when the verdict was on another goal), once per turn: the goal's counters, the continuation turn (not
    /// when the session has turns waiting already: they run first and are judged in turn), and
    /// the notice to the chat in `reply_to`. Returns whether a continuation was queued.
    pub async fn goal_step(
        self,
        tenant: TenantId,
        (agent, session, turn): (AgentId, SessionId, TurnId),
        reply_to: Option<&Destination>,
        decide: impl FnOnce(&Goal) -> Option<GoalStep>,
    ) -> Result<bool> {
        let mut tx = self.tenant_tx(tenant).await?;
        let row = sqlx::query(
            "SELECT * FROM session_goals WHERE tenant_id = $1 AND session_id = $2 AND state = 'active'
               AND last_judged_turn IS DISTINCT FROM $3 FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else { return Ok(false) };
        // A verdict on a goal replaced while it was judged is no verdict on this one.
        let Some(step) = decide(&crate::rows::read::<Goal>(&row)?) else { return Ok(false) };
        sqlx::query(
            "UPDATE session_goals SET state = $3, turns_used = $4, judge_failures = $5, last_reason = $6,
                    last_judged_turn = $7, updated_at = now()
             WHERE tenant_id = $1 AND session_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(step.state.as_str())
        .bind(step.turns_used)
        .bind(step.judge_failures)
        .bind(crate::messages::without_nul(&step.reason))
        .bind(turn.as_uuid())
        .execute(&mut *tx)
        .await?;
        let waiting: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM turns WHERE tenant_id = $1 AND session_id = $2 AND status = 'queued')",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_one(&mut *tx)
        .await?;
        let mut queued = false;
        if let Some(text) = step.continuation.filter(|_| !waiting) {
            // The next step runs under the judged turn's API key: its limits and its usage.
            let api_key: Option<Option<crate::rows::Id>> =
                sqlx::query_scalar("SELECT api_key_id FROM turns WHERE tenant_id = $1 AND id = $2")
                    .bind(tenant.as_uuid())
                    .bind(turn.as_uuid())
                    .fetch_optional(&mut *tx)
                    .await?;
            let next = NewTurn {
                reply_to: reply_to.cloned(),
                api_key: api_key.flatten().map(Into::into),
                ..NewTurn::new(agent, TurnTarget::Existing(session), ChatMessage::user(text))
            };
            crate::turns::enqueue_in(&mut tx, tenant, &next).await?;
            queued = true;
        }
        if let (Some(notice), Some(dest)) = (step.notice, reply_to) {
            // Only the chat itself: the `also` chats of a delivery do not follow the goal.
            let payload = OutboxPayload::text(notice);
            // A channel deleted meanwhile has nobody to tell.
            match crate::outbox::enqueue_outbox_in(&mut tx, tenant, &dest.alone(), &format!("goal:{turn}"), &payload)
                .await
            {
                Ok(()) | Err(crate::StoreError::NotFound) => {}
                Err(e) => return Err(e),
            }
        }
        tx.commit().await?;
        Ok(queued)
    }
}

/// Drops continuations still queued (the goal was paused or cleared).
pub(crate) async fn drop_continuations(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    session: SessionId,
) -> Result<()> {
    sqlx::query(
        "UPDATE turns SET status = 'cancelled', outcome = $4, finished_at = now()
         WHERE tenant_id = $1 AND session_id = $2 AND status = 'queued' AND input ->> 'content' LIKE $3",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(format!("{CONTINUATION_MARKER}%"))
    .bind(crate::messages::storable_json(&hermes_core::TurnOutcome::cancelled())?)
    .execute(&mut *tx)
    .await?;
    Ok(())
}
