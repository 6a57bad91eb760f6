//! Turns: one user input and the agent's work on it.
//!
//! Life of a turn: `queued` (written by the API with its input) -> `running` (a worker holds a
//! lease in `lease_owner` / `lease_expires_at` and heartbeats) -> `completed` | `failed` |
//! `cancelled`. A worker that dies leaves its lease to expire; the reaper republishes the turn
//! and the next worker resumes from the last stored message.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;
use sqlx::{FromRow, PgConnection};

use hermes_core::outbox::Destination;
use hermes_core::{AgentId, ChatMessage, SessionId, SessionSource, TenantId, TurnId, TurnOutcome};

use crate::admin::audited::tenant_writes;
use crate::messages::{MessageColumns, columns};
use crate::routes::Route;
use crate::session_policy::ResetReason;
use crate::usage::{CallColumns, ModelCall, insert_model_calls};
use crate::{Result, StoreError, views::Turns};

pub(crate) mod enqueue;
mod new_turn;
pub(crate) mod outbox_rows;

pub(crate) use enqueue::enqueue_in;
pub use hermes_core::TurnStatus;
pub use new_turn::{NewTurn, TurnTarget};

impl ClaimedTurn {
    /// What the conversation's commands and then the request asked of the model, read
    /// leniently (a newer release may have stored fields this one does not know).
    pub fn asked_settings(&self) -> hermes_core::ModelSettings {
        use hermes_core::{ModelSettings, Stored};
        let session = ModelSettings::from_stored(self.session_settings.clone());
        let request = self.model_settings.clone().map(ModelSettings::from_stored).unwrap_or_default();
        session.overlaid(&request)
    }

    /// Whose sandbox the turn's tools use.
    pub fn workspace(&self) -> hermes_core::Workspace {
        hermes_core::Workspace::for_turn(self.workspace_scope, &self.session_user_key, self.workspace_root)
    }
}

/// What extending a lease found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseState {
    /// Still ours, extended.
    Held,
    /// The turn has ended (its outcome is stored); nothing to hold.
    Ended,
    /// Another worker owns the turn now, or it was handed back.
    Lost,
    /// Still ours, but the client asked to stop it.
    CancelRequested,
    /// Still ours, but another statement held the turn's row (its finish, a cancellation):
    /// not extended this time (`System::extend_leases`).
    Busy,
}

impl Turns<'_> {
    /// Where the chat's next message goes at `now`: its current session, or a new one when
    /// there is none or the tenant's policy resets it and `busy` (a background process of
    /// that session still runs) says no.
    pub async fn route_target(
        self,
        tenant: TenantId,
        route: &Route,
        now: DateTime<Utc>,
        busy: impl AsyncFnOnce(SessionId) -> bool,
    ) -> Result<(TurnTarget, Option<ResetReason>)> {
        let current = self.conversations().route_state(tenant, route).await?;
        let reset = match current {
            Some((session, last_activity)) => {
                match self.conversations().session_policy(tenant).await?.reset_due(last_activity, now) {
                    Some(reason) if !busy(session).await => Some(reason),
                    _ => None,
                }
            }
            None => None,
        };
        let replaces = match (current, reset) {
            (Some((session, _)), Some(_)) => Some(session),
            _ => None,
        };
        Ok((TurnTarget::Route { route: route.clone(), fresh: current.is_none() || reset.is_some(), replaces }, reset))
    }
}

/// A turn a worker has claimed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedTurn {
    #[sqlx(rename = "id", try_from = "crate::rows::Id")]
    pub turn_id: TurnId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub session_id: SessionId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    /// The fencing token every write of this turn must carry.
    pub fence: i64,
    /// 1 on the first run, more when resumed after a worker died.
    #[sqlx(rename = "attempts")]
    pub attempt: i32,
    /// The user message as stored (OpenAI form); the worker parses it, so a malformed one
    /// fails the turn instead of failing every claim.
    pub input: Value,
    pub instructions: Option<String>,
    pub stream: bool,
    pub notify_hub: Option<String>,
    pub system_prompt: Option<String>,
    /// Where the session lives: the prompt's platform hint.
    #[sqlx(rename = "source", try_from = "String")]
    pub session_source: SessionSource,
    /// The session's end user (see [`TurnTarget::New`]).
    #[sqlx(rename = "user_key")]
    pub session_user_key: String,
    /// The session its conversation began with (sub-agents and continuations share it).
    #[sqlx(try_from = "crate::rows::Id")]
    pub workspace_root: SessionId,
    /// The agent's `workspace` setting as the turn was claimed.
    #[sqlx(try_from = "String")]
    pub workspace_scope: hermes_core::WorkspaceScope,
    /// The trace the turn was enqueued in (a malformed stored value is no trace).
    #[sqlx(rename = "trace_parent", try_from = "crate::rows::MaybeText")]
    pub trace: Option<hermes_core::trace::TraceParent>,
    /// What the request asked of the model, over the agent's and the session's settings
    /// ([`ClaimedTurn::asked_settings`]).
    pub model_settings: Option<Value>,
    /// What the session's chat commands asked of the model (`/reasoning`, `/fast`).
    pub session_settings: Value,
}

