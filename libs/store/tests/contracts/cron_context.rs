//! A cron run's context (`context_from`): the latest spoken output of the jobs it names, and
//! only of its own tenant's jobs, named by id or by name.

use chrono::Utc;
use hermes_store::StoreError;
use hermes_store::cron::JobOutput;
use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_runs_context_is_its_own_tenants_jobs_latest_spoken_output(pool: PgPool) {
    let store = common::store(&pool);
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "beta").await);
    let job = store.automation().create_job(a.id, &common::job(&a, "watch", Utc::now())).await.unwrap();
    // Three finished runs, oldest first: the newest said nothing worth sending.
    for (minutes_ago, output) in [(30, "old"), (20, "new"), (10, "[SILENT]")] {
        sqlx::query(
            "INSERT INTO cron_runs (id, tenant_id, job_id, scheduled_for, status, output, claimed_by, finished_at)
             VALUES ($1, $2, $3, now() - make_interval(mins => $4), 'completed', $5, 'test',
                     now() - make_interval(mins => $4))",
        )
        .bind(uuid::Uuid::now_v7())
        .bind(a.id.as_uuid())
        .bind(job.id.as_uuid())
        .bind(minutes_ago)
        .bind(output)
        .execute(&pool)
        .await
        .unwrap();
    }
    let wanted = [job.id];
    let seen = store.automation().latest_outputs(a.id, a.agent, &wanted, 2).await.unwrap();
    assert_eq!(seen, [JobOutput { name: "watch".into(), output: "ne".into() }], "the latest spoken, cut");
    let theirs = store.automation().latest_outputs(b.id, b.agent, &wanted, 100).await.unwrap();
    assert!(theirs.is_empty(), "not another tenant's");
    let other_agent = store.agents().create_agent(a.id, common::new_agent("other"), None).await.unwrap().id;
    let not_its = store.automation().latest_outputs(a.id, other_agent, &wanted, 100).await.unwrap();
    assert!(not_its.is_empty(), "not another agent's");
    // A run a webhook fired read a stranger's event: its output is nobody's context.
    sqlx::query("UPDATE cron_runs SET context = 'a stranger''s event' WHERE output = 'new'")
        .execute(&pool)
        .await
        .unwrap();
    let seen = store.automation().latest_outputs(a.id, a.agent, &wanted, 100).await.unwrap();
    assert_eq!(seen, [JobOutput { name: "watch".into(), output: "old".into() }]);

    let by_both = [" watch ".to_owned(), job.id.to_string(), String::new()];
    assert_eq!(store.automation().job_ids(a.id, a.agent, &by_both).await.unwrap(), [job.id], "each job once");
    let theirs = store.automation().job_ids(b.id, b.agent, &[job.id.to_string()]).await;
    assert!(matches!(&theirs, Err(StoreError::Invalid(why)) if why.contains("no job")), "{theirs:?}");
}
