//! Deleting a conversation deletes its text everywhere: the platform update that started a
//! turn, the reply queued for the chat and the event deliveries about it go with the session,
//! and another session's stay.

use hermes_core::outbox::Destination;
use hermes_core::{ChatMessage, Platform};
use hermes_store::{Accepted, NewTurn, TurnStatus};
use serde_json::json;
use sqlx::PgPool;

use crate::common;

/// A chat turn in `session`, taken in from a platform update and answered.
async fn answered_chat_turn(
    store: &hermes_store::Store,
    t: &common::Tenant,
    session: hermes_core::SessionId,
    key: &str,
    channel: hermes_core::ChannelId,
) {
    let reply_to = Destination::chat(Platform::Telegram, channel, "42", None);
    let new = NewTurn { reply_to: Some(reply_to), ..common::turn_in(t.agent, session, "what is in the report?") };
    let update = json!({"message": {"text": "what is in the report?"}});
    let accepted = store.chat().accept_inbound(t.id, "telegram:bot", key, &update, Some(new), None).await.unwrap();
    let Accepted::Turn { turn, .. } = accepted else { panic!("{accepted:?}") };
    let claimed = common::claim(store, t.id, session, "worker-1", 1).await;
    store
        .conversations()
        .begin_turn(t.id, session, claimed.fence, turn, &ChatMessage::user("hi"), "prompt")
        .await
        .unwrap();
    let outcome = common::answered("The report says revenue doubled.");
    store
        .turns()
        .finish_turn(t.id, session, turn, "worker-1", claimed.fence, TurnStatus::Completed, &outcome, None, &[])
        .await
        .unwrap();
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_deleted_session_takes_its_updates_replies_and_events_with_it(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await.id;
    let events = ["turn.finished".to_owned()];
    store
        .automation()
        .create_event_hook(t.id, "http://127.0.0.1:9/hook", &events, "ops", Some(&common::secrets()))
        .await
        .unwrap();
    let other = store
        .conversations()
        .create_session(t.id, t.agent, hermes_core::SessionSource::Api, "user-2", None)
        .await
        .unwrap();
    answered_chat_turn(&store, &t, t.session, "1001", channel).await;
    answered_chat_turn(&store, &t, other, "1002", channel).await;
    let count = async |sql: &str| -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned())).fetch_one(&pool).await.unwrap()
    };
    assert_eq!((count("SELECT count(*) FROM inbound").await, count("SELECT count(*) FROM outbox").await), (2, 2));
    assert!(count("SELECT count(*) FROM event_deliveries").await >= 2);

    store.conversations().delete_session(t.id, None, t.session).await.unwrap();
    let about = |session: hermes_core::SessionId| {
        format!("SELECT count(*) FROM event_deliveries WHERE data ->> 'session_id' = '{session}'")
    };
    assert_eq!(count(&about(t.session)).await, 0, "no event about it is left to send");
    assert!(count(&about(other)).await >= 1, "the other session's events stay");
    assert_eq!(
        (count("SELECT count(*) FROM inbound").await, count("SELECT count(*) FROM outbox").await),
        (1, 1),
        "only the other session's update and reply stay"
    );
}

/// Issue 42: finished turns, files and usage detail go after their tenant's period or else the
/// installation's, in batches; open turns, a tenant keeping forever and the daily totals stay.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn data_past_its_tenants_period_or_the_installations_goes_and_nothing_else(pool: PgPool) {
    use hermes_store::retention_policy::Retention;
    use hermes_store::system::data_retention::{Pruned, RetentionDefaults};

    let w = crate::tenant_world::world(&pool).await;
    let keeper = crate::tenant_world::world_named(&pool, "gamma", "delta").await;
    let (alpha, gamma) = (w.a.id, keeper.a.id);
    let own = Retention { turns_days: Some(1), ..Retention::default() };
    w.store.tenancy().set_retention(alpha, &own).await.unwrap();
    let forever =
        Retention { sessions_days: Some(0), turns_days: Some(0), files_days: Some(0), usage_detail_days: Some(0) };
    w.store.tenancy().set_retention(gamma, &forever).await.unwrap();
    assert_eq!(w.store.tenancy().retention(gamma).await.unwrap(), forever);
    let stored: Option<i32> = sqlx::query_scalar("SELECT session_retention_days FROM tenants WHERE id = $1")
        .bind(gamma.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(stored, Some(36_500), "sessions kept forever are not stored as 0, which the last release would prune");
    assert_eq!(w.store.tenancy().retention(alpha).await.unwrap(), own);
    let too_soon = Retention { usage_detail_days: Some(10), ..own };
    assert!(w.store.tenancy().set_retention(alpha, &too_soon).await.is_err(), "usage detail under 35 days");

    sqlx::raw_sql(
        "UPDATE turns SET finished_at = now() - interval '3 days' WHERE finished_at IS NOT NULL;
         UPDATE turn_files SET created_at = now() - interval '3 days';
         UPDATE model_calls SET created_at = now() - interval '50 days';",
    )
    .execute(&pool)
    .await
    .unwrap();
    let count =
        async |sql: &'static str, tenant: hermes_core::TenantId| common::count(&pool, sql, tenant.as_uuid()).await;
    const FINISHED: &str = "SELECT count(*) FROM turns WHERE tenant_id = $1 AND finished_at IS NOT NULL";
    const OPEN: &str = "SELECT count(*) FROM turns WHERE tenant_id = $1 AND finished_at IS NULL";
    const FILES: &str = "SELECT count(*) FROM turn_files WHERE tenant_id = $1";
    const CALLS: &str = "SELECT count(*) FROM model_calls WHERE tenant_id = $1";
    const DAILY: &str = "SELECT count(*) FROM usage_daily WHERE tenant_id = $1";
    let before = [FINISHED, OPEN, FILES, CALLS, DAILY];
    let mut alpha_before = Vec::new();
    let mut gamma_before = Vec::new();
    for sql in before {
        alpha_before.push(count(sql, alpha).await);
        gamma_before.push(count(sql, gamma).await);
    }
    assert!(
        alpha_before[0] > 0 && alpha_before[1] > 0 && alpha_before[2] > 0 && alpha_before[3] > 0,
        "{alpha_before:?}"
    );

    let defaults = RetentionDefaults { turns_days: 0, files_days: 2, usage_detail_days: 40 };
    let pruned = w.store.system().prune_past_retention(defaults, 1).await.unwrap();
    let expected_turns = u64::try_from(alpha_before[0]).unwrap();
    assert_eq!(pruned.turns, expected_turns, "alpha's finished turns, one a statement: {pruned:?}");
    assert_eq!(count(FINISHED, alpha).await, 0);
    assert_eq!(count(OPEN, alpha).await, alpha_before[1], "open turns stay whatever their age");
    assert_eq!(count(FILES, alpha).await, 0, "its files went with its turns, or after the installation's 2 days");
    assert_eq!(count(CALLS, alpha).await, 0, "usage detail past the installation's 40 days");
    assert_eq!(count(DAILY, alpha).await, alpha_before[4], "the daily totals stay");
    let mut gamma_after = Vec::new();
    for sql in before {
        gamma_after.push(count(sql, gamma).await);
    }
    assert_eq!(gamma_after, gamma_before, "a tenant keeping forever keeps everything");
    let again = w.store.system().prune_past_retention(defaults, 1).await.unwrap();
    assert_eq!(again, Pruned::default(), "nothing left to prune");
}
