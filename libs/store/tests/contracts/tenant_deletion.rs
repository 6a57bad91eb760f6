//! Deleting a tenant (issue 42): none of its rows is left in any table, the tables found from
//! the schema (so a table added later is counted without anyone listing it), and every row
//! of two other tenants is as it was. A table the deletion does not know how to empty stops
//! it; a new table with a `tenant_id` is emptied with the rest. An export holds exactly the
//! tenant's rows, with its secrets withheld.

use std::collections::BTreeMap;

use hermes_core::TenantId;
use hermes_store::StoreError;
use hermes_store::admin::{Actor, ActorKind, Audit};
use sqlx::{Connection, PgPool};

use crate::common;
use crate::tenant_world::{self, World};

fn operator() -> Audit {
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: "ops".into(), label: "hermesctl (ops)".into() },
        request_id: None,
        source_address: None,
    }
}

/// `tenant`'s rows in every table, found from the catalogue: tables with a `tenant_id`, every
/// column that references `tenants`, and the rows hanging off its skills, webhooks and
/// catalogue version.
async fn held(pool: &PgPool, tenant: TenantId) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    let mut count = async |name: String, sql: String| {
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_one(pool).await.unwrap();
        *out.entry(name).or_default() += n;
    };
    for table in common::tenant_tables(pool).await {
        count(table.clone(), format!("SELECT count(*) FROM \"{table}\" WHERE tenant_id = $1")).await;
    }
    let references: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, a.attname::text
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
         JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = ANY(k.conkey)
         WHERE k.contype = 'f' AND k.confrelid = 'tenants'::regclass AND a.attname <> 'tenant_id'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for (table, column) in references {
        count(table.clone(), format!("SELECT count(*) FROM \"{table}\" WHERE \"{column}\" = $1")).await;
    }
    count("tenants".into(), "SELECT count(*) FROM tenants WHERE id = $1".into()).await;
    count("skill_versions".into(), "SELECT count(*) FROM skill_versions WHERE scope = $1".into()).await;
    count(
        "skill_files".into(),
        "SELECT count(*) FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.tenant_id = $1".into(),
    )
    .await;
    count(
        "webhook_deliveries".into(),
        "SELECT count(*) FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.tenant_id = $1"
            .into(),
    )
    .await;
    out
}

/// A person in `tenants` (a membership in each), made as the owner.
async fn person(pool: &PgPool, email: &str, tenants: &[TenantId]) -> uuid::Uuid {
    let id = uuid::Uuid::now_v7();
    sqlx::query("INSERT INTO people (id, email, display_name) VALUES ($1, $2, $2)")
        .bind(id)
        .bind(email)
        .execute(pool)
        .await
        .unwrap();
    for tenant in tenants {
        sqlx::query("INSERT INTO memberships (tenant_id, person_id, role) VALUES ($1, $2, 'member')")
            .bind(tenant.as_uuid())
            .bind(id)
            .execute(pool)
            .await
            .unwrap();
    }
    id
}