/// What the fenced finish found: whether the turn ended, and where its chat is.
#[derive(sqlx::FromRow)]
struct Finished {
    finished: i64,
    reply_to: Option<Json<Destination>>,
    /// The turn is a background child's still at work (its end is recorded with it).
    child: bool,
}

/// A turn's status (read with `rows::vocab`) and outcome.
#[derive(sqlx::FromRow)]
struct StateRow {
    status: String,
    outcome: Option<Value>,
}

impl Turns<'_> {
    /// Replaces a running turn's stored input with `input` as delivered: once the files a
    /// person sent are in the workspace and the transcript holds their notes, the turn keeps
    /// no copy of their bytes (up to 20 MB each). Only while `fence` holds the session.
    pub async fn settle_input(self, tenant: TenantId, turn: TurnId, fence: i64, input: &ChatMessage) -> Result<()> {
        let value = serde_json::to_value(input).map_err(|e| StoreError::Invalid(e.to_string()))?;
        sqlx::query(
            "UPDATE turns SET input = $4 WHERE tenant_id = $1 AND id = $2 AND status = 'running'
               AND EXISTS (SELECT 1 FROM sessions s WHERE s.tenant_id = $1 AND s.id = turns.session_id AND s.fence = $3)",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(fence)
        .bind(value)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(())
    }

    /// Claims the session's oldest open turn for `owner` (unique per claim) if it is queued
    /// or abandoned (lease expired), and bumps the session's fence past `token`, in one
    /// statement. `None` when there is nothing to run or another live worker has it.
    pub async fn claim_next_turn(
        self,
        tenant: TenantId,
        session: SessionId,
        owner: &str,
        lease: Duration,
        token: i64,
    ) -> Result<Option<ClaimedTurn>> {
        claim_next_turn_on(&mut *self.as_tenant(tenant).await?, tenant, Claim { session, owner, lease, token }).await
    }

    /// Whether the session's oldest open turn could be claimed now (queued, or abandoned by a
    /// worker whose lease expired) — the same rule as [`claim_next_turn`](Self::claim_next_turn).
    pub async fn has_claimable_turn(self, tenant: TenantId, session: SessionId) -> Result<bool> {
        let claimable: Option<Option<bool>> = sqlx::query_scalar(
            "SELECT ((status = 'queued' AND (not_before IS NULL OR not_before <= now())) OR lease_expires_at < now())
                    AS claimable
             FROM turns WHERE tenant_id = $1 AND session_id = $2 AND status IN ('queued', 'running', 'waiting')
             ORDER BY created_at LIMIT 1",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(claimable.flatten().unwrap_or(false))
    }

    /// Ends a running turn with `status` and `outcome`, if `owner` still holds its lease and
    /// `fence` still owns the session (the turn row is locked first, as in a claim), storing the turn's final assistant message (step `final_message.0`) in the same
    /// statement, so an answer is either stored with its outcome or not at all. The turn's last
    /// answered model `calls` are recorded by the same statement, even when the turn is fenced.
    /// A background child's end is recorded with it: when it was the last of its batch, the
    /// report is queued too, and the parent's conversation it went to is returned, to signal.
    #[expect(clippy::too_many_arguments, reason = "one fenced statement with all its inputs")]
    pub async fn finish_turn(
        self,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
        owner: &str,
        fence: i64,
        status: TurnStatus,
        outcome: &TurnOutcome,
        final_message: Option<(i32, &ChatMessage)>,
        calls: &[ModelCall],
    ) -> Result<Option<SessionId>> {
        let stored = crate::messages::storable_json(outcome)?;
        let (step, columns) = match final_message {
            Some((step, msg)) => (Some(step), columns(msg)?),
            // Nothing to insert: the `ins` step is skipped, the values are never read.
            None => (None, MessageColumns::empty_assistant()),
        };
        let sql = concat!(
            "WITH calls AS (",
            insert_model_calls!("$15", "$16", "$17", "$18", "$19", "$20", "$21", "$22", "$23", "$24", "$25"),
            "), mine AS (
                SELECT id FROM turns
                WHERE tenant_id = $1 AND id = $3 AND status = 'running' AND lease_owner = $14
                FOR UPDATE
             ), s AS (
                UPDATE sessions SET next_seq = next_seq + (CASE WHEN $5::int IS NULL THEN 0 ELSE 1 END),
                       updated_at = now()
                WHERE tenant_id = $1 AND id = $2 AND fence = $4 AND EXISTS (SELECT 1 FROM mine)
                RETURNING next_seq - 1 AS seq
             ), ins AS (
                INSERT INTO messages (tenant_id, session_id, seq, turn_id, turn_step, role, content,
                                      tool_calls, tool_call_id, name, reasoning, search, reasoning_replay)
                SELECT $1, $2, s.seq, $3, $5, $6, $7, $8, $9, $10, $11, $26::tsvector, $27 FROM s
                WHERE $5::int IS NOT NULL
                ON CONFLICT DO NOTHING
                RETURNING seq
             ), t AS (
                UPDATE turns SET status = $12::turn_status, outcome = $13, finished_at = now(),
                       lease_owner = NULL, lease_expires_at = NULL
                WHERE tenant_id = $1 AND id = $3 AND status = 'running' AND EXISTS (SELECT 1 FROM s)
                RETURNING reply_to
             )
             SELECT (SELECT count(*) FROM t) AS finished, (SELECT reply_to FROM t) AS reply_to,
                    EXISTS (SELECT 1 FROM delegation_tasks c
                            WHERE c.tenant_id = $1 AND c.turn_id = $3 AND c.state = 'running') AS child"
        );
        let query =
            sqlx::query(sql).bind(tenant.as_uuid()).bind(session.as_uuid()).bind(turn.as_uuid()).bind(fence).bind(step);
        let search = columns.search.clone();
        let replay = columns.replay.clone();
        let query = columns.bind_to(query).bind(status.as_str()).bind(stored).bind(owner);
        // The answer's outbox rows commit with the turn's end, or neither does.
        let mut tx = self.tenant_tx(tenant).await?;
        let row = CallColumns::of(calls).bind_to(query).bind(search).bind(replay).fetch_one(&mut *tx).await?;
        let Finished { finished, reply_to, child } = Finished::from_row(&row)?;
        if finished == 0 {
            // Fenced: nothing of the turn changed, but its model calls were paid for and stay.
            tx.commit().await?;
            return Err(StoreError::Fenced);
        }
        if let (Some(reply_to), Some(answer)) = (reply_to, outbox_rows::answer_status(status)) {
            outbox_rows::queue_answer(&mut tx, tenant, turn, &reply_to, answer, outcome).await?;
        }
        // A background child's end and, for the last of its batch, the report: with the turn's.
        let report = match child {
            true => {
                let (state, summary) = crate::delegations::child_end(status, outcome);
                crate::delegations::finish_child_in(&mut tx, tenant, turn, state, summary).await?
            }
            false => None,
        };
        tx.commit().await?;
        Ok(report)
    }

    /// Hands a running turn back (a draining worker, a passing storage error): it becomes
    /// `queued` again, to be resumed by the next worker from its last stored message. The
    /// attempt is not counted against the turn.
    pub async fn release_turn(self, tenant: TenantId, turn: TurnId, owner: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE turns SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
                    attempts = GREATEST(attempts - 1, 0)
             WHERE tenant_id = $1 AND id = $2 AND lease_owner = $3 AND status = 'running'",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(owner)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// A turn's status and, once it has ended, its outcome.
    pub async fn turn_state(self, tenant: TenantId, turn: TurnId) -> Result<(TurnStatus, Option<TurnOutcome>)> {
        let row = sqlx::query_as::<_, StateRow>(
            "SELECT status::text AS status, outcome FROM turns WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        let status = crate::rows::vocab::<TurnStatus>(&row.status)?;
        let outcome = row
            .outcome
            .map(serde_json::from_value::<TurnOutcome>)
            .transpose()
            .map_err(|e| StoreError::Corrupt(e.to_string()))?;
        Ok((status, outcome))
    }
}

/// What [`Turns::claim_next_turn`](crate::views::Turns::claim_next_turn) is asked: the
/// session, who claims it for how long, and the fencing token the session's fence moves past.
pub(crate) struct Claim<'a> {
    pub(crate) session: SessionId,
    pub(crate) owner: &'a str,
    pub(crate) lease: Duration,
    pub(crate) token: i64,
}

/// [`Turns::claim_next_turn`](crate::views::Turns::claim_next_turn) on a connection already set to `tenant`.
pub(crate) async fn claim_next_turn_on(
    conn: &mut sqlx::PgConnection,
    tenant: TenantId,
    claim: Claim<'_>,
) -> Result<Option<ClaimedTurn>> {
    let Claim { session, owner, lease, token } = claim;
    // Only the oldest open turn may run, so turns of a session run in order. Claimability
    // is judged on the row version `FOR UPDATE` returns (the latest, after any wait), not
    // on the statement's snapshot.
    let row = sqlx::query(
        "WITH next AS (
            SELECT id, status, lease_expires_at, not_before FROM turns
            WHERE tenant_id = $1 AND session_id = $2 AND status IN ('queued', 'running', 'waiting')
            ORDER BY created_at, id LIMIT 1
            FOR UPDATE
         ), claimable AS (
            SELECT id FROM next
            WHERE (status = 'queued' AND (not_before IS NULL OR not_before <= now())) OR lease_expires_at < now()
         ), s AS (
            UPDATE sessions SET fence = GREATEST(fence + 1, $4)
            WHERE tenant_id = $1 AND id = $2 AND EXISTS (SELECT 1 FROM claimable)
            RETURNING fence, agent_id, system_prompt, source, user_key, COALESCE(workspace_root, id) AS workspace_root,
                      model_settings AS session_settings,
                      (SELECT a.workspace FROM agents a WHERE a.tenant_id = $1 AND a.id = sessions.agent_id)
                          AS workspace_scope
         ), t AS (
            UPDATE turns SET status = 'running', lease_owner = $3,
                   lease_expires_at = now() + make_interval(secs => $5), attempts = attempts + 1,
                   started_at = COALESCE(started_at, now())
            FROM claimable WHERE turns.id = claimable.id
            RETURNING turns.id, attempts, input, instructions, stream, notify_hub, trace_parent, model_settings
         )
         SELECT t.*, s.*, $2::uuid AS session_id FROM t CROSS JOIN s",
    )
    .bind(tenant.as_uuid())
    .bind(session.as_uuid())
    .bind(owner)
    .bind(token)
    .bind(lease.as_secs_f64())
    .fetch_optional(&mut *conn)
    .await?;
    // A row that does not decode is `Corrupt`, never retried as if the database were down.
    row.as_ref().map(crate::rows::read::<ClaimedTurn>).transpose()
}

