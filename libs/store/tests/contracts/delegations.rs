//! Background delegation (migration 0070): each child is a queued turn of its own session; a
//! tool call run again starts nothing more; the tenant's cap counts its children at work; the
//! last child to end queues exactly one report on the parent's conversation; cancelling
//! leaves no report; another tenant sees and stops none of it.

use hermes_core::{ChatMessage, ChildRole, ChildState, SessionId, TurnId};
use hermes_store::delegations::{NewChild, NewDelegation, ProgressAt, Started};
use sqlx::PgPool;

use crate::common::{self, Tenant};

fn delegation<'a>(t: &Tenant, parent_turn: TurnId, call_id: &'a str, goals: &[&str], cap: i64) -> NewDelegation<'a> {
    let child = |goal: &&str| NewChild { goal: (*goal).into(), input: ChatMessage::user(*goal), role: ChildRole::Leaf };
    NewDelegation {
        agent: t.agent,
        parent_session: t.session,
        parent_turn,
        call_id,
        reply_to: None,
        max_iterations: 7,
        tools: vec!["terminal".into()],
        toolsets: vec!["terminal".into(), "web".into()],
        children: goals.iter().map(child).collect(),
        cap,
    }
}

async fn turn_of(pool: &PgPool, session: SessionId) -> TurnId {
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM turns WHERE session_id = $1")
        .bind(session.as_uuid())
        .fetch_one(pool)
        .await
        .unwrap();
    TurnId::from_uuid(id)
}

async fn reports(pool: &PgPool, t: &Tenant) -> Vec<String> {
    sqlx::query_scalar("SELECT input ->> 'content' FROM turns WHERE session_id = $1 ORDER BY created_at")
        .bind(t.session.as_uuid())
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_last_child_to_end_queues_one_report_and_a_call_run_again_starts_nothing(pool: PgPool) {
    let store = common::store(&pool);
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "beta").await);
    let parent = TurnId::new();
    let new = delegation(&a, parent, "call_1", &["count files", "check disk"], 3);
    let started = store.turns().start_delegation(a.id, &new).await.unwrap();
    let Started::Queued { id, sessions } = started.clone() else { panic!("{started:?}") };
    assert_eq!(sessions.len(), 2);
    assert_eq!(store.turns().start_delegation(a.id, &new).await.unwrap(), started, "the same call: the same children");

    // The cap counts the tenant's children at work, and only its own.
    let more = delegation(&a, parent, "call_2", &["a", "b"], 3);
    assert_eq!(store.turns().start_delegation(a.id, &more).await.unwrap(), Started::OverCap { running: 2 });
    let theirs = delegation(&b, TurnId::new(), "call_1", &["x", "y"], 2);
    assert!(matches!(store.turns().start_delegation(b.id, &theirs).await.unwrap(), Started::Queued { .. }));

    let (first, second) = (turn_of(&pool, sessions[0]).await, turn_of(&pool, sessions[1]).await);
    let task = store.turns().child_task(a.id, first).await.unwrap().expect("a child's turn");
    assert_eq!((task.delegation_id, task.position, task.role, task.max_iterations), (id, 1, ChildRole::Leaf, 7));
    assert_eq!(
        (task.tools.as_slice(), task.toolsets.as_slice()),
        (&["terminal".to_owned()][..], &["terminal".to_owned(), "web".to_owned()][..])
    );
    assert!(store.turns().child_task(b.id, first).await.unwrap().is_none(), "not another tenant's");
    assert!(store.turns().running_children(b.id, a.session).await.unwrap().is_empty());
    let running = store.turns().running_children(a.id, a.session).await.unwrap();
    assert_eq!(
        running.iter().map(|c| (c.position, c.tasks, c.goal.as_str())).collect::<Vec<_>>(),
        [(1, 2, "count files"), (2, 2, "check disk")]
    );

    let finish = |turn, state, summary| store.turns().finish_child(a.id, turn, state, summary);
    assert_eq!(finish(first, ChildState::Completed, "42 files").await.unwrap(), None, "one is still at work");
    assert_eq!(finish(first, ChildState::Completed, "again").await.unwrap(), None, "ended once");
    assert_eq!(store.turns().finish_child(b.id, second, ChildState::Failed, "x").await.unwrap(), None);
    assert_eq!(finish(second, ChildState::Failed, "disk gone").await.unwrap(), Some(a.session));
    assert_eq!(finish(second, ChildState::Completed, "again").await.unwrap(), None);
    let queued = reports(&pool, &a).await;
    assert_eq!(queued.len(), 1, "one report: {queued:?}");
    assert!(queued[0].contains("### Task 1: count files\n```\n42 files\n```"), "{}", queued[0]);
    assert!(queued[0].ends_with("### Task 2 — failed: check disk\n```\ndisk gone\n```"), "{}", queued[0]);
    assert!(store.turns().running_children(a.id, a.session).await.unwrap().is_empty());

    // The report's own turn may not start more children in the background: no chains.
    let report: uuid::Uuid = sqlx::query_scalar("SELECT report_turn_id FROM delegations WHERE id = $1")
        .bind(id.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    let chained = delegation(&a, TurnId::from_uuid(report), "call_1", &["again"], 8);
    assert_eq!(store.turns().start_delegation(a.id, &chained).await.unwrap(), Started::FromReport);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn cancelled_children_are_stopped_and_no_report_follows(pool: PgPool) {
    let store = common::store(&pool);
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "beta").await);
    let new = delegation(&a, TurnId::new(), "call_1", &["watch the logs"], 3);
    let Started::Queued { sessions, .. } = store.turns().start_delegation(a.id, &new).await.unwrap() else {
        panic!("queued")
    };
    let child = turn_of(&pool, sessions[0]).await;
    assert!(store.turns().cancel_children(b.id, a.session).await.unwrap().is_empty(), "not another tenant's");
    assert_eq!(store.turns().cancel_children(a.id, a.session).await.unwrap(), [child]);
    assert!(store.turns().cancel_children(a.id, a.session).await.unwrap().is_empty(), "once");
    assert_eq!(store.turns().finish_child(a.id, child, ChildState::Completed, "late").await.unwrap(), None);
    assert!(reports(&pool, &a).await.is_empty(), "no report after a cancel");
    // A cancelled child no longer counts toward the cap.
    let next = delegation(&a, TurnId::new(), "call_2", &["x"], 1);
    sqlx::query("UPDATE turns SET status = 'cancelled' WHERE id = $1")
        .bind(child.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    assert!(matches!(store.turns().start_delegation(a.id, &next).await.unwrap(), Started::Queued { .. }));
}

