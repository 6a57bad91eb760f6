//! Postgres as an HA install runs it: a primary and a synchronous streaming standby
//! (`deploy/dev/postgres-standby.sh`), every pod given both servers in one multi-host
//! `database.url` with `target_session_attrs=read-write`. While turns stream in through the
//! API and a Telegram bot, the primary is SIGKILLed and the standby promoted, as an HA manager
//! would. Every question and chat message is answered exactly once, and the test prints how
//! long after the promotion the turns in flight were answered (docs/CHAOS.md).

use std::time::{Duration, Instant};

use crate::harness::stream::{
    ChatStream, DevNodes, Workers, api_client, assert_each_chat_answered_once, assert_each_question_answered_once,
    assert_every_turn_completed, under_load,
};
use crate::harness::{Backing, Roles, TestEnv, free_port, poll_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_in_flight_are_answered_once_after_the_standby_is_promoted() {
    let pair = tokio::task::block_in_place(|| {
        DevNodes::start("postgres-standby.sh", "HERMES_PG_DIR", &[("HERMES_PG_SYNC", "1")])
    });
    let backing = Backing { postgres_port: 5441, postgres_standby_port: Some(5442), ..Backing::shared() };
    let (env, tg, pod, key) = under_load(&backing, Roles::NO_WORKER, Duration::from_millis(300), "failover").await;
    // An API pod of its own, for its /readyz (the test's in-process API has no checks).
    let pod_api = format!("http://127.0.0.1:{}", free_port());
    let bind = ("HERMES__HTTP__BIND", pod_api.trim_start_matches("http://").to_owned());
    let _workers = Workers(vec![
        env.spawn_hermesd(&["worker"], "worker-a"),
        env.spawn_hermesd(&["worker"], "worker-b"),
        env.spawn_hermesd_with(&["api"], "api-pod", &[bind]),
    ]);
    readiness_until(&env, &pod_api, |status| status == 200).await;

    let clients: Vec<_> =
        (0..3).map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, 10))).collect();
    let mut chats = ChatStream::default();
    chats.say(&tg, 2001);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    chats.say(&tg, 2002);
    tokio::task::block_in_place(|| pair.run(&["kill-primary"]));
    let killed = Instant::now();
    chats.say(&tg, 2003);
    // Without a primary the API is not ready: Kubernetes takes it out of its Service.
    let (status, body) = readiness_until(&env, &pod_api, |status| status != 200).await;
    assert!(status == 503 && body["checks"]["postgres"] != "ok", "{status} {body}");
    tokio::time::sleep(Duration::from_millis(500).saturating_sub(killed.elapsed())).await;
    tokio::task::block_in_place(|| pair.run(&["promote"]));
    let promoted = Instant::now();
    let db_name = env.config.database.url.rsplit('/').next().unwrap().split('?').next().unwrap().to_owned();
    let db = sqlx::PgPool::connect(&format!("postgres://postgres@127.0.0.1:5442/{db_name}")).await.unwrap();
    let promoted_at: chrono::DateTime<chrono::Utc> = sqlx::query_scalar("SELECT now()").fetch_one(&db).await.unwrap();
    chats.say(&tg, 2004);
    let probe = api_client(env.http.clone(), env.api_url.clone(), key.clone(), 99, 1).await;
    let probe_took = promoted.elapsed();
    let (_, body) = readiness_until(&env, &pod_api, |status| status == 200).await;
    assert_eq!(body["checks"]["postgres"], "ok", "ready again on the promoted primary: {body}");
    let ready_again = promoted.elapsed();
    assert_eq!(probe[0].1, format!("echo: {}", probe[0].0));
    let mut api = probe;
    for client in clients {
        api.extend(client.await.unwrap());
    }
    let all_answered = promoted.elapsed();

    // What is left on the promoted server.
    assert_each_question_answered_once(&db, &api, api.len()).await;
    assert_each_chat_answered_once(&tg, &chats.sent).await;
    assert_every_turn_completed(&db).await;
    // The turns created before the promotion: how long after it the last of them finished.
    let in_flight: Option<f64> = sqlx::query_scalar(
        "SELECT extract(epoch FROM max(finished_at) - $1)::float8 FROM turns WHERE created_at < $1 AND finished_at > $1",
    )
    .bind(promoted_at)
    .fetch_one(&db)
    .await
    .unwrap();
    let retried: u32 = api.iter().map(|(_, _, tries)| tries - 1).sum();
    eprintln!(
        "pg failover: {} API questions ({retried} retries), {} chat messages; lost 0, doubled 0; \
         the last turn in flight at the promotion finished {:.2} s after it; a question asked at the \
         promotion answered after {:.2} s, every question after {:.2} s; /readyz 503 without a primary, \
         200 again {:.2} s after the promotion",
        api.len(),
        chats.sent.len(),
        in_flight.unwrap_or_default(),
        probe_took.as_secs_f64(),
        all_answered.as_secs_f64(),
        ready_again.as_secs_f64(),
    );
    pod.stop_with(env).await;
}

/// Polls the `/readyz` of the API at `url` until its status satisfies `wanted`; its status
/// and body.
async fn readiness_until(env: &TestEnv, url: &str, wanted: impl Fn(u16) -> bool) -> (u16, serde_json::Value) {
    poll_until(async || {
        let resp = env.http.get(format!("{url}/readyz")).send().await.ok()?;
        let status = resp.status().as_u16();
        wanted(status).then_some((status, resp.json().await.ok()?))
    })
    .await
    .expect("/readyz reaches the wanted state")
}
