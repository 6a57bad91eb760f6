//! Running one claimed turn: build the model's view from Postgres, run the loop with a
//! heartbeat on the lease and the session lock, store the outcome, then announce it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use hermes_agent::{EventSink, Turn, TurnEnd, TurnLimits, TurnStart};
use hermes_cache::LockGuard;
use hermes_core::{ChatMessage, FinishReason, Role, TenantId, TurnEventKind, TurnId, TurnOutcome, Usage};
use hermes_queue::SessionWork;
use hermes_sandbox::SandboxKey;
use hermes_store::{ClaimedTurn, LeaseState, StoreError, TurnStatus};
use hermes_tools::{ApprovalMode, Interactive, Judge, Resolution, ToolCtx};

use crate::Runtime;
use crate::journal::{EventPublisher, StoreJournal};
use crate::models::Models;
use crate::turn_end::{failed, hand_back, park, stop_cancelled};

/// Attempts after which a turn that keeps killing its workers is failed instead of resumed.
const MAX_ATTEMPTS: i32 = 5;

/// How a turn's run ended, for the session loop.
enum Ran {
    /// The outcome is stored and announced; the session may run its next turn.
    Done,
    /// Stop working on this session (taken over, handed back, or lease lost).
    Stop,
}

/// Runs a claimed turn with heartbeats. Returns `false` when the worker should stop working
/// on this session (draining, the lease was lost, or the session was taken over).
pub(crate) async fn run_claimed_turn(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    owner: &str,
    turn: ClaimedTurn,
    guard: &LockGuard,
    parent: &tracing::Span,
) -> bool {
    let span = tracing::info_span!(parent: parent, "turn", turn.id = %turn.turn_id, attempt = turn.attempt);
    let lease = Duration::from_secs(rt.ctx.config.worker.lease_seconds);
    let locks = rt.ctx.cache.session_locks();
    // First beat one period from now (an immediate first tick would wait for the timer wheel).
    let period = Duration::from_millis(rt.ctx.config.worker.heartbeat_millis);
    let mut heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let (turn_id, session_id, fence) = (turn.turn_id, turn.session_id, turn.fence);
    let hub = turn.notify_hub.clone();
    let attempt = u32::try_from(turn.attempt).unwrap_or(0);
    let cancel = CancellationToken::new();
    if let Ok(mut running) = rt.running.lock() {
        running.insert(turn_id, cancel.clone());
    }
    let _registered = Registered { rt, turn: turn_id };
    let work = execute(rt, tenant, owner, turn).instrument(span.clone());
    tokio::pin!(work);
    loop {
        tokio::select! {
            ran = &mut work => return matches!(ran, Ran::Done),
            () = cancel.cancelled() => {
                // Dropping `work` stops the model call or tool at once; nothing partial is stored.
                let ids = (session_id, turn_id, fence, hub.clone(), attempt);
                stop_cancelled(rt, tenant, owner, ids, &span).await;
                return true;
            }
            _ = heartbeat.tick() => {
                match rt.ctx.store.extend_lease(tenant, turn_id, owner, lease).await {
                    Ok(LeaseState::Held | LeaseState::Ended) => {}
                    Ok(LeaseState::CancelRequested) => cancel.cancel(),
                    Ok(LeaseState::Lost) => {
                        // Another worker may run this turn now: stop at once (dropping `work`
                        // interrupts model calls and tools) instead of working beside it.
                        tracing::warn!(parent: &span, "turn lease lost; stopping");
                        return false;
                    }
                    Err(e) => tracing::warn!(parent: &span, error = %e, "cannot extend the turn lease"),
                }
                if let Ok(false) = locks.extend(guard, lease).await {
                    tracing::warn!(parent: &span, "session lock lost; fenced writes will tell");
                }
            }
            () = rt.abandon.cancelled() => {
                // Dropping `work` interrupts the model call; nothing partial was stored.
                hand_back(rt, tenant, session_id, turn_id, owner, &span).await;
                return false;
            }
        }
    }
}

/// Removes a turn from the running registry when its run ends, however it ends.
struct Registered<'a> {
    rt: &'a Runtime,
    turn: TurnId,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Ok(mut running) = self.rt.running.lock() {
            running.remove(&self.turn);
        }
    }
}

/// The iterations of an unattended run (cron, webhook).
const UNATTENDED_MAX_ITERATIONS: u32 = 90;

