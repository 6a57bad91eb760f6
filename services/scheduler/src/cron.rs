//! Cron in the scheduler role: each pass claims due jobs (any number of replicas; a slot is
//! claimed once, see `System::claim_due_jobs`), decides each job's next run with the rules of
//! `hermes-schedule` (catch-up after downtime, repeats, `error` when no next run can be
//! computed), and starts every claimed run as a turn in a fresh session (`source = cron`)
//! whose answer goes where the job delivers, through the outbox. Then it settles runs whose
//! turns ended, and declares `unknown` the runs whose claimer vanished before starting them.

use chrono::{DateTime, Utc};
use futures_util::StreamExt;

use hermes_core::outbox::{CronLabel, Destination, OutboxPayload, RunLabel};
use hermes_core::{ChatMessage, CronRunStatus, JobState};
use hermes_queue::SessionWork;
use hermes_schedule::{Catchup, Schedule, time_zone};
use hermes_store::cron::{ClaimedRun, Job, Plan};
use hermes_store::{NewTurn, StoreError, TurnTarget};

use crate::SchedulerContext;

/// Jobs one claim takes at most.
const CLAIM_BATCH: i64 = 100;
/// Claims one pass makes at most, back to back while they come back full.
const MAX_BATCHES_A_PASS: usize = 20;
/// Runs of a batch started at once (each queues a turn and publishes its signal).
const STARTS_AT_ONCE: usize = 8;
/// A claimed run with no turn after this long was lost with its claimer.
const STALE_CLAIM: std::time::Duration = std::time::Duration::from_secs(120);
/// Slots skipped at most when fast-forwarding a late job.
const MAX_SKIPPED_SLOTS: usize = 100_000;

/// What to do with `job`, due and seen at `now`.
pub fn plan(job: &Job, now: DateTime<Utc>) -> Plan {
    let fail = |why: String| Plan { run: false, next_run_at: None, state: JobState::Error, error: Some(why) };
    let tz = match time_zone(&job.timezone) {
        Ok(tz) => tz,
        Err(e) => return fail(e.to_string()),
    };
    let schedule = match Schedule::parse(&job.schedule, now, tz) {
        Ok(s) => s,
        Err(e) => return fail(e.to_string()),
    };
    let due = job.next_run_at.unwrap_or(now);
    let run = schedule.catch_up(due, now, tz) == Catchup::Run;
    if !schedule.is_recurring() {
        return if run {
            Plan { run, next_run_at: None, state: JobState::Scheduled, error: None }
        } else {
            let why = format!("missed: it was due at {due} and the scheduler saw it only at {now}");
            Plan { run, next_run_at: None, state: JobState::Completed, error: Some(why) }
        };
    }
    let last = run && job.repeat_times.is_some_and(|times| job.repeat_completed + 1 >= times);
    // The next slot after now: missed slots are skipped, not run one after another.
    let mut next = schedule.next_after(due, tz);
    for _ in 0..MAX_SKIPPED_SLOTS {
        match next {
            Ok(Some(t)) if t <= now => next = schedule.next_after(t, tz),
            _ => break,
        }
    }
    match next {
        Ok(Some(t)) if t > now => {
            Plan { run, next_run_at: (!last).then_some(t), state: JobState::Scheduled, error: None }
        }
        Ok(_) => fail("the schedule has no next run".into()),
        Err(e) => fail(format!("the next run cannot be computed: {e}")),
    }
}

/// Where a job's answer goes, labelled with the job (see `Automation::delivery_targets`).
async fn destination(ctx: &SchedulerContext, job: &Job) -> Result<Option<Destination>, StoreError> {
    let label = RunLabel::Cron(CronLabel { job_id: job.id, name: job.name.clone() });
    ctx.store
        .automation()
        .delivery_targets(job.tenant_id, job.agent_id, &job.deliver, job.origin.as_ref(), &label)
        .await
}

