//! One tenant cannot take the schedulers' batches: cron claims fill round-robin across tenants
//! and stop at each tenant's cap of open runs, counting the runs the same claim takes.

use std::collections::HashMap;

use chrono::Utc;
use hermes_store::cron::Plan;
use sqlx::PgPool;

use crate::common;

fn next_hour(now: chrono::DateTime<Utc>) -> impl Fn(&hermes_store::cron::Job) -> Plan {
    move |_| Plan {
        run: true,
        next_run_at: Some(now + chrono::Duration::hours(1)),
        state: hermes_core::JobState::Scheduled,
        error: None,
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_tenant_with_many_due_jobs_gets_its_cap_and_the_others_their_turn(pool: PgPool) {
    let store = common::store(&pool);
    let (busy, quiet) = (common::tenant(&store, "busy").await, common::tenant(&store, "quiet").await);
    // The busy tenant's twenty jobs are all more overdue than the quiet tenant's two.
    for i in 0..20 {
        let due = Utc::now() - chrono::Duration::minutes(60 - i);
        store.automation().create_job(busy.id, &common::job(&busy, &format!("job-{i}"), due)).await.unwrap();
    }
    for i in 0..2 {
        let due = Utc::now() - chrono::Duration::minutes(1);
        store.automation().create_job(quiet.id, &common::job(&quiet, &format!("job-{i}"), due)).await.unwrap();
    }
    let now = Utc::now();
    let per_tenant = |runs: &[hermes_store::cron::ClaimedRun]| {
        let mut count: HashMap<hermes_core::TenantId, usize> = HashMap::new();
        for run in runs {
            *count.entry(run.job.tenant_id).or_default() += 1;
        }
        (count.get(&busy.id).copied().unwrap_or(0), count.get(&quiet.id).copied().unwrap_or(0))
    };

    // Round-robin: each tenant's most overdue job first.
    let first = store.system().claim_due_jobs("scheduler", now, 3, 10, next_hour(now)).await.unwrap();
    assert_eq!(per_tenant(&first), (2, 1), "the quiet tenant is served within the first batch");
    // The cap counts what this claim takes: the busy tenant stops at 10 open runs.
    let second = store.system().claim_due_jobs("scheduler", now, 100, 10, next_hour(now)).await.unwrap();
    assert_eq!(per_tenant(&second), (8, 1));
    let third = store.system().claim_due_jobs("scheduler", now, 100, 10, next_hour(now)).await.unwrap();
    assert!(third.is_empty(), "nothing more until a run ends: {}", third.len());
}
