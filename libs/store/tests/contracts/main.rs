//! The store's contracts on a real Postgres, without the roles: fencing, claim-once, idempotent
//! steps, tenant scoping and the row-level security under it. Every test gets a fresh database with the migrations applied
//! (`#[sqlx::test]`), made on the server `DATABASE_URL` names.
//!
//! Run: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo nextest run -p hermes-store`
//! (`deploy/dev/test.sh` sets it when it is not set).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]
#![allow(clippy::disallowed_methods, reason = "test code starts its tasks freely; the rule is for the service's own")]

mod admin_plane;
mod admin_proof;
mod agent_scoping;
mod agent_settings;
mod backlog;
mod claim_once;
mod common;
mod cron_context;
mod delegations;
mod egress_authority;
mod enqueue;
mod events;
mod fairness;
mod fencing;
mod heartbeat;
mod idempotent;
mod media_spend;
mod outbox_shapes;
mod presence;
mod process_watches;
mod retention;
mod rolling_upgrade;
mod schema;
mod second_wall;
mod session_titles;
mod spend;
mod tenant_deletion;
mod tenant_scoping;
mod tenant_world;
mod turn_inputs;
mod usage_rollups;

/// Without `DATABASE_URL` every `#[sqlx::test]` fails with sqlx's terse "DATABASE_URL must be
/// set"; this one says what to do.
#[test]
fn the_store_tests_are_told_which_postgres_to_use() {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    assert!(
        url.starts_with("postgres://") || url.starts_with("postgresql://"),
        "the store's contract tests make a database per test on a Postgres server: set DATABASE_URL, e.g. \
         DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo nextest run -p hermes-store \
         (deploy/dev/test.sh sets that when it is unset; deploy/dev/ensure-services.sh starts Postgres); got {url:?}"
    );
}