async fn execute(rt: &Arc<Runtime>, tenant: TenantId, owner: &str, turn: ClaimedTurn) -> Ran {
    let started = Instant::now();
    let attempt = u32::try_from(turn.attempt).unwrap_or(0);
    let events = EventPublisher::start(
        rt.ctx.broker.clone(),
        tenant,
        turn.session_id,
        turn.turn_id,
        attempt,
        turn.notify_hub.clone(),
    );
    events.emit(TurnEventKind::Started);
    let mut journal = StoreJournal {
        store: rt.ctx.store.clone(),
        tenant,
        session: turn.session_id,
        turn: turn.turn_id,
        fence: turn.fence,
        final_answer: None,
        compacted: false,
        calls: Arc::default(),
        goal: None,
    };
    let end = if turn.attempt > MAX_ATTEMPTS {
        tracing::error!("turn failed on {MAX_ATTEMPTS} workers; giving up");
        TurnEnd::Finished(failed(
            "turn_retries_exhausted",
            format!("The turn failed {MAX_ATTEMPTS} times and was stopped."),
        ))
    } else {
        match serde_json::from_value::<ChatMessage>(turn.input.clone()) {
            Err(e) => {
                tracing::error!(error = %e, "stored turn input is not a message");
                TurnEnd::Finished(failed("invalid_input", "The stored input of this turn cannot be read."))
            }
            Ok(input) => match prepare_and_run(rt, tenant, &turn, input, &events, &mut journal).await {
                Ok(end) => end,
                Err(PrepareError::Fenced) => TurnEnd::Superseded,
                Err(PrepareError::Transient(e)) => TurnEnd::Suspended(e),
                Err(PrepareError::Fail(outcome)) => TurnEnd::Finished(outcome),
            },
        }
    };
    let outcome = match end {
        TurnEnd::Superseded => {
            tracing::warn!("another worker took the session over; stopping quietly");
            journal.store_calls().await;
            events.finish(None).await;
            return Ran::Stop;
        }
        TurnEnd::Suspended(reason) => {
            tracing::warn!(reason, "storage failed; handing the turn back to be resumed");
            journal.store_calls().await;
            events.finish(None).await;
            hand_back(rt, tenant, turn.session_id, turn.turn_id, owner, &tracing::Span::current()).await;
            return Ran::Stop;
        }
        TurnEnd::Parked(parked) => {
            journal.store_calls().await;
            park(rt, tenant, &turn, owner, &journal, parked, events).await;
            return Ran::Done;
        }
        TurnEnd::Finished(mut outcome) => {
            if crate::attachments::is_chat(&turn.session_source) {
                crate::attachments::collect(rt, tenant, &turn, &outcome.content).await;
            }
            if journal.compacted {
                // The conversation goes on in the compacted child session.
                outcome.session_id = Some(journal.session);
            }
            outcome
        }
    };
    let session_id = journal.session;
    let status = if outcome.finish_reason == FinishReason::Error { TurnStatus::Failed } else { TurnStatus::Completed };
    let answer = journal.final_answer.as_ref().map(|(step, message)| (*step, message));
    let calls = journal.take_calls();
    let stored = rt
        .ctx
        .store
        .finish_turn(tenant, session_id, turn.turn_id, owner, turn.fence, status, &outcome, answer, &calls)
        .await;
    match stored {
        Ok(()) => {}
        Err(StoreError::Fenced) => {
            tracing::warn!("the turn was taken over before its outcome was stored");
            events.finish(None).await;
            return Ran::Stop;
        }
        Err(e) => {
            // The lease will expire and another worker resumes from the checkpoints.
            tracing::error!(error = %e, "cannot store the turn outcome");
            events.finish(None).await;
            return Ran::Stop;
        }
    }
    let label = if status == TurnStatus::Completed { "completed" } else { "failed" };
    metrics::counter!("hermes_turns_total", "status" => label).increment(1);
    metrics::histogram!("hermes_turn_seconds", "status" => label).record(started.elapsed().as_secs_f64());
    tracing::info!(status = label, elapsed_ms = started.elapsed().as_secs_f64() * 1000.0, "turn finished");
    events.finish(Some(TurnEventKind::Finished { outcome })).await;
    if journal.compacted {
        // Messages that waited in the parent moved to the child with the conversation.
        let work = SessionWork { tenant_id: tenant, session_id };
        if let Err(e) = rt.ctx.broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot signal the compacted session; the reaper will");
        }
    }
    if status == TurnStatus::Completed
        && let Some(verdict) = journal.goal.take()
    {
        crate::goals::advance(rt, tenant, &turn, session_id, verdict).await;
    }
    if status == TurnStatus::Completed {
        let job =
            hermes_queue::ReviewJob { tenant_id: tenant, agent_id: turn.agent_id, session_id, turn_id: turn.turn_id };
        crate::review::maybe_queue(rt, job).await;
    }
    Ran::Done
}

