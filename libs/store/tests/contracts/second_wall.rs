//! The second wall (migration 0040): row-level security holds even for a query that forgets
//! its `WHERE tenant_id`. Tenant `alpha` holds rows in nearly every table (the tenant-scoping
//! world); `beta` holds a few. Reads, updates and deletes that name no tenant, made as the
//! tenant role for `beta`, see and touch nothing of `alpha`'s, and a row claiming to be
//! `alpha`'s cannot be written.

use std::collections::{BTreeMap, BTreeSet};

use hermes_core::TenantId;
use sqlx::{Connection, PgConnection, PgPool};

use crate::common;
use crate::tenant_world::{self, World};

/// Tables that hold no tenant's rows, and so have no row policy (the tenant role may not touch
/// the admin plane's sessions and links at all).
const INSTALLATION_TABLES: [&str; 6] =
    ["_sqlx_migrations", "console_sessions", "egress_authority", "model_prices", "person_identities", "sign_in_links"];

/// Tables with shared rows (no tenant's): every tenant reads them (`shared_reads`), none
/// changes them.
const SHARED: [&str; 3] = ["skill_files", "skill_versions", "skills"];

/// Tables the tenant role reads but never deletes from: people (the installation's, seen
/// through a membership) and the append-only audit log.
const APPEND_ONLY: [&str; 2] = ["audit_log", "people"];

