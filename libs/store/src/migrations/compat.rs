//! Whether this build's migrations break the previous release's pods. During a rolling upgrade
//! the migrations run before the new pods start, and the old ones keep serving on the new
//! schema: a table or column they read that is gone or of another type, a column that became
//! NOT NULL, or a new NOT NULL column without a default (their `INSERT`s leave it out) fails
//! their queries. [`findings_since`] applies the migrations up to [`PREVIOUS_RELEASE_SCHEMA`],
//! snapshots the schema, applies the rest and lists what changed that way ([`diff`]);
//! [`problems`] leaves out the contract steps of [`ALLOWED`] and says which entries are stale.
//!
//! Not seen: a narrowed CHECK or a new constraint the old build's writes break, a changed
//! function body or row policy. Such changes are indistinguishable here from widening ones
//! (0058 widens a CHECK), so the reviewer of the migration judges them.
//!
//! [`PREVIOUS_RELEASE_SCHEMA`]: super::PREVIOUS_RELEASE_SCHEMA

use std::fmt;

use sqlx::PgPool;

use super::UPGRADE_STOPS;
use super::catalog::{Relation, Snapshot};
use crate::{MIGRATOR, Result, StoreError};

/// How a change breaks a pod of the previous release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// A table it reads and writes is gone (dropped, renamed, or a view now).
    TableDropped,
    /// A view it reads is gone.
    ViewDropped,
    /// A column it names is gone (dropped or renamed).
    ColumnDropped,
    /// A column's type (with its modifier) changed: its binds and decodes fail.
    ColumnTypeChanged,
    /// A column it may leave NULL became NOT NULL.
    ColumnMadeNotNull,
    /// A new NOT NULL column without a default: its `INSERT`s leave the column out.
    NotNullColumnAddedWithoutDefault,
    /// A NOT NULL column lost the default its `INSERT`s rely on.
    ColumnDefaultDropped,
    /// A function it calls (by name and argument types) is gone.
    FunctionDropped,
    /// A function it calls returns another type.
    FunctionResultChanged,
    /// A trigger whose work it counts on is gone or disabled.
    TriggerDropped,
    /// An enum label it writes is gone (dropped with its type, or renamed).
    EnumValueDropped,
    /// A role it runs as lost a privilege on a table, sequence or function.
    PrivilegeRevoked,
}

/// One breaking change between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: FindingKind,
    /// The table, view, function (`name(argument types)`) or enum type.
    pub object: String,
    /// The column, trigger, enum label or `role PRIVILEGE` in it; `None` for the whole object.
    pub part: Option<String>,
    /// What it was and what it is, in words.
    pub change: String,
    /// The migrations that made it: after the first, up to and including the second.
    pub migrations: (i64, i64),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (after, upto) = self.migrations;
        write!(f, "{:?} {}", self.kind, self.object)?;
        if let Some(part) = &self.part {
            write!(f, " {part}")?;
        }
        write!(f, ": {} (a migration after {after:04}, up to {upto:04})", self.change)
    }
}

/// A contract step let through: its expand step shipped a release earlier, so the previous
/// release's pods no longer use what it removes, and `UPGRADE_STOPS` keeps a database from
/// jumping to it from before the expand step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    pub kind: FindingKind,
    pub object: &'static str,
    pub part: Option<&'static str>,
    /// `(contract, expand)` as listed in `UPGRADE_STOPS`: the contract migration is newer than
    /// the previous release, its expand step no newer.
    pub stop: (i64, i64),
    /// Why the previous release no longer needs it.
    pub reason: &'static str,
}

/// The findings since [`super::PREVIOUS_RELEASE_SCHEMA`] that are contract steps. An entry
/// matching no finding fails the check: remove it when the release is cut.
pub const ALLOWED: &[Allowed] = &[];

/// Why a check of the migrations since the previous release fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem<'a> {
    /// A change no entry of the allowlist excuses.
    Breaking(&'a Finding),
    /// An entry that matches no finding, or whose contract step the previous release carries
    /// already: remove it.
    Stale(&'a Allowed),
    /// An entry that excuses nothing: its stop is not in `UPGRADE_STOPS`, or its expand step
    /// is not in the previous release.
    Unsafe(&'a Allowed, String),
}

impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Breaking(finding) => write!(f, "breaks the previous release's pods: {finding}"),
            Problem::Stale(entry) => write!(f, "stale allowlist entry, remove it: {entry:?}"),
            Problem::Unsafe(entry, why) => write!(f, "allowlist entry {entry:?} excuses nothing: {why}"),
        }
    }
}

/// Applies this build's migrations to the empty database of `pool` up to `previous` (the
/// previous release's newest), then the rest, and lists what the rest breaks for pods on
/// `previous`. Refuses a database that has tables already, or a `previous` that is not one of
/// the migrations.
pub async fn findings_since(pool: &PgPool, previous: i64) -> Result<Vec<Finding>> {
    if !MIGRATOR.version_exists(previous) {
        return Err(StoreError::Invalid(format!("migration {previous} is not one of this build's")));
    }
    let empty: bool = sqlx::query_scalar(
        "SELECT NOT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                             WHERE n.nspname = 'public')",
    )
    .fetch_one(pool)
    .await?;
    if !empty {
        return Err(StoreError::Invalid("the upgrade check needs an empty database".into()));
    }
    MIGRATOR.run_to(previous, pool).await?;
    let before = Snapshot::read(pool).await?;
    MIGRATOR.run(pool).await?;
    let after = Snapshot::read(pool).await?;
    Ok(diff(&before, &after))
}

