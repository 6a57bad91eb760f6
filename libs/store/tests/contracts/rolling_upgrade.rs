//! A rolling upgrade runs this build's migrations under the previous release's pods: nothing
//! they read or write may go until a release after the one that stopped using it
//! (`hermes_store::migrations::compat`). These tests run that check on the real migrations
//! and show that it catches each kind of breaking change.

use std::collections::BTreeSet;

use hermes_store::MIGRATOR;
use hermes_store::migrations::PREVIOUS_RELEASE_SCHEMA;
use hermes_store::migrations::catalog::Snapshot;
use hermes_store::migrations::compat::{self, Allowed, Finding, FindingKind, Problem};
use sqlx::PgPool;

/// `(kind, object, part)` of each finding, to compare with what a test expects.
fn named(findings: &[Finding]) -> BTreeSet<(FindingKind, String, Option<String>)> {
    findings.iter().map(|f| (f.kind, f.object.clone(), f.part.clone())).collect()
}

fn expected(list: &[(FindingKind, &str, Option<&str>)]) -> BTreeSet<(FindingKind, String, Option<String>)> {
    list.iter().map(|&(kind, object, part)| (kind, object.to_owned(), part.map(str::to_owned))).collect()
}

fn listed(problems: &[Problem<'_>]) -> String {
    problems.iter().map(|p| format!("\n  {p}")).collect()
}

#[sqlx::test(migrations = false)]
async fn the_migrations_since_the_previous_release_break_none_of_its_pods(pool: PgPool) {
    let newest = MIGRATOR.iter().map(|m| m.version).max().unwrap();
    assert!(
        MIGRATOR.version_exists(PREVIOUS_RELEASE_SCHEMA) && PREVIOUS_RELEASE_SCHEMA <= newest,
        "PREVIOUS_RELEASE_SCHEMA ({PREVIOUS_RELEASE_SCHEMA}) must be one of the migrations (newest: {newest})"
    );
    let findings = compat::findings_since(&pool, PREVIOUS_RELEASE_SCHEMA).await.unwrap();
    let problems = compat::problems(&findings, compat::ALLOWED, PREVIOUS_RELEASE_SCHEMA);
    assert!(
        problems.is_empty(),
        "the migrations after {PREVIOUS_RELEASE_SCHEMA} (the previous release's newest), up to {newest}, must leave \
         what its pods use while they serve during a rolling upgrade: expand first, contract a release later \
         (CONTRIBUTING.md, \"Migrations\"):{}",
        listed(&problems)
    );
}

/// Breaking changes, then expanding ones that change nothing an older build uses.
const CHANGES: &[&str] = &[
    "ALTER TABLE sessions DROP COLUMN title",
    "ALTER TABLE turns ALTER COLUMN trace_parent TYPE varchar(64)",
    "ALTER TABLE budgets ALTER COLUMN hard_usd TYPE numeric(12,2)",
    "ALTER TABLE turns ALTER COLUMN instructions SET NOT NULL",
    "ALTER TABLE turns ALTER COLUMN stream DROP DEFAULT",
    "ALTER TABLE messages ADD COLUMN token_count integer NOT NULL",
    "ALTER TABLE usage_daily RENAME TO usage_by_day",
    "DROP VIEW open_turns",
    "ALTER TABLE turns DISABLE TRIGGER turns_finished",
    "DROP FUNCTION hermes_usage_source(text)",
    // Made anew, it returns another type and has lost its grant to hermes_system.
    "DROP FUNCTION hermes_prune_audit(interval, integer)",
    "CREATE FUNCTION hermes_prune_audit(keep interval, batch integer) RETURNS integer LANGUAGE sql AS 'SELECT 0'",
    "ALTER TYPE turn_status RENAME VALUE 'cancelled' TO 'canceled'",
    "REVOKE INSERT ON messages FROM hermes_tenant",
    // Expanding: none of these is a finding.
    "ALTER TABLE sessions ADD COLUMN summary text",
    "ALTER TABLE sessions ADD COLUMN pinned boolean NOT NULL DEFAULT false",
    "ALTER TABLE sessions ADD COLUMN ordinal bigint GENERATED ALWAYS AS IDENTITY",
    "ALTER TABLE sessions ALTER COLUMN source DROP NOT NULL",
    "CREATE TABLE turn_notes (id uuid PRIMARY KEY, body text NOT NULL)",
    "ALTER TYPE turn_status ADD VALUE 'paused'",
    "GRANT TRUNCATE ON messages TO hermes_system",
];

/// The schema [`CHANGES`] are written for; later migrations may change those tables.
const STATEMENTS_SCHEMA: i64 = 59;

#[sqlx::test(migrations = false)]
async fn each_kind_of_breaking_change_is_found_by_table_and_column(pool: PgPool) {
    MIGRATOR.run_to(STATEMENTS_SCHEMA, &pool).await.unwrap();
    sqlx::query("CREATE VIEW open_turns AS SELECT id FROM turns WHERE status = 'queued'").execute(&pool).await.unwrap();
    let before = Snapshot::read(&pool).await.unwrap();
    assert_eq!(compat::diff(&before, &before), vec![], "a schema breaks nothing against itself");
    for statement in CHANGES {
        sqlx::raw_sql(*statement).execute(&pool).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
    let after = Snapshot::read(&pool).await.unwrap();
    let findings = compat::diff(&before, &after);

    use FindingKind::*;
    let want = expected(&[
        (ColumnDropped, "sessions", Some("title")),
        (ColumnTypeChanged, "turns", Some("trace_parent")),
        (ColumnTypeChanged, "budgets", Some("hard_usd")),
        (ColumnMadeNotNull, "turns", Some("instructions")),
        (ColumnDefaultDropped, "turns", Some("stream")),
        (NotNullColumnAddedWithoutDefault, "messages", Some("token_count")),
        (TableDropped, "usage_daily", None),
        (ViewDropped, "open_turns", None),
        (TriggerDropped, "turns", Some("turns_finished")),
        (FunctionDropped, "hermes_usage_source(source text)", None),
        (FunctionResultChanged, "hermes_prune_audit(keep interval, batch integer)", None),
        (PrivilegeRevoked, "hermes_prune_audit(keep interval, batch integer)", Some("hermes_system EXECUTE")),
        (EnumValueDropped, "turn_status", Some("cancelled")),
        (PrivilegeRevoked, "messages", Some("hermes_tenant INSERT")),
    ]);
    assert_eq!(named(&findings), want, "{findings:#?}");
    assert_eq!(findings.len(), want.len(), "each change once: {findings:#?}");

    let typmod = findings.iter().find(|f| f.part.as_deref() == Some("hard_usd")).unwrap();
    assert_eq!(typmod.change, "was numeric(14,4), is numeric(12,2) now", "the modifier counts");
    let version = before.version;
    assert!(findings.iter().all(|f| f.migrations == (version, version)), "no migration ran in between");

    // Without an allowlist entry, each one fails the check.
    let problems = compat::problems(&findings, &[], PREVIOUS_RELEASE_SCHEMA);
    assert_eq!(problems.len(), findings.len(), "{}", listed(&problems));
    assert!(problems.iter().all(|p| matches!(p, Problem::Breaking(_))), "{}", listed(&problems));
}

/// 0059 is a real contract step: it drops the outbox triggers and functions 0057 kept for the
/// builds before it. Seen from a release that carries 0057 it is excused by its stop.
const OUTBOX_CONTRACT: &[Allowed] = &[
    outbox_entry(FindingKind::TriggerDropped, "turns", Some("turns_reply_to_outbox")),
    outbox_entry(FindingKind::TriggerDropped, "interactions", Some("interactions_to_outbox")),
    outbox_entry(FindingKind::FunctionDropped, "turn_reply_to_outbox()", None),
    outbox_entry(FindingKind::FunctionDropped, "interaction_to_outbox()", None),
    outbox_entry(FindingKind::FunctionDropped, "hermes_tenant_channel(tenant uuid, destination jsonb)", None),
];

const fn outbox_entry(kind: FindingKind, object: &'static str, part: Option<&'static str>) -> Allowed {
    Allowed { kind, object, part, stop: (59, 57), reason: "0057's pods queue their answers in Rust" }
}

#[sqlx::test(migrations = false)]
async fn a_contract_step_passes_only_with_its_stop_and_a_release_after_its_expand_step(pool: PgPool) {
    MIGRATOR.run_to(58, &pool).await.unwrap();
    let before = Snapshot::read(&pool).await.unwrap();
    MIGRATOR.run_to(59, &pool).await.unwrap();
    let findings = compat::diff(&before, &Snapshot::read(&pool).await.unwrap());
    let want = OUTBOX_CONTRACT.iter().map(|a| (a.kind, a.object, a.part)).collect::<Vec<_>>();
    assert_eq!(named(&findings), expected(&want), "0059's drops, and nothing else: {findings:#?}");
    assert!(findings.iter().all(|f| f.migrations == (58, 59)), "{findings:#?}");

    // Listed with its stop (59, 57): a release at 58 carries 0057, so its pods don't need them.
    let problems = compat::problems(&findings, OUTBOX_CONTRACT, 58);
    assert!(problems.is_empty(), "{}", listed(&problems));
    // Without the entries the same drops fail the check.
    assert_eq!(compat::problems(&findings, &[], 58).len(), OUTBOX_CONTRACT.len());
    // Once 0059 ships, the entries match nothing (HEAD since 0059) and fail as stale.
    let stale = compat::problems(&[], OUTBOX_CONTRACT, 58);
    assert!(stale.iter().all(|p| matches!(p, Problem::Stale(_))) && stale.len() == OUTBOX_CONTRACT.len());

    // A database that is not empty is refused: the check must see the previous schema itself.
    let refused = compat::findings_since(&pool, 58).await.unwrap_err();
    assert!(refused.to_string().contains("empty database"), "{refused}");
}
