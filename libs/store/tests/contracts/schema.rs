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