/// Starts a claimed run: its turn, in a fresh session of the job's agent. The prompt is scanned
/// again first (the patterns may have grown since the job was made); a refused run fails and
/// its chat is told.
async fn start(ctx: &SchedulerContext, run: &ClaimedRun) -> Result<(), StoreError> {
    let job = &run.job;
    let reply_to = destination(ctx, job).await?;
    if let Some(finding) = hermes_threats::scan_strict(&job.prompt).first() {
        let why = format!("the prompt was refused at run time: it looks like {}", finding.reason);
        ctx.store.system().fail_run(run.run_id, &why).await?;
        if let Some(dest) = reply_to {
            let payload = OutboxPayload::text(format!("This run did not start: {why}."));
            let key = format!("cron:{}:refused", run.run_id);
            ctx.store.chat().enqueue_outbox(job.tenant_id, &dest, &key, &payload).await?;
        }
        tracing::warn!(job.id = %job.id, run.id = %run.run_id, "cron run refused by the prompt scan");
        return Ok(());
    }
    // A fired run sees what fired it above the job's own prompt.
    let prompt = match &run.context {
        Some(context) => format!("{context}\n\n{}", job.prompt),
        None => job.prompt.clone(),
    };
    let hint = format!(
        "You are running the scheduled job \"{}\" on your own: nobody is in this conversation to answer \
         questions. Do the task and reply with the result, which is delivered for you. Reply exactly \
         [SILENT] if there is nothing worth reporting.",
        job.name
    );
    let target = TurnTarget::New {
        source: hermes_core::SessionSource::Cron,
        user_key: format!("cron:{}", job.id),
        history: Vec::new(),
    };
    // The job's skills load as leading `/skill` names (the worker expands them).
    let input = ChatMessage::user(job.skills.iter().map(|s| format!("/{s} ")).collect::<String>() + &prompt);
    let turn = NewTurn {
        instructions: Some(hint),
        reply_to,
        trace: hermes_telemetry::context::current(),
        ..NewTurn::new(job.agent_id, target, input)
    };
    let Some(session) = ctx.store.system().start_run(run.run_id, job.tenant_id, &turn).await? else {
        tracing::warn!(run.id = %run.run_id, "the run was settled before it started; not starting it");
        return Ok(());
    };
    let work = SessionWork { tenant_id: job.tenant_id, session_id: session };
    if let Err(e) = ctx.broker.publish_work(&work).await {
        tracing::warn!(error = %e, "cannot signal the cron run; the reaper will pick it up");
    }
    tracing::info!(tenant.id = %job.tenant_id, job.id = %job.id, run.id = %run.run_id, "cron run started");
    Ok(())
}

/// Tells the job's chat that a run was lost (claimed, never started) and not run again.
async fn tell_unknown(ctx: &SchedulerContext, settled: &hermes_store::cron::SettledRun) -> Result<(), StoreError> {
    let job = ctx.store.automation().find_job(settled.tenant_id, None, &settled.job_id.to_string()).await?;
    let Some(dest) = destination(ctx, &job).await? else { return Ok(()) };
    // The chat shows the job's name above it (see the gateway's `render_reply`).
    let text = format!(
        "A run was lost (what started it stopped before it ran) and was not run again. The next run is as \
         scheduled; /cron run {} runs it now.",
        job.name
    );
    let key = format!("cron:{}:unknown", settled.run_id);
    ctx.store.chat().enqueue_outbox(settled.tenant_id, &dest, &key, &OutboxPayload::text(text)).await
}

/// One cron pass at `now`: claim and start, again at once while claims come back full (a
/// burst of due jobs is not held to one batch a tick), then settle. Returns the runs started.
pub async fn cron_once(ctx: &SchedulerContext, owner: &str, now: DateTime<Utc>) -> Result<usize, StoreError> {
    let mut started = 0;
    for _ in 0..MAX_BATCHES_A_PASS {
        let (claimed, batch_started) = claim_and_start(ctx, owner, now).await?;
        started += batch_started;
        if claimed < CLAIM_BATCH {
            break;
        }
    }
    for settled in ctx.store.system().settle_runs(STALE_CLAIM).await? {
        tracing::info!(tenant.id = %settled.tenant_id, job.id = %settled.job_id, run.id = %settled.run_id,
                       status = %settled.status, "cron run ended");
        if settled.status == CronRunStatus::Unknown
            && let Err(e) = tell_unknown(ctx, &settled).await
        {
            tracing::warn!(error = %e, run.id = %settled.run_id, "cannot tell the owner of a lost cron run");
        }
        metrics::counter!("hermes_cron_runs_total", "status" => settled.status.as_str()).increment(1);
    }
    Ok(started)
}

