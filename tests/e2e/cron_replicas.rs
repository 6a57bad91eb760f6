//! Cron across scheduler processes and downtime: a scheduler SIGKILLed while it claims and
//! starts runs leaves every due slot run at most once (what it claimed and never started is
//! declared `unknown`, not run again; what it had not committed, another replica takes); and
//! after downtime each kind of job catches up by the rules (fake clock: the pass's `now`).

use std::time::Duration;

use chrono::{DateTime, Utc};

use hermes_scheduler::SchedulerContext;
use hermes_store::cron::JobTiming;

use crate::harness::{Roles, Team, TestEnv};

/// A scheduler process, killed when the test ends however it ends (a failed assertion must
/// not leave it running).
struct Scheduler(std::process::Child);

impl Scheduler {
    fn start(env: &TestEnv, id: &str) -> Self {
        Self(env.spawn_hermesd_with(&["scheduler"], id, &settings()))
    }

    /// SIGKILL, and wait for it to be gone.
    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.kill();
    }
}

fn settings() -> Vec<(&'static str, String)> {
    vec![
        ("HERMES__SCHEDULER__CRON_INTERVAL_MILLIS", "100".into()),
        ("HERMES__SCHEDULER__CRON_MAX_PARALLEL", "10000".into()),
        ("HERMES__SCHEDULER__CRON_MAX_PARALLEL_PER_TENANT", "10000".into()),
    ]
}

#[tokio::test]
async fn a_scheduler_killed_while_claiming_leaves_each_slot_run_at_most_once() {
    let Team { env, tenant, agent, .. } = Team::start(Roles::API_ONLY, "helper").await;
    const JOBS: i64 = 400;
    for i in 0..JOBS {
        env.store.automation().create_job(tenant, &super::cron::job(agent.id, &format!("job {i}"))).await.unwrap();
    }
    let mut a = Scheduler::start(&env, "sched-a");
    let mut b = Scheduler::start(&env, "sched-b");
    // Kill one as soon as both are making runs.
    env.wait_for_count("SELECT count(DISTINCT claimed_by) FROM cron_runs", 2).await;
    a.kill();
    env.wait_for_count("SELECT count(*) FROM cron_runs", JOBS).await;
    // Both stopped, the ledger is still: every due slot claimed once, a turn for each started run.
    b.kill();
    assert_eq!(env.count("SELECT count(*) FROM cron_runs").await, JOBS, "every due slot claimed once");
    assert_eq!(env.count("SELECT count(DISTINCT job_id) FROM cron_runs").await, JOBS);
    let started = env.count("SELECT count(*) FROM cron_runs WHERE status = 'running'").await;
    let turns = env.count("SELECT count(*) FROM turns").await;
    assert_eq!(turns, started, "one turn per started run, none for a run that was not started");
    let owners = env.count("SELECT count(DISTINCT claimed_by) FROM cron_runs").await;
    assert_eq!(owners, 2, "both replicas claimed some");
    // Claimed and never started: declared unknown once stale, and never run again.
    let stranded = env.count("SELECT count(*) FROM cron_runs WHERE status = 'claimed'").await;
    let settled = env.store.system().settle_runs(Duration::ZERO).await.unwrap();
    assert_eq!(settled.iter().filter(|s| s.status == hermes_core::CronRunStatus::Unknown).count() as i64, stranded);
    let mut c = Scheduler::start(&env, "sched-c");
    // Nothing may run again over many of C's passes: the sleep is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(env.count("SELECT count(*) FROM cron_runs").await, JOBS, "nothing ran again");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, turns);
    c.kill();
    env.stop().await;
}

fn at(spec: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(spec).unwrap().with_timezone(&Utc)
}

fn timing(schedule: &str, kind: &str, due: &str) -> JobTiming {
    JobTiming {
        schedule: schedule.into(),
        schedule_kind: kind.into(),
        schedule_display: schedule.into(),
        timezone: "UTC".into(),
        repeat_times: (kind == "once").then_some(1),
        next_run_at: at(due),
    }
}

