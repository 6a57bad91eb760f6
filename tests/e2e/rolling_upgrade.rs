//! A rolling upgrade as Kubernetes runs one: the new release's migrations are applied while
//! the previous release's pods still serve, then pods are replaced one by one, so for minutes
//! both builds share the database and the queue. The previous release's `hermesd` is built
//! from its pinned commit by `deploy/dev/rolling-upgrade.sh` (`deploy/dev/test.sh` does it and
//! sets `HERMES_PREVIOUS_HERMESD`). On the new schema: an old worker answers the turns this
//! build's API and gateway queue; this build's worker answers the turns an old API queues; and
//! with one worker of each build taking turns from one queue, the old one stopped mid-stream
//! as a rollout stops it, every question is answered exactly once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::harness::stream::{
    ChatStream, Workers, api_client, assert_each_chat_answered_once, assert_each_question_answered_once,
    assert_every_turn_completed, under_load,
};
use crate::harness::{Backing, Roles, TestEnv, free_port, poll_until};

/// The previous release's `hermesd`; `None` when `deploy/dev/test.sh` found no commit to
/// build it from (a shallow clone), which it reported.
fn previous_hermesd() -> Option<PathBuf> {
    let path = std::env::var_os("HERMES_PREVIOUS_HERMESD").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "HERMES_PREVIOUS_HERMESD names the previous release's hermesd: build it with deploy/dev/rolling-upgrade.sh"
        )
    });
    if path.as_os_str() == "skip" {
        eprintln!("rolling upgrade: skipped, no previous release's hermesd (see deploy/dev/test.sh)");
        return None;
    }
    assert!(path.is_file(), "{} is not a file", path.display());
    Some(path)
}

/// An API pod of `hermesd` at `build`, answering on the returned URL once it is ready.
async fn api_pod(env: &TestEnv, build: &Path) -> (Workers, String) {
    let port = free_port();
    let child = env.spawn_build(build, &["api"], "old-api", &[("HERMES__HTTP__BIND", format!("127.0.0.1:{port}"))]);
    let url = format!("http://127.0.0.1:{port}");
    poll_until(async || {
        let resp = env.http.get(format!("{url}/readyz")).send().await.ok()?;
        (resp.status() == 200).then_some(())
    })
    .await
    .expect("the previous release's API is ready on the new schema");
    (Workers(vec![child]), url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_and_new_pods_answer_each_others_turns_across_the_migration() {
    let Some(old) = previous_hermesd() else { return };
    // The environment runs this build's migrations: the database is at the new schema.
    let (env, tg, pod, key) =
        under_load(&Backing::shared(), Roles::NO_WORKER, Duration::from_millis(100), "upgrade").await;
    let mut chats = ChatStream::default();
    let mut api = Vec::new();

    // 1. Only an old worker: it answers what this build's API and gateway queue. Its turns
    // take 2.5 s, long enough for this build's reaper to look at them twice.
    env.llm.set_default_latency(Duration::from_millis(2500));
    let old_worker = Workers(vec![env.spawn_build(&old, &["worker"], "old-worker", &[])]);
    chats.say(&tg, 4001);
    api.extend(api_client(env.http.clone(), env.api_url.clone(), key.clone(), 0, 2).await);
    assert_each_chat_answered_once(&tg, &chats.sent).await;
    let retaken: i64 =
        sqlx::query_scalar("SELECT count(*) FROM turns WHERE attempts > 1").fetch_one(&env.db).await.unwrap();
    assert_eq!(retaken, 0, "this build's reaper leaves a live old worker's turns alone (it holds no presence lock)");
    env.llm.set_default_latency(Duration::from_millis(100));

    // 2. One worker of each build on one queue; the old one stopped mid-stream.
    let new_worker = Workers(vec![env.spawn_hermesd(&["worker"], "new-worker")]);
    let clients: Vec<_> =
        (1..3).map(|c| tokio::spawn(api_client(env.http.clone(), env.api_url.clone(), key.clone(), c, 6))).collect();
    chats.say(&tg, 4002);
    tokio::time::sleep(Duration::from_millis(800)).await;
    drop(old_worker);
    chats.say(&tg, 4003);
    for client in clients {
        api.extend(client.await.unwrap());
    }

    // 3. An old API pod beside this build's worker: what it queues, the new worker answers.
    let (_old_api, old_url) = api_pod(&env, &old).await;
    api.extend(api_client(env.http.clone(), old_url, key.clone(), 3, 4).await);

    assert_each_question_answered_once(&env.db, &api, api.len()).await;
    assert_each_chat_answered_once(&tg, &chats.sent).await;
    assert_every_turn_completed(&env.db).await;
    eprintln!(
        "rolling upgrade: {} API questions (4 through the old API), {} chat messages; lost 0, doubled 0",
        api.len(),
        chats.sent.len()
    );
    drop(new_worker);
    pod.stop_with(env).await;
}