/// Every table with row-level security, and the policies on it.
async fn policies(pool: &PgPool) -> BTreeMap<String, BTreeSet<String>> {
    let rows: Vec<(String, bool, Option<String>)> = sqlx::query_as(
        "SELECT c.relname::text, c.relrowsecurity, p.polname::text
         FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (table, secured, policy) in rows {
        let entry = out.entry(table).or_default();
        if secured && let Some(policy) = policy {
            entry.insert(policy);
        }
    }
    out
}

/// What the owner (no policies) counts as `tenant`'s, table by table, with `WHERE`s.
async fn owned_rows(pool: &PgPool, tenant: TenantId) -> BTreeMap<String, i64> {
    let tables = common::tenant_tables(pool).await;
    let mut out = BTreeMap::new();
    let mut count = async |name: &str, sql: String| {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_one(pool).await.unwrap();
        out.insert(name.to_owned(), n);
    };
    for table in &tables {
        count(table, format!("SELECT count(*) FROM \"{table}\" WHERE tenant_id = $1")).await;
    }
    count("tenants", "SELECT count(*) FROM tenants WHERE id = $1".into()).await;
    count(
        "people",
        "SELECT count(*) FROM people p WHERE EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = p.id AND m.tenant_id = $1)"
            .into(),
    )
    .await;
    count("skill_versions", "SELECT count(*) FROM skill_versions WHERE scope = $1".into()).await;
    count(
        "skill_files",
        "SELECT count(*) FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.tenant_id = $1".into(),
    )
    .await;
    count(
        "webhook_deliveries",
        "SELECT count(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.tenant_id = $1"
            .into(),
    )
    .await;
    out
}

/// A connection as the tenant role for `tenant` (`None`: for no tenant), as the store makes
/// them.
async fn as_tenant_role(pool: &PgPool, tenant: Option<TenantId>) -> PgConnection {
    let mut conn = PgConnection::connect_with(&pool.connect_options()).await.unwrap();
    sqlx::raw_sql("SET ROLE hermes_tenant").execute(&mut conn).await.unwrap();
    if let Some(tenant) = tenant {
        sqlx::query("SELECT set_config('hermes.tenant_id', $1::uuid::text, false)")
            .bind(tenant.as_uuid())
            .execute(&mut conn)
            .await
            .unwrap();
    }
    conn
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn every_table_of_tenant_rows_has_the_two_policies(pool: PgPool) {
    let unsecured: Vec<String> = policies(&pool)
        .await
        .into_iter()
        .filter(|(table, found)| {
            let mut expected: BTreeSet<String> = ["system_paths", "tenant_rows"].map(String::from).into();
            if SHARED.contains(&table.as_str()) {
                expected.insert("shared_reads".into());
            }
            !INSTALLATION_TABLES.contains(&table.as_str()) && *found != expected
        })
        .map(|(table, found)| format!("{table}: {found:?}"))
        .collect();
    assert!(unsecured.is_empty(), "tables without row-level security (or with other policies): {unsecured:?}");
    let strong: Vec<(String, bool, bool)> = sqlx::query_as(
        "SELECT rolname::text, rolsuper, rolbypassrls FROM pg_roles WHERE rolname IN ('hermes_tenant', 'hermes_system')",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(strong.len(), 2, "both roles exist: {strong:?}");
    assert!(strong.iter().all(|(_, sup, bypass)| !sup && !bypass), "neither role bypasses the policies: {strong:?}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_count_that_names_no_tenant_counts_only_the_callers_rows(pool: PgPool) {
    let w: World = tenant_world::world(&pool).await;
    let (alpha, beta) = (owned_rows(&pool, w.a.id).await, owned_rows(&pool, w.b.id).await);
    let held = alpha.values().filter(|n| **n > 0).count();
    assert!(held >= 25, "alpha holds rows in {held} tables: too few for the test to mean much: {alpha:?}");

    let seen = |rows: Vec<(String, i64)>| rows.into_iter().collect::<BTreeMap<_, _>>();
    assert_eq!(seen(w.store.tenancy().tenant_rows(w.a.id).await.unwrap()), alpha, "alpha sees exactly its own rows");
    assert_eq!(seen(w.store.tenancy().tenant_rows(w.b.id).await.unwrap()), beta, "beta sees exactly its own rows");
    let secured: BTreeSet<String> =
        policies(&pool).await.into_iter().filter(|(_, p)| !p.is_empty()).map(|(t, _)| t).collect();
    assert_eq!(alpha.keys().cloned().collect::<BTreeSet<_>>(), secured, "the count covers every secured table");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn writes_that_name_no_tenant_touch_nothing_of_another_tenants(pool: PgPool) {
    let w: World = tenant_world::world(&pool).await;
    let before = tenant_world::rows_of(&pool, w.a.id).await;
    let mut beta = as_tenant_role(&pool, Some(w.b.id)).await;

    // Forgotten filters: every update and delete of the tenant role, over every table.
    let updated = sqlx::query("UPDATE sessions SET title = 'taken'").execute(&mut beta).await.unwrap().rows_affected();
    assert_eq!(updated, 1, "only beta's one session");
    sqlx::query("UPDATE agents SET model = 'taken'").execute(&mut beta).await.unwrap();
    sqlx::query("UPDATE tenants SET name = 'taken'").execute(&mut beta).await.unwrap();
    for table in policies(&pool).await.keys().filter(|t| !INSTALLATION_TABLES.contains(&t.as_str())) {
        let deleted = sqlx::query(sqlx::AssertSqlSafe(format!("DELETE FROM \"{table}\""))).execute(&mut beta).await;
        if APPEND_ONLY.contains(&table.as_str()) {
            let refused = deleted.expect_err("the tenant role may not delete here");
            assert!(refused.to_string().contains("permission denied"), "{table}: {refused}");
        } else {
            deleted.unwrap();
        }
    }
    assert_eq!(tenant_world::rows_of(&pool, w.a.id).await, before, "alpha's rows are as they were");

    // A row that claims to be alpha's is refused, even with beta's own ids elsewhere.
    let refused = sqlx::query(
        "INSERT INTO memories (tenant_id, agent_id, target, user_key, entries) VALUES ($1, $2, 'memory', '', '{}')",
    )
    .bind(w.a.id.as_uuid())
    .bind(w.a.agent.as_uuid())
    .execute(&mut beta)
    .await
    .unwrap_err();
    let code = refused.as_database_error().and_then(|e| e.code()).unwrap_or_default().into_owned();
    assert_eq!(code, "42501", "a row-level security violation: {refused}");
    let moved = sqlx::query("UPDATE sessions SET tenant_id = $1").bind(w.a.id.as_uuid()).execute(&mut beta).await;
    assert!(moved.is_err() || moved.unwrap().rows_affected() == 0, "beta cannot hand a row to alpha");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_connection_with_no_tenant_named_sees_nothing(pool: PgPool) {
    let w: World = tenant_world::world(&pool).await;
    let mut nobody = as_tenant_role(&pool, None).await;
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT 'sessions', count(*) FROM sessions UNION ALL SELECT 'messages', count(*) FROM messages
         UNION ALL SELECT 'tenants', count(*) FROM tenants UNION ALL SELECT 'api_keys', count(*) FROM api_keys
         UNION ALL SELECT 'skills', count(*) FROM skills WHERE tenant_id IS NOT NULL",
    )
    .fetch_all(&mut nobody)
    .await
    .unwrap();
    assert!(rows.iter().all(|(_, n)| *n == 0), "nothing is visible without a tenant: {rows:?}");
    let owner: i64 = sqlx::query_scalar("SELECT count(*) FROM sessions").fetch_one(&pool).await.unwrap();
    assert!(owner >= 2, "there was something to see");
    drop(w);
}

/// The security review of 2026-12 (L2): one policy for every command let the tenant role
/// delete or claim the bundled (no tenant's) skills, their files and the catalogue's version
/// when a query forgot its filter, and read the people's password hashes.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn shared_rows_are_read_by_every_tenant_and_changed_by_none(pool: PgPool) {
    let w: World = tenant_world::world(&pool).await;
    sqlx::raw_sql(
        "INSERT INTO skills (id, tenant_id, name, category, description, skill_md, meta, content_hash)
             VALUES ('00000000-0000-0000-0000-0000000000b1', NULL, 'bundled-one', 'c', 'd', 'md', '{}', 'h');
         INSERT INTO skill_files (skill_id, path, content) VALUES ('00000000-0000-0000-0000-0000000000b1', 'a.md', 'x');
         INSERT INTO skill_versions (scope, version) VALUES ('00000000-0000-0000-0000-000000000000', 7)
             ON CONFLICT (scope) DO UPDATE SET version = 7",
    )
    .execute(&pool)
    .await
    .unwrap();
    let shared = async || -> (i64, i64, i64) {
        sqlx::query_as(
            "SELECT (SELECT count(*) FROM skills WHERE tenant_id IS NULL),
                    (SELECT count(*) FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.tenant_id IS NULL),
                    (SELECT version FROM skill_versions WHERE scope = '00000000-0000-0000-0000-000000000000')",
        )
        .fetch_one(&pool)
        .await
        .unwrap()
    };
    let before = shared().await;
    let mut beta = as_tenant_role(&pool, Some(w.b.id)).await;
    let seen: (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM skills WHERE tenant_id IS NULL), (SELECT count(*) FROM skill_files)",
    )
    .fetch_one(&mut beta)
    .await
    .unwrap();
    assert!(seen.0 >= 1 && seen.1 >= 1, "the bundled rows are read: {seen:?}");
    for sql in [
        "DELETE FROM skill_files",
        "DELETE FROM skills WHERE tenant_id IS NULL",
        "UPDATE skills SET description = 'taken' WHERE tenant_id IS NULL",
        "DELETE FROM skill_versions",
        "UPDATE skill_versions SET version = version + 1",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut beta).await.unwrap();
    }
    let claimed = sqlx::query("UPDATE skills SET tenant_id = $1 WHERE tenant_id IS NULL")
        .bind(w.b.id.as_uuid())
        .execute(&mut beta)
        .await
        .map(|done| done.rows_affected());
    assert!(matches!(claimed, Ok(0) | Err(_)), "a bundled skill cannot be claimed: {claimed:?}");
    assert_eq!(shared().await, before, "the shared rows are as they were");

    let hashes = sqlx::query("SELECT password_hash FROM people").execute(&mut beta).await.unwrap_err();
    assert!(hashes.to_string().contains("permission denied"), "{hashes}");
    sqlx::query("SELECT id, email, has_password FROM people").execute(&mut beta).await.unwrap();
}
