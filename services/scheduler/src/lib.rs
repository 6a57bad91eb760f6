//! The `scheduler` role: periodic work claimed from Postgres with `FOR UPDATE SKIP LOCKED`,
//! so any number of replicas run without a leader. Now: the lease reaper, which republishes
//! turns whose worker vanished or whose work message was lost, and the expiry of questions
//! parked turns wait on; the retention sweep, which deletes sessions past their tenant's
//! retention period; the skills curator; and cron ([`cron`]).

pub mod cron;
pub mod gone;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_cache::Cache;
use hermes_config::HermesConfig;
use hermes_queue::{Broker, SessionWork};
use hermes_store::Store;

/// What the scheduler role needs.
#[derive(Clone)]
pub struct SchedulerContext {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub broker: Broker,
    /// Session locks, which the reaper releases for workers it found gone.
    pub cache: Cache,
}

/// One reaper pass; returns how many turns were republished.
pub async fn reap_once(ctx: &SchedulerContext) -> Result<usize, hermes_store::StoreError> {
    let cfg = &ctx.config;
    let grace = Duration::from_secs(cfg.scheduler.queued_grace_seconds);
    // Do not republish the same turn more often than a lease lasts.
    let backoff = Duration::from_secs(cfg.worker.lease_seconds);
    let mut stranded = ctx.store.system().reap_stranded_turns(grace, backoff, 500).await?;
    // Turns whose question nobody answered in time go on without the answer.
    let expired = ctx.store.system().expire_interactions(500).await?;
    if !expired.is_empty() {
        tracing::info!(count = expired.len(), "interactions expired; their turns resume");
        metrics::counter!("hermes_interactions_expired_total").increment(expired.len() as u64);
    }
    stranded.extend(expired);
    republish(ctx, &stranded).await;
    Ok(stranded.len())
}

/// Publishes the work of `turns` again; one that fails waits for the next pass.
async fn republish(ctx: &SchedulerContext, turns: &[hermes_store::StrandedTurn]) {
    metrics::counter!("hermes_reaper_republished_total").increment(turns.len() as u64);
    for turn in turns {
        let work = SessionWork { tenant_id: turn.tenant_id, session_id: turn.session_id };
        match ctx.broker.publish_work(&work).await {
            Ok(()) => {
                tracing::info!(tenant.id = %turn.tenant_id, session.id = %turn.session_id, turn.id = %turn.turn_id, "republished stranded turn")
            }
            Err(e) => {
                tracing::warn!(error = %e, turn.id = %turn.turn_id, "cannot republish; next pass retries")
            }
        }
    }
}

/// How often the backlog gauges are read from Postgres (one small statement).
const GAUGE_INTERVAL: Duration = Duration::from_secs(5);

/// Reads the installation's backlog and sets its gauges. Every replica reads the same rows,
/// so each reports the same figures: aggregate with `max` across replicas, never `sum`.
pub async fn gauges_once(ctx: &SchedulerContext) -> Result<hermes_store::Backlog, hermes_store::StoreError> {
    let backlog = ctx.store.system().backlog().await?;
    let open_cron_runs = ctx.store.system().open_cron_runs().await?;
    // Row counts: far below f64's exact-integer range.
    metrics::gauge!("hermes_turns_queued").set(backlog.turns_queued as f64);
    metrics::gauge!("hermes_turns_running").set(backlog.turns_running as f64);
    metrics::gauge!("hermes_outbox_waiting").set(backlog.outbox_waiting as f64);
    metrics::gauge!("hermes_cron_jobs_late").set(backlog.cron_jobs_late as f64);
    metrics::gauge!("hermes_cron_runs_open").set(open_cron_runs as f64);
    metrics::gauge!("hermes_turns_queued_oldest_seconds").set(backlog.oldest_queued_seconds);
    metrics::gauge!("hermes_outbox_oldest_seconds").set(backlog.oldest_outbox_seconds);
    Ok(backlog)
}