enum PrepareError {
    Fenced,
    /// Storage failed for a moment: hand the turn back rather than fail it.
    Transient(String),
    Fail(TurnOutcome),
}

impl From<StoreError> for PrepareError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Fenced => PrepareError::Fenced,
            e if e.is_transient() => PrepareError::Transient(e.to_string()),
            other => {
                tracing::error!(error = %other, "cannot load the turn");
                PrepareError::Fail(failed("storage_error", "The turn could not be loaded."))
            }
        }
    }
}

async fn prepare_and_run(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    turn: &ClaimedTurn,
    mut input: ChatMessage,
    events: &EventPublisher,
    journal: &mut StoreJournal,
) -> Result<TurnEnd, PrepareError> {
    let store = &rt.ctx.store;
    // A slash command is answered here, without the model, and stays out of the transcript.
    if input.role == Role::User && input.text().trim_start().starts_with('/') {
        let key = SandboxKey { tenant, agent: turn.agent_id };
        if let Some(reply) = crate::commands::run(rt.ctx.sandboxes.as_ref(), key, input.text().trim()).await {
            return Ok(TurnEnd::Finished(TurnOutcome {
                content: reply,
                finish_reason: FinishReason::Stop,
                usage: Usage::default(),
                error: None,
                error_code: None,
                session_id: None,
            }));
        }
    }
    // Independent reads, in parallel.
    let (agent, stored, pools, resolution, allowed) = tokio::try_join!(
        store.agent(tenant, turn.agent_id),
        store.session_messages(tenant, turn.session_id),
        store.credential_pools(tenant),
        store.turn_resolution(tenant, turn.turn_id),
        store.approval_grants(tenant, turn.agent_id, turn.session_id)
    )?;
    let mut agent = agent;
    if turn.session_source == "cron" {
        crate::turn_setup::apply_job_settings(store, tenant, turn.turn_id, &mut agent).await?;
    }
    // Skills named at the start of the input load even where the skills tools are off.
    let loads_skills = agent.toolsets.iter().any(|t| t == "skills");
    let unattended = crate::turn_setup::restrict_unattended(&turn.session_source, &mut agent.toolsets);
    let api_key = agent.provider_key(rt.ctx.secrets.as_ref()).map_err(|e| {
        tracing::error!(error = %e, "cannot open the agent's provider key");
        PrepareError::Fail(failed("provider_key_unavailable", "The agent's provider key cannot be read."))
    })?;
    let models = Models {
        rt: rt.clone(),
        tenant,
        agent: agent.clone(),
        api_key,
        meter: journal.calls.clone(),
        purpose: "main",
        pools: Arc::new(pools),
    };
    let model = models.main();
    let child_usage = Arc::new(std::sync::Mutex::new(Usage::default()));
    let mut tools =
        crate::turn_setup::tools_for_turn(rt, tenant, &agent, &models, &turn.session_user_key, child_usage.clone());
    if agent.toolsets.iter().any(|t| t == "messaging") {
        tools.register(Arc::new(crate::send_message::SendMessageTool { store: store.clone() }));
    }
    if agent.toolsets.iter().any(|t| t == "cronjob") {
        let origin = store.turn_reply_to(tenant, turn.turn_id).await?;
        tools.register(Arc::new(crate::cron_tool::CronjobTool { store: store.clone(), origin }));
    }
    let resumed = stored.iter().any(|m| m.turn_id == Some(turn.turn_id));
    // Where this turn's messages begin (after the history of earlier turns).
    let first_of_turn = stored.iter().position(|m| m.turn_id == Some(turn.turn_id)).unwrap_or(stored.len());
    let completed_steps =
        stored.iter().filter(|m| m.turn_id == Some(turn.turn_id)).filter_map(|m| m.turn_step).max().unwrap_or(0);
    let mut history: Vec<ChatMessage> = stored.into_iter().map(|m| m.message).collect();
    if !resumed && input.role == Role::User && crate::commands::is_compress(&input.text()) {
        return Ok(crate::commands::compress(&models, turn.system_prompt.clone(), &history, journal).await);
    }

    let prompt = match (&turn.system_prompt, resumed) {
        (Some(prompt), true) => prompt.clone(),
        _ => {
            // First run of this turn: store the input, freezing the prompt if the session
            // has none yet (the stored one wins, so every turn sees the same bytes).
            let rendered = match &turn.system_prompt {
                Some(p) => p.clone(),
                None => crate::turn_setup::render_prompt(rt, tenant, &agent, turn, &tools).await?,
            };
            // `/goal TEXT` sets the session's goal and runs TEXT as the first turn toward it.
            if !resumed && let Some(goal) = crate::goals::goal_in(&input.text()).map(str::to_owned) {
                crate::goals::set_from_turn(rt, tenant, turn, &goal).await;
                input = ChatMessage::user(goal);
            }
            // `/skill-name request` loads the skill into the message before it is stored.
            if !resumed
                && loads_skills
                && input.text().trim_start().starts_with('/')
                && let Some(expanded) =
                    crate::skills::expand_slash(store, &rt.skills, &agent, &tools.names(), &input.text()).await
            {
                input = expanded;
            }
            input.role = Role::User;
            let frozen = store.begin_turn(tenant, turn.session_id, turn.fence, turn.turn_id, &input, &rendered).await?;
            history.push(input);
            frozen
        }
    };
    let mut messages = Vec::with_capacity(history.len() + 2);
    messages.push(ChatMessage::system(prompt));
    if let Some(instructions) = &turn.instructions {
        messages.push(ChatMessage::system(instructions.clone()));
    }
    let turn_start = messages.len() + first_of_turn;
    messages.extend(history);
    crate::turn_setup::nudge(rt, &tools, &mut messages, turn_start);

    let tool_ctx = ToolCtx {
        tenant_id: tenant,
        agent_id: agent.id,
        session_id: turn.session_id,
        turn_id: turn.turn_id,
        call_id: String::new(),
        interaction: Interactive {
            // An unattended run has nobody to ask: no questions, no approvals that wait.
            enabled: !unattended,
            approval_mode: ApprovalMode::parse(&agent.approval_mode).unwrap_or_default(),
            allowed: Arc::new(allowed),
            resolution: resolution.map(|(call_id, answer)| Arc::new(Resolution { call_id, answer })),
            judge: (agent.approval_mode == "smart").then(|| {
                let (model, model_name) = models.auxiliary();
                Judge(Arc::new(crate::judge::SmartJudge {
                    model,
                    model_name,
                    store: store.clone(),
                    tenant,
                    agent: agent.id,
                    session: turn.session_id,
                }))
            }),
        },
    };
    // Unattended runs stop at 90 iterations (upstream's cap for cron runs).
    let max_iterations = if unattended {
        rt.ctx.config.worker.max_iterations.min(UNATTENDED_MAX_ITERATIONS)
    } else {
        rt.ctx.config.worker.max_iterations
    };
    let limits = TurnLimits { stream_deltas: turn.stream, ..TurnLimits::main(max_iterations) };
    let engine = models.context_engine();
    let start = TurnStart { messages, completed_steps, turn_start };
    let run = Turn {
        model: &model,
        model_name: &agent.model,
        tools: &tools,
        tool_ctx: &tool_ctx,
        journal,
        events,
        limits: &limits,
        context: Some(&engine),
    };
    // Unattended runs end after a stretch without activity (a hung call must not hold the slot).
    let mut end = if unattended {
        let limit = Duration::from_secs(rt.ctx.config.worker.unattended_inactivity_seconds);
        tokio::select! {
            end = run.run(start) => end,
            () = crate::journal::until_inactive(events, limit) => {
                tracing::warn!(limit_s = limit.as_secs(), "unattended run inactive; stopping it");
                TurnEnd::Finished(failed(
                    "inactivity_timeout",
                    format!("The run stopped after {} s without activity.", limit.as_secs()),
                ))
            }
        }
    } else {
        run.run(start).await
    };
    if let TurnEnd::Finished(outcome) = &mut end
        && let Ok(children) = child_usage.lock()
    {
        // Delegated children's usage counts toward the turn.
        outcome.usage.add(&children);
    }
    if let TurnEnd::Finished(outcome) = &end
        && outcome.finish_reason != FinishReason::Error
        && !outcome.content.trim().is_empty()
        && !unattended
        && let Ok(Some(goal)) = store.goal_to_judge(tenant, journal.session).await
    {
        journal.goal = Some(crate::goals::judge(&models, &goal, &outcome.content).await);
    }
    Ok(end)
}
