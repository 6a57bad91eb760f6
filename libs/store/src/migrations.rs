//! Upgrade stops: a migration that contracts what an earlier one expanded (drops a fallback
//! that builds before the expand step relied on) is applied only over a schema that had its
//! expand step before this run. A rolling upgrade keeps the previous release's pods serving
//! while the new schema is in place; when the database already had the expand step, those
//! pods are of a build that no longer needs the fallback. Jumping from a schema older than
//! the expand step straight past the contract step would drop it under pods that still do, so
//! `Store::migrate` refuses and names the release to upgrade through first. A new database has
//! no older pods and takes every migration at once.
//!
//! [`compat`] checks the other half of the rule: that the migrations since the previous
//! release leave every table, column, trigger and grant the previous release's pods use as
//! they were (a libs/store contract test runs it, `rolling_upgrade.rs`).

pub mod catalog;
pub mod compat;

use sqlx::PgConnection;

use crate::{Result, StoreError};

/// The newest migration of the previous release: its pods keep serving during a rolling upgrade
/// to this build and rely on the schema as this migration left it. Bump it to the newest
/// migration of a release when that release is cut.
pub const PREVIOUS_RELEASE_SCHEMA: i64 = 59;

/// `(contract, expand)`: migration `contract` applies only over a schema that has `expand`.
pub(crate) const UPGRADE_STOPS: [(i64, i64); 1] = [
    // 0059 drops the outbox triggers that builds before 0057 relied on to queue answers.
    (59, 57),
];

/// Refuses when this run would apply a contract step over a schema without its expand step.
pub(crate) async fn check_upgrade_stops(owner: &mut PgConnection) -> Result<()> {
    let ledger: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text").fetch_one(&mut *owner).await?;
    if ledger.is_none() {
        return Ok(());
    }
    let applied: Option<i64> =
        sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success").fetch_one(&mut *owner).await?;
    match refused_stop(applied.unwrap_or(0)) {
        Some((contract, expand)) => Err(StoreError::UpgradeStop(format!(
            "this database's schema is at migration {}; migration {contract} needs {expand} applied by an \
             earlier release first (pods of older builds may still be running): upgrade to a release that \
             carries migration {expand}, let its rollout finish, then to this one",
            applied.unwrap_or(0)
        ))),
        None => Ok(()),
    }
}

/// The stop a schema at `applied` may not pass in one run (`0`: a new database passes all).
fn refused_stop(applied: i64) -> Option<(i64, i64)> {
    UPGRADE_STOPS.into_iter().find(|&(contract, expand)| applied > 0 && applied < expand && applied < contract)
}

#[cfg(test)]
mod tests {
    use super::refused_stop;

    #[test]
    fn a_schema_before_the_expand_step_may_not_jump_past_the_contract_step() {
        assert_eq!(refused_stop(56), Some((59, 57)), "from before 0057: upgrade through it first");
        assert_eq!(refused_stop(1), Some((59, 57)));
        assert_eq!(refused_stop(57), None, "0057's pods write the rows themselves");
        assert_eq!(refused_stop(58), None);
        assert_eq!(refused_stop(59), None, "already contracted");
        assert_eq!(refused_stop(0), None, "a new database has no older pods");
    }
}