async fn delete(w: &World, tenant: TenantId) -> Result<(), StoreError> {
    let by = operator();
    let (_, mut removed) = w.store.system().begin_tenant_deletion(tenant, &by).await?;
    removed.extend(w.store.system().purge_tenant_rows(tenant, 7).await?);
    w.store.system().finish_tenant_deletion(tenant, &by, &removed).await
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_deleted_tenant_has_no_row_in_any_table_and_other_tenants_keep_all_of_theirs(pool: PgPool) {
    let w = tenant_world::world(&pool).await;
    let other = tenant_world::world_named(&pool, "gamma", "delta").await;
    let only_alpha = person(&pool, "only@alpha.test", &[w.a.id]).await;
    let both = person(&pool, "both@gamma.test", &[w.a.id, other.a.id]).await;
    let before = held(&pool, w.a.id).await;
    let in_tables = before.values().filter(|n| **n > 0).count();
    assert!(in_tables >= 30, "alpha holds rows in {in_tables} tables: too few for the test to mean much: {before:?}");
    let kept: Vec<_> = [w.b.id, other.a.id, other.b.id].into_iter().collect();
    let mut kept_rows = Vec::new();
    for t in &kept {
        kept_rows.push(tenant_world::rows_of(&pool, *t).await);
    }

    delete(&w, w.a.id).await.unwrap();

    let after = held(&pool, w.a.id).await;
    let left: BTreeMap<_, _> = after.iter().filter(|(_, n)| **n > 0).collect();
    assert!(left.is_empty(), "alpha's rows left behind: {left:?}");
    for (t, rows) in kept.iter().zip(&kept_rows) {
        assert_eq!(&tenant_world::rows_of(&pool, *t).await, rows, "another tenant's rows changed");
    }
    let people: Vec<uuid::Uuid> = sqlx::query_scalar("SELECT id FROM people WHERE id = ANY($1)")
        .bind([only_alpha, both])
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(people, vec![both], "a person of alpha alone goes; one also in gamma stays");
    let logged: Vec<(String, Option<uuid::Uuid>)> =
        sqlx::query_as("SELECT action, tenant_id FROM audit_log WHERE object_id = $1::text ORDER BY id")
            .bind(w.a.id.as_uuid())
            .fetch_all(&pool)
            .await
            .unwrap();
    let actions: Vec<&str> = logged.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(actions, ["tenant.deletion_started", "tenant.deleted"], "the installation's log keeps the deletion");
    assert!(logged.iter().all(|(_, t)| t.is_none()), "as the installation's entries: {logged:?}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_new_table_is_emptied_too_and_one_nobody_classified_stops_the_deletion(pool: PgPool) {
    let w = tenant_world::world(&pool).await;
    sqlx::raw_sql(
        "CREATE TABLE gadgets (tenant_id uuid NOT NULL, name text);
         GRANT ALL ON gadgets TO hermes_tenant, hermes_system;
         ALTER TABLE gadgets ENABLE ROW LEVEL SECURITY;
         CREATE POLICY tenant_rows ON gadgets TO hermes_tenant
             USING (tenant_id = hermes_tenant()) WITH CHECK (tenant_id = hermes_tenant());
         CREATE POLICY system_paths ON gadgets TO hermes_system USING (true) WITH CHECK (true);
         CREATE TABLE sprockets (owner uuid, name text);",
    )
    .execute(&pool)
    .await
    .unwrap();
    for t in [w.a.id, w.b.id] {
        sqlx::query("INSERT INTO gadgets SELECT $1, 'g' || n FROM generate_series(1, 20) n")
            .bind(t.as_uuid())
            .execute(&pool)
            .await
            .unwrap();
    }
    let sessions = held(&pool, w.a.id).await["sessions"];
    let refused = delete(&w, w.a.id).await.unwrap_err();
    assert!(refused.to_string().contains("table sprockets"), "{refused}");
    assert_eq!(held(&pool, w.a.id).await["sessions"], sessions, "no conversation went before the refusal");

    sqlx::raw_sql("DROP TABLE sprockets").execute(&pool).await.unwrap();
    delete(&w, w.a.id).await.unwrap();
    let gadgets: Vec<(uuid::Uuid, i64)> =
        sqlx::query_as("SELECT tenant_id, count(*) FROM gadgets GROUP BY 1").fetch_all(&pool).await.unwrap();
    assert_eq!(gadgets, vec![(w.b.id.as_uuid(), 20)], "alpha's gadgets went in batches; beta's stayed");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn an_export_holds_every_row_of_the_tenant_and_none_of_its_secrets(pool: PgPool) {
    let w = tenant_world::world(&pool).await;
    let other = tenant_world::world_named(&pool, "gamma", "delta").await;
    let counts = held(&pool, w.a.id).await;
    let mut exported = BTreeMap::new();
    for table in w.store.tenancy().export_tables(w.a.id).await.unwrap() {
        let mut cursor = w.store.tenancy().export_rows(w.a.id, &table).await.unwrap();
        let mut rows = Vec::new();
        loop {
            let batch = cursor.next_batch(3).await.unwrap();
            if batch.is_empty() {
                break;
            }
            rows.extend(batch);
        }
        for row in &rows {
            let value: serde_json::Value = serde_json::from_str(row).unwrap();
            for column in table.withheld() {
                assert!(value.get(&column).is_none(), "{}.{column} was exported: {row}", table.name);
            }
            for foreign in [other.a.id, other.b.id, w.b.id] {
                assert!(!row.contains(&foreign.to_string()), "{}: another tenant's id in {row}", table.name);
            }
        }
        exported.insert(table.name.clone(), rows.len() as i64);
    }
    for (table, n) in &counts {
        if exported.contains_key(table) {
            assert_eq!(exported[table], *n, "{table}: every row of alpha's, exactly");
        }
    }
    let missing: Vec<_> = counts.iter().filter(|(t, n)| **n > 0 && !exported.contains_key(*t)).collect();
    assert!(missing.is_empty(), "tables with alpha's rows not exported: {missing:?}");
    let skills = w.store.tenancy().export_skill_files(w.a.id).await.unwrap();
    assert!(skills.iter().any(|f| f.skill == tenant_world::SKILL && f.path == "SKILL.md"), "{skills:?}");
    let memory = w.store.tenancy().export_memory(w.a.id).await.unwrap();
    assert_eq!(memory.len(), 2, "the agent's notes and what it knows of user-1: {memory:?}");
}

/// The mark that lets a tenant's audit entries go and sends the workers to its sandboxes: the
/// tenant role cannot set it, nobody can clear it, and a mark without the deletion's entry in
/// the installation's log erases nothing.
#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn the_deletion_mark_is_the_systems_alone_and_cannot_be_undone(pool: PgPool) {
    let w = tenant_world::world(&pool).await;
    let mut tenant_role = sqlx::PgConnection::connect_with(&pool.connect_options()).await.unwrap();
    sqlx::raw_sql("SET ROLE hermes_tenant").execute(&mut tenant_role).await.unwrap();
    sqlx::query("SELECT set_config('hermes.tenant_id', $1::uuid::text, false)")
        .bind(w.a.id.as_uuid())
        .execute(&mut tenant_role)
        .await
        .unwrap();
    let refused = sqlx::query("UPDATE tenants SET deleting_since = now() WHERE id = $1")
        .bind(w.a.id.as_uuid())
        .execute(&mut tenant_role)
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("only the system"), "{refused}");

    // Marked behind the store's back: the audit function still finds no deletion begun.
    sqlx::query("UPDATE tenants SET deleting_since = now() WHERE id = $1")
        .bind(w.a.id.as_uuid())
        .execute(&pool)
        .await
        .unwrap();
    let entries =
        || sqlx::query_scalar::<_, i64>("SELECT count(*) FROM audit_log WHERE tenant_id = $1").bind(w.a.id.as_uuid());
    let before = entries().fetch_one(&pool).await.unwrap();
    assert!(before > 0, "alpha has audit entries");
    let gone: i64 = sqlx::query_scalar("SELECT hermes_forget_deleted_tenant_audit($1, 1000)")
        .bind(w.a.id.as_uuid())
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(
        (gone, entries().fetch_one(&pool).await.unwrap()),
        (0, before),
        "no entry goes without the deletion's own"
    );
    let undone = sqlx::query("UPDATE tenants SET deleting_since = NULL WHERE id = $1")
        .bind(w.a.id.as_uuid())
        .execute(&pool)
        .await;
    assert!(undone.unwrap_err().to_string().contains("cannot be undone"));
}
