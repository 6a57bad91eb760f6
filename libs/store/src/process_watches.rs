//! Processes that wake the agent (migration 0072): `terminal(background=true,
//! notify_on_complete, watch_patterns)` records a watch; workers claim due watches
//! ([`System::claim_watches`](crate::views::System::claim_watches), in `system/`), poll the
//! process in its sandbox, and settle the watch here. A notice is a turn queued on the watch's
//! session in the same transaction that moves the watch on, by the worker that still holds the
//! claim: none is lost with a dead worker (its claim lapses and another polls) or sent twice.

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use hermes_core::outbox::Destination;
use hermes_core::{AgentId, ChatMessage, SessionId, TenantId, TurnId, Workspace};

use crate::{NewTurn, Result, TurnTarget, views::Automation};

/// A process to watch.
#[derive(Debug, Clone)]
pub struct NewWatch<'a> {
    pub agent: AgentId,
    pub session: SessionId,
    /// The turn that started it: its API key and where it answered carry to the notices.
    pub turn: TurnId,
    pub workspace: Workspace,
    pub process_id: &'a str,
    pub command: &'a str,
    pub patterns: &'a [String],
    pub notify_on_complete: bool,
}

/// What recording a watch came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watched {
    Watching,
    /// The calling turn is a notice of another watch: it may not start one (a process that
    /// wakes the agent to start another, and so on, with nobody there).
    FromNotice,
}

/// A claimed watch.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Watch {
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    pub id: uuid::Uuid,
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    #[sqlx(try_from = "crate::rows::Id")]
    pub session_id: SessionId,
    /// The workspace's bits (see [`Watch::workspace`]).
    #[sqlx(rename = "workspace")]
    pub workspace_bits: Option<i64>,
    pub process_id: String,
    pub command: String,
    pub patterns: Vec<String>,
    pub notify_on_complete: bool,
    pub output_offset: i64,
    pub notices: i32,
    pub last_notice_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl Watch {
    /// The sandbox's workspace the process runs in.
    pub fn workspace(&self) -> Workspace {
        match self.workspace_bits {
            None => Workspace::Shared,
            Some(bits) => Workspace::Own(u64::from_ne_bytes(bits.to_ne_bytes())),
        }
    }
}

/// What polling a watched process came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchStep {
    /// Look again later; the output up to `offset` is read.
    Again { offset: i64 },
    /// Wake the agent with `notice`; `done`: the watch ends with it. `patterns` are the ones
    /// still watched (none once three notices were sent: then only its end is told).
    Notify { offset: i64, notice: String, done: bool, patterns: Vec<String> },
    /// The watch ends with nothing to tell.
    Done,
}