/// The progress lines in the parent's chat: `(dedupe key, text)`.
async fn progress_lines(pool: &PgPool, t: &Tenant) -> Vec<(String, String)> {
    sqlx::query_as("SELECT dedupe_key, payload ->> 'text' FROM outbox WHERE tenant_id = $1 ORDER BY dedupe_key")
        .bind(t.id.as_uuid())
        .fetch_all(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_childs_tools_are_told_in_a_chat_that_shows_tool_progress_once_per_step(pool: PgPool) {
    use hermes_core::outbox::Destination;
    let store = common::store(&pool);
    let (a, b) = (common::tenant(&store, "acme").await, common::tenant(&store, "beta").await);
    let channel = common::channel(&store, &a, &common::secrets(), "progress-bot").await;
    let chat = Destination::chat(hermes_core::Platform::Telegram, channel.id, "42", None);
    let new = NewDelegation { reply_to: Some(&chat), ..delegation(&a, TurnId::new(), "call_1", &["scan", "sum"], 3) };
    let Started::Queued { id, sessions } = store.turns().start_delegation(a.id, &new).await.unwrap() else {
        panic!("queued")
    };
    let child = turn_of(&pool, sessions[1]).await;
    let tools: Vec<String> = ["web_search", "read_file"].map(str::to_owned).to_vec();
    let at = |step| ProgressAt { step, line: 0 };
    store.turns().child_progress(a.id, child, at(3), &tools).await.unwrap();
    store.turns().child_progress(a.id, child, at(3), &tools).await.unwrap();
    store.turns().child_progress(b.id, child, at(4), &tools).await.unwrap();
    let told = progress_lines(&pool, &a).await;
    assert_eq!(told, [(format!("delegation:{id}:2:step:3:0"), "🔀 Background task 2/2: web_search, read_file".into())]);
    assert!(progress_lines(&pool, &b).await.is_empty(), "another tenant's turn tells nothing");

    // A chat that hides tool progress is told nothing; nor is anyone after a stop.
    sqlx::query("UPDATE channels SET tool_progress = false WHERE id = $1")
        .bind(channel.id.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    store.turns().child_progress(a.id, child, at(5), &tools).await.unwrap();
    sqlx::query("UPDATE channels SET tool_progress = true WHERE id = $1")
        .bind(channel.id.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    store.turns().cancel_children(a.id, a.session).await.unwrap();
    store.turns().child_progress(a.id, child, at(6), &tools).await.unwrap();
    assert_eq!(progress_lines(&pool, &a).await.len(), 1);
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_queued_child_cancelled_on_its_own_still_lets_the_batch_report(pool: PgPool) {
    let store = common::store(&pool);
    let a = common::tenant(&store, "acme").await;
    let new = delegation(&a, TurnId::new(), "call_1", &["scan", "sum"], 3);
    let Started::Queued { sessions, .. } = store.turns().start_delegation(a.id, &new).await.unwrap() else {
        panic!("queued")
    };
    let (first, second) = (turn_of(&pool, sessions[0]).await, turn_of(&pool, sessions[1]).await);
    store.turns().finish_child(a.id, first, ChildState::Completed, "scanned").await.unwrap();
    // The console's cancel of a turn that has not run yet: the last of the batch.
    let was = store.turns().request_cancel(a.id, second, &hermes_core::TurnOutcome::cancelled()).await.unwrap();
    assert_eq!(was, Some(hermes_core::TurnStatus::Queued));
    let queued = reports(&pool, &a).await;
    assert_eq!(queued.len(), 1, "the batch reports: {queued:?}");
    assert!(queued[0].contains("### Task 1: scan\n```\nscanned\n```"), "{}", queued[0]);
    assert!(queued[0].ends_with("### Task 2 — stopped: sum\n```\n(stopped before it ended)\n```"), "{}", queued[0]);
    let cancelled = store.turns().request_cancel(a.id, second, &hermes_core::TurnOutcome::cancelled()).await.unwrap();
    assert_eq!(cancelled, None, "once");
    assert_eq!(reports(&pool, &a).await.len(), 1);
}
