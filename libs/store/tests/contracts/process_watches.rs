//! Processes that wake the agent (migration 0072): a watch is recorded once per process; a
//! claim is one worker's; a notice is one turn queued on the session with the watch's move;
//! a notice's own turn may not start another watch (no self-waking chains); another tenant's
//! turn records nothing in this one's sessions.

use std::time::Duration;

use hermes_core::{TurnId, Workspace};
use hermes_store::process_watches::{NewWatch, WatchStep, Watched};
use sqlx::PgPool;

use crate::common::{self, Tenant};

fn watch<'a>(t: &Tenant, turn: TurnId, process_id: &'a str, patterns: &'a [String]) -> NewWatch<'a> {
    NewWatch {
        agent: t.agent,
        session: t.session,
        turn,
        workspace: Workspace::Shared,
        process_id,
        command: "make build",
        patterns,
        notify_on_complete: true,
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_notice_is_queued_once_and_its_own_turn_may_not_start_another_watch(pool: PgPool) {
    let (store, a, started) = common::hello_queued(&pool).await;
    let none: Vec<String> = Vec::new();
    let new = watch(&a, started, "proc_1", &none);
    assert_eq!(store.automation().watch_process(a.id, &new).await.unwrap(), Watched::Watching);
    assert_eq!(store.automation().watch_process(a.id, &new).await.unwrap(), Watched::Watching);
    assert_eq!(
        common::count(&pool, "SELECT count(*) FROM process_watches WHERE tenant_id = $1", a.id.as_uuid()).await,
        1
    );

    // Due now (a new watch is first looked at after a second).
    sqlx::query("UPDATE process_watches SET next_check_at = now()").execute(&pool).await.unwrap();
    let claimed = store.system().claim_watches("worker-a", 10, Duration::from_secs(10)).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert!(
        store.system().claim_watches("worker-b", 10, Duration::from_secs(10)).await.unwrap().is_empty(),
        "one claim"
    );
    let end = WatchStep::Notify {
        offset: 9,
        notice: "make build finished: exit code 0".into(),
        done: true,
        patterns: none.clone(),
    };
    let signalled =
        store.automation().settle_watch(&claimed[0], "worker-a", &end, Duration::from_secs(2)).await.unwrap();
    assert_eq!(signalled, Some(a.session));
    // A lapsed claim's holder settles nothing more.
    let late = store.automation().settle_watch(&claimed[0], "worker-b", &end, Duration::from_secs(2)).await.unwrap();
    assert_eq!(late, None);
    let notices: Vec<uuid::Uuid> =
        sqlx::query_scalar("SELECT id FROM turns WHERE session_id = $1 AND input ->> 'content' LIKE '%exit code 0%'")
            .bind(a.session.as_uuid())
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(notices.len(), 1, "one notice turn");

    // The notice's own turn starts no watch of its own.
    let from_notice = watch(&a, TurnId::from_uuid(notices[0]), "proc_2", &none);
    assert_eq!(store.automation().watch_process(a.id, &from_notice).await.unwrap(), Watched::FromNotice);
    assert_eq!(
        common::count(&pool, "SELECT count(*) FROM process_watches WHERE tenant_id = $1", a.id.as_uuid()).await,
        1
    );
}