impl Automation<'_> {
    /// Records a watch on `new.process_id` (once: the same process watched again is one watch),
    /// with the starting turn's API key and answer address.
    pub async fn watch_process(self, tenant: TenantId, new: &NewWatch<'_>) -> Result<Watched> {
        let workspace = match new.workspace {
            Workspace::Shared => None,
            Workspace::Own(bits) => Some(i64::from_ne_bytes(bits.to_ne_bytes())),
        };
        let mut tx = self.tenant_tx(tenant).await?;
        let from_notice: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM process_watches WHERE tenant_id = $1 AND $2 = ANY (notice_turns))",
        )
        .bind(tenant.as_uuid())
        .bind(new.turn.as_uuid())
        .fetch_one(&mut *tx)
        .await?;
        if from_notice {
            return Ok(Watched::FromNotice);
        }
        sqlx::query(
            "INSERT INTO process_watches (tenant_id, id, agent_id, session_id, workspace, process_id, command, patterns,
                                          notify_on_complete, reply_to, api_key_id, next_check_at)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, t.reply_to, t.api_key_id, now() + interval '1 second'
             FROM turns t WHERE t.tenant_id = $1 AND t.id = $10
             ON CONFLICT (tenant_id, session_id, process_id) DO NOTHING",
        )
        .bind(tenant.as_uuid())
        .bind(uuid::Uuid::now_v7())
        .bind(new.agent.as_uuid())
        .bind(new.session.as_uuid())
        .bind(workspace)
        .bind(crate::messages::without_nul(new.process_id))
        .bind(crate::messages::without_nul(&new.command.chars().take(500).collect::<String>()))
        .bind(new.patterns.iter().map(|p| crate::messages::without_nul(p)).collect::<Vec<_>>())
        .bind(new.notify_on_complete)
        .bind(new.turn.as_uuid())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Watched::Watching)
    }

    /// Moves `watch` on as `step` says, if `owner` still holds its claim: a notice is queued as
    /// a turn of its session (answering where the turn that started the process did) in the
    /// same transaction. Returns the session to signal when a turn was queued.
    pub async fn settle_watch(
        self,
        watch: &Watch,
        owner: &str,
        step: &WatchStep,
        again_in: std::time::Duration,
    ) -> Result<Option<SessionId>> {
        let tenant = watch.tenant_id;
        let mut tx = self.tenant_tx(tenant).await?;
        let held: Option<(Option<Json<Destination>>, Option<crate::rows::Id>)> = sqlx::query_as(
            "SELECT reply_to, api_key_id FROM process_watches WHERE tenant_id = $1 AND id = $2 AND state = 'watching'
               AND claimed_by = $3 FOR UPDATE",
        )
        .bind(tenant.as_uuid())
        .bind(watch.id)
        .bind(owner)
        .fetch_optional(&mut *tx)
        .await?;
        // Claimed by another worker since (this one was too slow): it polls and tells.
        let Some((reply_to, api_key)) = held else { return Ok(None) };
        let (offset, done, notice, patterns) = match step {
            WatchStep::Again { offset } => (*offset, false, None, None),
            WatchStep::Notify { offset, notice, done, patterns } => (*offset, *done, Some(notice), Some(patterns)),
            WatchStep::Done => (watch.output_offset, true, None, None),
        };
        sqlx::query(
            "UPDATE process_watches SET output_offset = $3, state = CASE WHEN $4 THEN 'done' ELSE 'watching' END,
                    patterns = COALESCE($5, patterns), notices = notices + $6::int,
                    -- three pattern notices leave only the end to tell (upstream's three strikes)
                    notify_on_complete = notify_on_complete
                        OR (cardinality(patterns) > 0 AND cardinality(COALESCE($5, patterns)) = 0),
                    last_notice_at = CASE WHEN $6::int > 0 THEN now() ELSE last_notice_at END,
                    next_check_at = now() + make_interval(secs => $7), claimed_by = NULL, claimed_until = NULL
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(watch.id)
        .bind(offset)
        .bind(done)
        .bind(patterns)
        .bind(i32::from(notice.is_some()))
        .bind(again_in.as_secs_f64())
        .execute(&mut *tx)
        .await?;
        let mut signal = None;
        if let Some(notice) = notice {
            // The conversation goes on where it was compacted to (the sandbox's owner stays the
            // session that started the process).
            let session = crate::delegations::latest_of(&mut tx, tenant, watch.session_id).await?;
            let turn = NewTurn {
                reply_to: reply_to.map(|d| d.0),
                api_key: api_key.map(Into::into),
                ..NewTurn::new(watch.agent_id, TurnTarget::Existing(session), ChatMessage::user(notice.clone()))
            };
            let (_, queued) = crate::turns::enqueue::enqueue_in(&mut tx, tenant, &turn).await?;
            sqlx::query(
                "UPDATE process_watches SET notice_turns = array_append(notice_turns, $3) WHERE tenant_id = $1 AND id = $2",
            )
            .bind(tenant.as_uuid())
            .bind(watch.id)
            .bind(queued.as_uuid())
            .execute(&mut *tx)
            .await?;
            signal = Some(session);
        }
        tx.commit().await?;
        Ok(signal)
    }
}