#[tokio::test]
async fn after_downtime_each_job_runs_once_or_skips_to_its_next_slot() {
    let Team { env, tenant, agent, .. } = Team::start(Roles::API_ONLY, "helper").await;
    // The scheduler comes back at 12:00 (its clock is the pass's `now`).
    let now = at("2026-11-30T12:00:00Z");
    let cases = [
        // name, schedule, kind, due, runs now, next run afterwards
        ("hourly, 20 min late", "every 1h", "interval", "2026-11-30T11:40:00Z", true, Some("2026-11-30T12:40:00Z")),
        ("hourly, 5 h late", "every 1h", "interval", "2026-11-30T06:20:00Z", false, Some("2026-11-30T12:20:00Z")),
        (
            "10-minutely, 4 min late",
            "every 10m",
            "interval",
            "2026-11-30T11:56:00Z",
            true,
            Some("2026-11-30T12:06:00Z"),
        ),
        ("daily, 3 h late", "0 9 * * *", "cron", "2026-11-30T09:00:00Z", false, Some("2026-12-01T09:00:00Z")),
        ("daily, 90 min late", "30 10 * * *", "cron", "2026-11-30T10:30:00Z", true, Some("2026-12-01T10:30:00Z")),
        ("one-shot, 90 s late", "2026-11-30T11:58:30Z", "once", "2026-11-30T11:58:30Z", true, None),
        ("one-shot, 3 min late", "2026-11-30T11:57:00Z", "once", "2026-11-30T11:57:00Z", false, None),
    ];
    for (name, schedule, kind, due, _, _) in cases {
        let mut new = super::cron::job(agent.id, name);
        new.timing = timing(schedule, kind, due);
        env.store.automation().create_job(tenant, &new).await.unwrap();
    }
    let ctx = SchedulerContext {
        config: std::sync::Arc::new(env.config.clone()),
        store: env.store.clone(),
        broker: hermes_queue::Broker::connect(&env.config.rabbitmq, "catch-up").await.unwrap(),
        cache: hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap(),
    };
    let started = hermes_scheduler::cron::cron_once(&ctx, "back", now).await.unwrap();
    assert_eq!(started, cases.iter().filter(|c| c.4).count());
    for (name, _, _, _, runs, next) in cases {
        let (count, next_run, state): (i64, Option<DateTime<Utc>>, String) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM cron_runs r WHERE r.job_id = j.id), j.next_run_at, j.state
             FROM cron_jobs j WHERE j.name = $1",
        )
        .bind(name)
        .fetch_one(&env.db)
        .await
        .unwrap();
        assert_eq!(count, i64::from(runs), "{name}: runs now");
        assert_eq!(next_run, next.map(at), "{name}: next run");
        if name == "one-shot, 3 min late" {
            assert_eq!(state, "completed", "a missed one-shot is over, and says why");
        }
    }
    // Nothing is due again at the same instant: a second pass starts nothing.
    assert_eq!(hermes_scheduler::cron::cron_once(&ctx, "back", now).await.unwrap(), 0);
    env.stop().await;
}

#[tokio::test]
async fn a_burst_larger_than_one_claim_starts_in_one_pass_and_each_slot_once() {
    let Team { env, tenant, agent, .. } = Team::start(Roles::API_ONLY, "helper").await;
    // 250 jobs due at once: one claim takes 100, so a pass must claim again while claims come
    // back full (before, a burst waited a tick per 100).
    const JOBS: usize = 250;
    for i in 0..JOBS {
        env.store.automation().create_job(tenant, &super::cron::job(agent.id, &format!("burst {i}"))).await.unwrap();
    }
    let mut config = env.config.clone();
    config.scheduler.cron_max_parallel = 10_000;
    config.scheduler.cron_max_parallel_per_tenant = 10_000;
    let ctx = SchedulerContext {
        config: std::sync::Arc::new(config),
        store: env.store.clone(),
        broker: hermes_queue::Broker::connect(&env.config.rabbitmq, "burst").await.unwrap(),
        cache: hermes_cache::Cache::connect(&env.config.redis.url, &env.config.redis.key_prefix).await.unwrap(),
    };
    let now = Utc::now();
    assert_eq!(hermes_scheduler::cron::cron_once(&ctx, "burst", now).await.unwrap(), JOBS, "all started in one pass");
    assert_eq!(env.count("SELECT count(DISTINCT job_id) FROM cron_runs").await, JOBS as i64);
    assert_eq!(env.count("SELECT count(*) FROM cron_runs").await, JOBS as i64, "one run a slot");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, JOBS as i64, "one turn a run");
    assert_eq!(env.count("SELECT count(*) FROM cron_jobs WHERE next_run_at <= now()").await, 0, "every job moved on");
    assert_eq!(hermes_scheduler::cron::cron_once(&ctx, "burst", now).await.unwrap(), 0, "nothing twice");
    env.stop().await;
}
