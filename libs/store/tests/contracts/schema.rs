//! Readiness refuses a schema older than the build: `schema_lag` reads the migrations ledger
//! as the system role (migration 0043) and compares it with the migrations compiled in.

use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_schema_missing_the_newest_migration_is_behind_and_says_by_how_much(pool: PgPool) {
    let store = common::store(&pool);
    assert_eq!(store.schema_lag().await.unwrap(), None, "freshly migrated: nothing missing");

    let newest: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations").fetch_one(&pool).await.unwrap();
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = $1").bind(newest).execute(&pool).await.unwrap();
    let (applied, needed) = store.schema_lag().await.unwrap().expect("one migration missing");
    assert_eq!(needed, newest);
    assert!(applied < needed, "applied {applied}, needed {needed}");

    // A newer schema (a newer build migrated it during a rolling upgrade) is not behind.
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES ($1, 'restored', true, '\\x00', 0), ($1 + 1, 'from a newer build', true, '\\x00', 0)",
    )
    .bind(newest)
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(store.schema_lag().await.unwrap(), None);
}

/// The ledger as if the database had migrations up to `version` only.
async fn ledger_at(pool: &PgPool, version: i64) {
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version > $1").bind(version).execute(pool).await.unwrap();
}

async fn outbox_triggers(pool: &PgPool) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_trigger WHERE tgname IN ('turns_reply_to_outbox', 'interactions_to_outbox')",
    )
    .fetch_one(pool)
    .await
    .unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_schema_from_before_the_outbox_moved_to_rust_may_not_jump_past_the_triggers_drop(pool: PgPool) {
    let store = common::store(&pool);
    assert_eq!(outbox_triggers(&pool).await, 0, "0059 dropped the fallback triggers");

    // Upgraded through a release with 0057 (whose pods write the rows themselves): it passes.
    ledger_at(&pool, 58).await;
    store.migrate().await.expect("0059 applies over 0058");
    assert_eq!(store.schema_lag().await.unwrap(), None);

    // A database last migrated by a build before 0057: its workers count on the triggers.
    ledger_at(&pool, 56).await;
    let refused = store.migrate().await.expect_err("an upgrade stop");
    assert!(matches!(refused, hermes_store::StoreError::UpgradeStop(_)), "{refused}");
    assert!(refused.to_string().contains("57"), "it names the release to pass through: {refused}");
    let applied: i64 = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations").fetch_one(&pool).await.unwrap();
    assert_eq!(applied, 56, "nothing was applied");
}