/// Deletes finished turns, files and usage detail past their tenant's period.
async fn prune_past_retention(ctx: &SchedulerContext) -> Result<(), hermes_store::StoreError> {
    use hermes_store::system::data_retention::{Pruned, RetentionDefaults};
    let retention = &ctx.config.retention;
    let defaults = RetentionDefaults {
        turns_days: retention.turns_days,
        files_days: retention.files_days,
        usage_detail_days: retention.usage_detail_days,
    };
    let past = ctx.store.system().prune_past_retention(defaults, 1_000).await?;
    if past != Pruned::default() {
        let (turns, files, usage_detail) = (past.turns, past.files, past.usage_detail);
        tracing::info!(turns, files, usage_detail, "deleted data past its retention");
    }
    Ok(())
}

/// A tenant's deletion left unfinished for this long (its pod stopped) is finished here.
const DELETION_LEFT_FOR: chrono::Duration = chrono::Duration::minutes(10);

/// Finishes the deletions of tenants marked a while ago and still there (`hermes_ops::tenant_data`).
async fn finish_tenant_deletions(ctx: &SchedulerContext) {
    let left = match ctx.store.system().unfinished_tenant_deletions(chrono::Utc::now() - DELETION_LEFT_FOR).await {
        Ok(left) => left,
        Err(e) => return tracing::warn!(error = %e, "cannot look for unfinished tenant deletions"),
    };
    let by = hermes_store::admin::Audit {
        actor: hermes_store::admin::Actor {
            kind: hermes_store::admin::ActorKind::System,
            id: "scheduler".into(),
            label: "the scheduler (an unfinished deletion)".into(),
        },
        request_id: None,
        source_address: None,
    };
    for tenant in left {
        match hermes_ops::tenant_data::delete(&ctx.store, &by, tenant).await {
            Ok(done) => {
                let keys = ctx.cache.forget_tenant(tenant).await;
                tracing::info!(%tenant, rows = done.removed.values().sum::<u64>(), ?keys, "finished a tenant's deletion");
            }
            Err(e) => tracing::warn!(%tenant, error = %e, "a tenant's deletion is still unfinished"),
        }
    }
}

/// One retention sweep: deletes expired sessions in batches until none are left (with what
/// they own), then week-old platform updates and replies (the gateway prunes event
/// deliveries), then audit entries past `admin.audit_retention_days`, then finished turns,
/// files and usage detail past their tenant's period (`retention.*`); before all that, it
/// finishes tenant deletions left half done. Returns how many sessions went.
pub async fn prune_once(ctx: &SchedulerContext) -> Result<u64, hermes_store::StoreError> {
    const BATCH: i64 = 500;
    // First: a failure further on must not hold a tenant's deletion back.
    finish_tenant_deletions(ctx).await;
    let mut total = 0;
    loop {
        let default_days = ctx.config.retention.sessions_days;
        let removed = ctx.store.system().prune_sessions(chrono::Utc::now(), default_days, BATCH).await?;
        total += removed;
        if removed < BATCH as u64 {
            break;
        }
    }
    let keys = ctx.store.system().prune_idempotency_keys().await?;
    if keys > 0 {
        tracing::debug!(keys, "forgot day-old idempotency keys");
    }
    let traffic = ctx.store.system().prune_chat_traffic().await?;
    if traffic > 0 {
        tracing::debug!(rows = traffic, "forgot week-old platform updates and replies");
    }
    let watches = ctx.store.system().prune_process_watches().await?;
    if watches > 0 {
        tracing::debug!(rows = watches, "forgot process watches that ended a week ago");
    }
    let mut audit = 0;
    loop {
        let removed = ctx.store.system().prune_audit(ctx.config.admin.audit_retention_days.max(1), 5_000).await?;
        audit += removed;
        if removed < 5_000 {
            break;
        }
    }
    if audit > 0 {
        tracing::info!(entries = audit, "deleted audit entries past their retention");
    }
    let lapsed = ctx.store.system().prune_spend_reservations().await?;
    if lapsed > 0 {
        tracing::info!(reservations = lapsed, "forgot spend reservations whose worker never settled them");
    }
    prune_past_retention(ctx).await?;
    if total > 0 {
        tracing::info!(sessions = total, "pruned sessions past their tenant's retention");
        metrics::counter!("hermes_sessions_pruned_total").increment(total);
    }
    Ok(total)
}