/// Claims one batch (as much as the installation's cap leaves room for) and starts its runs,
/// a few at once. Returns how many were claimed and how many started.
async fn claim_and_start(ctx: &SchedulerContext, owner: &str, now: DateTime<Utc>) -> Result<(i64, usize), StoreError> {
    let cfg = &ctx.config.scheduler;
    let running = ctx.store.system().open_cron_runs().await?;
    let room = i64::from(cfg.cron_max_parallel).saturating_sub(running).clamp(0, CLAIM_BATCH);
    if room == 0 {
        return Ok((0, 0));
    }
    let tenant_cap = i64::from(cfg.cron_max_parallel_per_tenant);
    let claimed = ctx.store.system().claim_due_jobs(owner, now, room, tenant_cap, |job| plan(job, now)).await?;
    // By index: a stream over `&ClaimedRun` makes the future's lifetime higher-ranked, which a
    // spawned task cannot prove `Send` for.
    let claimed = &claimed;
    let results: Vec<_> = futures_util::stream::iter(0..claimed.len())
        .map(|i| start(ctx, &claimed[i]))
        .buffered(STARTS_AT_ONCE)
        .collect()
        .await;
    let mut started = 0;
    for (run, result) in claimed.iter().zip(&results) {
        match result {
            Ok(()) => started += 1,
            // Left `claimed`: the settle pass declares it unknown rather than run it twice.
            Err(e) => tracing::warn!(error = %e, run.id = %run.run_id, "cannot start a cron run"),
        }
    }
    Ok((i64::try_from(claimed.len()).unwrap_or(i64::MAX), started))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn job(schedule: &str, next: DateTime<Utc>) -> Job {
        let job = hermes_store::cron::CronJob {
            id: uuid::Uuid::nil().into(),
            agent_id: hermes_core::AgentId::new(),
            name: "brief".into(),
            prompt: "news".into(),
            skills: vec![],
            model: None,
            schedule: schedule.into(),
            schedule_kind: "interval".into(),
            schedule_display: schedule.into(),
            timezone: "UTC".into(),
            repeat_times: None,
            repeat_completed: 0,
            state: JobState::Scheduled,
            paused_reason: None,
            next_run_at: Some(next),
            last_run_at: None,
            last_status: None,
            last_error: None,
            last_delivery_error: None,
            deliver: "local".into(),
            origin: None,
            toolsets: None,
            script: None,
            no_agent: false,
            context_from: Vec::new(),
            workdir: None,
            created_at: next,
        };
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant_id = hermes_core::TenantId::from_authenticated(uuid::Uuid::nil());
        Job { tenant_id, job }
    }

    #[test]
    fn a_job_runs_on_time_and_moves_to_its_next_slot_without_drift() {
        let due = DateTime::parse_from_rfc3339("2026-11-30T08:00:00Z").unwrap().with_timezone(&Utc);
        let p = plan(&job("every 1h", due), due + Duration::seconds(3));
        assert!(p.run);
        assert_eq!(p.next_run_at, Some(due + Duration::hours(1)), "from the slot, not from when it was seen");
    }

    #[test]
    fn after_downtime_a_recurring_job_runs_once_or_skips_and_a_one_shot_is_missed() {
        let due = DateTime::parse_from_rfc3339("2026-11-30T08:00:00Z").unwrap().with_timezone(&Utc);
        // Hourly, 20 minutes late: run once, next at 09:00.
        let p = plan(&job("every 1h", due), due + Duration::minutes(20));
        assert!(p.run && p.next_run_at == Some(due + Duration::hours(1)));
        // Hourly, 5 h 40 late: skip to 14:00, run nothing now.
        let p = plan(&job("every 1h", due), due + Duration::minutes(340));
        assert!(!p.run);
        assert_eq!(p.next_run_at, Some(due + Duration::hours(6)));
        // A one-shot 3 minutes late is missed and completes, saying why.
        let p = plan(&job(&due.to_rfc3339(), due), due + Duration::minutes(3));
        assert!(
            !p.run && p.state == JobState::Completed && p.error.as_deref().is_some_and(|e| e.starts_with("missed"))
        );
        // The last of N repeats leaves no next run.
        let mut last = job("every 1h", due);
        last.job.repeat_times = Some(3);
        last.job.repeat_completed = 2;
        assert_eq!(plan(&last, due).next_run_at, None);
        // A schedule that cannot be read puts the job in error, never silently off.
        let p = plan(&job("every fortnight", due), due);
        assert!(!p.run && p.state == JobState::Error);
    }
}