tenant_writes! {
    in Turns;
    /// Asks to stop a turn: a queued turn is cancelled at once; a running one is flagged for
    /// its worker (which also hears it on the cancel channel). Returns the status it had. A
    /// background child cancelled before it ran ends its task here, and the last of a batch
    /// queues the report (which the reaper hands to a worker).
    pub async fn request_cancel(turn: TurnId, outcome: &TurnOutcome) -> Result<Option<TurnStatus>> = request_cancel_on in transaction;
}

/// [`Turns::request_cancel`](crate::views::Turns::request_cancel) on a connection already set to `tenant`.
async fn request_cancel_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    turn: TurnId,
    outcome: &TurnOutcome,
) -> Result<Option<TurnStatus>> {
    let outcome = crate::messages::storable_json(outcome)?;
    let before: Option<String> = sqlx::query_scalar(
        "SELECT status::text FROM turns WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'waiting') FOR UPDATE",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .fetch_optional(&mut *conn)
    .await?;
    if before.is_some() {
        // Before the turn's own change, whose trigger would end the task without a report.
        let stopped = hermes_core::ChildState::Cancelled;
        crate::delegations::finish_child_in(&mut *conn, tenant, turn, stopped, "").await?;
    }
    let was: Option<String> = sqlx::query_scalar(
        "WITH before AS (
            SELECT status FROM turns WHERE tenant_id = $1 AND id = $2 AND status IN ('queued', 'running', 'waiting')
            FOR UPDATE
         )
         UPDATE turns t SET cancel_requested_at = now(),
                status = CASE WHEN b.status <> 'running' THEN 'cancelled'::turn_status ELSE t.status END,
                outcome = CASE WHEN b.status <> 'running' THEN $3 ELSE t.outcome END,
                finished_at = CASE WHEN b.status <> 'running' THEN now() ELSE t.finished_at END
         FROM before b WHERE t.tenant_id = $1 AND t.id = $2
         RETURNING b.status::text AS was",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .bind(outcome)
    .fetch_optional(conn)
    .await?;
    was.as_deref().map(crate::rows::vocab::<TurnStatus>).transpose()
}