/// One curator pass at `now`: visits agents idle for `learning.curator_idle_minutes` whose
/// last visit is older than `learning.curator_every_days`, and marks the skills they wrote stale
/// or archived by how long they went unused (see `Agents::curate_agent_skills`). Returns how
/// many skills changed.
pub async fn curate_once(
    ctx: &SchedulerContext,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<usize, hermes_store::StoreError> {
    let learning = &ctx.config.learning;
    let minutes = |m: u64| chrono::Duration::minutes(i64::try_from(m).unwrap_or(i64::MAX / 60_000));
    let days = |d: u64| chrono::Duration::days(i64::try_from(d).unwrap_or(100_000).min(100_000));
    let rules = hermes_store::CuratorRules {
        stale_after: days(learning.stale_after_days),
        archive_after: days(learning.archive_after_days),
    };
    let mut changed = 0;
    loop {
        let agents = ctx
            .store
            .system()
            .claim_agents_for_curation(
                now,
                minutes(learning.curator_idle_minutes),
                days(learning.curator_every_days),
                50,
            )
            .await?;
        for (tenant, agent) in &agents {
            let changes = ctx.store.agents().curate_agent_skills(*tenant, *agent, now, rules).await?;
            for c in &changes {
                tracing::info!(tenant.id = %tenant, agent.id = %agent, skill = %c.name, from = %c.from, to = %c.to, "curator changed a skill");
            }
            changed += changes.len();
        }
        if agents.len() < 50 {
            break;
        }
    }
    metrics::counter!("hermes_curator_changes_total").increment(changed as u64);
    Ok(changed)
}

/// Runs the reaper every `scheduler.reaper_interval_millis`, cron every
/// `scheduler.cron_interval_millis`, the backlog gauges every 5 s and the retention sweep
/// every `scheduler.prune_interval_seconds` until `shutdown`. The three run side by side: a
/// long cron pass (a burst of due jobs) or sweep (a tenant's deletion) never holds up the
/// reaper, which resumes the turns of dead workers.
pub async fn run(ctx: SchedulerContext, shutdown: CancellationToken) {
    tracing::info!(
        interval_ms = ctx.config.scheduler.reaper_interval_millis.max(100),
        "scheduler running (lease reaper, cron, retention)"
    );
    tokio::join!(reaper_loop(&ctx, &shutdown), cron_loop(&ctx, &shutdown), sweep_loop(&ctx, &shutdown));
    tracing::info!("scheduler stopped");
}

fn every(period: Duration) -> tokio::time::Interval {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick
}

/// The lease reaper, gone workers and the backlog gauges.
async fn reaper_loop(ctx: &SchedulerContext, shutdown: &CancellationToken) {
    let mut tick = every(Duration::from_millis(ctx.config.scheduler.reaper_interval_millis.max(100)));
    let mut gauges = every(GAUGE_INTERVAL);
    let mut gone = gone::GoneWorkers::default();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = tick.tick() => {
                if let Err(e) = reap_once(ctx).await {
                    tracing::warn!(error = %e, "lease reaper pass failed");
                    gone.database_trouble();
                }
                if let Err(e) = gone.pass(ctx).await {
                    tracing::warn!(error = %e, "cannot look for gone workers");
                    gone.database_trouble();
                }
            }
            _ = gauges.tick() => {
                if let Err(e) = gauges_once(ctx).await {
                    tracing::warn!(error = %e, "cannot read the backlog for the gauges");
                }
            }
        }
    }
}

async fn cron_loop(ctx: &SchedulerContext, shutdown: &CancellationToken) {
    let mut cron = every(Duration::from_millis(ctx.config.scheduler.cron_interval_millis.max(100)));
    let owner = format!("scheduler-{}", uuid::Uuid::now_v7().simple());
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = cron.tick() => {
                if let Err(e) = cron::cron_once(ctx, &owner, chrono::Utc::now()).await {
                    tracing::warn!(error = %e, "cron pass failed");
                }
            }
        }
    }
}

/// Retention, tenant deletions and the skill curator.
async fn sweep_loop(ctx: &SchedulerContext, shutdown: &CancellationToken) {
    let mut prune = every(Duration::from_secs(ctx.config.scheduler.prune_interval_seconds.max(1)));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            _ = prune.tick() => {
                if let Err(e) = prune_once(ctx).await {
                    tracing::warn!(error = %e, "retention sweep failed");
                }
                if let Err(e) = curate_once(ctx, chrono::Utc::now()).await {
                    tracing::warn!(error = %e, "curator pass failed");
                }
            }
        }
    }
}