/// What changed from `before` to `after` in a way that breaks a build written for `before`.
/// What `after` adds (tables, nullable columns, columns with defaults, grants) breaks nothing.
pub fn diff(before: &Snapshot, after: &Snapshot) -> Vec<Finding> {
    let mut found = Found { migrations: (before.version, after.version), list: Vec::new() };
    for (name, old) in &before.relations {
        match after.relations.get(name) {
            None if old.is_view => found.push(FindingKind::ViewDropped, name, None, "is gone".into()),
            None => found.push(FindingKind::TableDropped, name, None, "is gone".into()),
            Some(new) if new.is_view && !old.is_view => {
                found.push(FindingKind::TableDropped, name, None, "is a view now".into());
            }
            Some(new) => found.columns(name, old, new),
        }
    }
    for (signature, result) in &before.functions {
        match after.functions.get(signature) {
            None => found.push(FindingKind::FunctionDropped, signature, None, "is gone".into()),
            Some(now) if now != result => {
                found.push(
                    FindingKind::FunctionResultChanged,
                    signature,
                    None,
                    format!("returned {result}, now {now}"),
                );
            }
            Some(_) => {}
        }
    }
    for (table, trigger) in before.triggers.difference(&after.triggers) {
        if after.relations.contains_key(table) {
            found.push(FindingKind::TriggerDropped, table, Some(trigger), "is gone or disabled".into());
        }
    }
    for (type_name, label) in before.enum_labels.difference(&after.enum_labels) {
        found.push(FindingKind::EnumValueDropped, type_name, Some(label), "is gone".into());
    }
    for (object, granted) in &before.grants {
        let Some(now) = after.grants.get(object) else { continue };
        for (role, privilege) in granted.difference(now) {
            found.push(FindingKind::PrivilegeRevoked, object, Some(&format!("{role} {privilege}")), "revoked".into());
        }
    }
    found.list
}

struct Found {
    migrations: (i64, i64),
    list: Vec<Finding>,
}

impl Found {
    fn push(&mut self, kind: FindingKind, object: &str, part: Option<&str>, change: String) {
        let (object, part) = (object.to_owned(), part.map(str::to_owned));
        self.list.push(Finding { kind, object, part, change, migrations: self.migrations });
    }

    /// The columns of `table`, which is in both snapshots.
    fn columns(&mut self, table: &str, old: &Relation, new: &Relation) {
        for (name, was) in &old.columns {
            let Some(now) = new.columns.get(name) else {
                self.push(FindingKind::ColumnDropped, table, Some(name), "is gone".into());
                continue;
            };
            if now.type_name != was.type_name {
                let change = format!("was {}, is {} now", was.type_name, now.type_name);
                self.push(FindingKind::ColumnTypeChanged, table, Some(name), change);
            }
            if now.not_null && !was.not_null && !new.is_view {
                self.push(FindingKind::ColumnMadeNotNull, table, Some(name), "is NOT NULL now".into());
            }
            if now.not_null && was.has_default && !now.has_default && !new.is_view {
                self.push(FindingKind::ColumnDefaultDropped, table, Some(name), "lost its default".into());
            }
        }
        let added = new.columns.iter().filter(|(name, _)| !old.columns.contains_key(*name));
        for (name, column) in added.filter(|(_, c)| c.not_null && !c.has_default && !new.is_view) {
            let change = format!("new NOT NULL {} without a default", column.type_name);
            self.push(FindingKind::NotNullColumnAddedWithoutDefault, table, Some(name), change);
        }
    }
}

/// What fails the check of `findings` (made from `previous`) against `allowed`: findings no
/// entry excuses, entries that excuse nothing (see [`Problem::Unsafe`]), and entries that
/// match no finding.
pub fn problems<'a>(findings: &'a [Finding], allowed: &'a [Allowed], previous: i64) -> Vec<Problem<'a>> {
    let mut problems = Vec::new();
    let mut excusing = Vec::new();
    for entry in allowed {
        if entry.stop.0 <= previous {
            problems.push(Problem::Stale(entry));
        } else if let Some(why) = unsafe_because(entry, previous) {
            problems.push(Problem::Unsafe(entry, why));
        } else {
            excusing.push(entry);
        }
    }
    let matches = |entry: &Allowed, finding: &Finding| {
        entry.kind == finding.kind && entry.object == finding.object && entry.part == finding.part.as_deref()
    };
    for finding in findings {
        if !excusing.iter().any(|entry| matches(entry, finding)) {
            problems.push(Problem::Breaking(finding));
        }
    }
    for entry in excusing {
        if !findings.iter().any(|finding| matches(entry, finding)) {
            problems.push(Problem::Stale(entry));
        }
    }
    problems
}

/// Why `entry` (whose contract step is newer than `previous`) may not excuse a finding since
/// `previous`; `None` when it may.
fn unsafe_because(entry: &Allowed, previous: i64) -> Option<String> {
    let (contract, expand) = entry.stop;
    if !UPGRADE_STOPS.contains(&entry.stop) {
        Some(format!("({contract}, {expand}) is not in UPGRADE_STOPS: migrate would let a database jump past it"))
    } else if expand > previous {
        Some(format!(
            "its expand step {expand} is newer than the previous release ({previous}): old pods still need it"
        ))
    } else {
        None
    }
}

#[cfg(test)]
#[path = "compat_tests.rs"]
mod tests;
