//! What a running build relies on in the schema, read from Postgres's catalogs: the tables and
//! views with their columns (type, nullability, default), the functions, the enabled triggers,
//! the enum labels and who may do what on each table, sequence and function. Only schema
//! `public` counts, and not what an extension (btree_gin) installs there. Two snapshots are
//! compared by [`super::compat::diff`].

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgPool;

use crate::Result;

/// One column as a query or an `INSERT` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// `format_type` of the type with its modifier: `character varying(64)`, `numeric(12,4)`.
    pub type_name: String,
    pub not_null: bool,
    /// Whether an `INSERT` that leaves it out gets a value: a default, an identity or a
    /// generated column.
    pub has_default: bool,
}

/// A table or a view, with its columns by name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Relation {
    pub is_view: bool,
    pub columns: BTreeMap<String, Column>,
}

/// The schema at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// The newest migration in the ledger (`0`: none).
    pub version: i64,
    /// Tables and views by name.
    pub relations: BTreeMap<String, Relation>,
    /// Functions by `name(argument types)`, with what they return.
    pub functions: BTreeMap<String, String>,
    /// Enabled triggers as `(table, trigger)`.
    pub triggers: BTreeSet<(String, String)>,
    /// Enum labels as `(type, label)`.
    pub enum_labels: BTreeSet<(String, String)>,
    /// Per table, view, sequence and function (`name(argument types)`): the `(role,
    /// privilege)` pairs granted to roles other than its owner (`PUBLIC` for everyone).
    pub grants: BTreeMap<String, BTreeSet<(String, String)>>,
}

/// Leaves out what an extension owns (`classid` names the catalog of `objid`).
const NOT_FROM_EXTENSION: &str = "NOT EXISTS (SELECT 1 FROM pg_depend d
      WHERE d.classid = $1::regclass AND d.objid = o.oid AND d.deptype = 'e')";

const COLUMNS: &str = "SELECT o.relname::text, o.relkind IN ('v', 'm'), a.attname::text,
       format_type(a.atttypid, a.atttypmod), a.attnotnull,
       a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> ''
  FROM pg_class o
  JOIN pg_namespace n ON n.oid = o.relnamespace
  LEFT JOIN pg_attribute a ON a.attrelid = o.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE n.nspname = 'public' AND o.relkind IN ('r', 'p', 'v', 'm') AND ";

const FUNCTIONS: &str = "SELECT o.proname || '(' || pg_get_function_identity_arguments(o.oid) || ')',
       coalesce(pg_get_function_result(o.oid), '')
  FROM pg_proc o JOIN pg_namespace n ON n.oid = o.pronamespace
 WHERE n.nspname = 'public' AND ";

const TRIGGERS: &str = "SELECT o.relname::text, t.tgname::text
  FROM pg_trigger t JOIN pg_class o ON o.oid = t.tgrelid JOIN pg_namespace n ON n.oid = o.relnamespace
 WHERE n.nspname = 'public' AND NOT t.tgisinternal AND t.tgenabled <> 'D' AND ";

const ENUM_LABELS: &str = "SELECT o.typname::text, e.enumlabel::text
  FROM pg_enum e JOIN pg_type o ON o.oid = e.enumtypid JOIN pg_namespace n ON n.oid = o.typnamespace
 WHERE n.nspname = 'public' AND ";

/// An object without other grantees still gets a row (with NULLs), so that a revoked last
/// grant is told apart from a dropped object.
const TABLE_GRANTS: &str = "SELECT o.relname::text,
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, a.privilege_type
  FROM pg_class o
  JOIN pg_namespace n ON n.oid = o.relnamespace
  LEFT JOIN LATERAL aclexplode(coalesce(
         o.relacl, acldefault(CASE WHEN o.relkind = 'S' THEN 's' ELSE 'r' END::\"char\", o.relowner))) a
    ON a.grantee <> o.relowner
 WHERE n.nspname = 'public' AND o.relkind IN ('r', 'p', 'v', 'm', 'S') AND ";

const FUNCTION_GRANTS: &str = "SELECT o.proname || '(' || pg_get_function_identity_arguments(o.oid) || ')',
       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, a.privilege_type
  FROM pg_proc o
  JOIN pg_namespace n ON n.oid = o.pronamespace
  LEFT JOIN LATERAL aclexplode(coalesce(o.proacl, acldefault('f', o.proowner))) a ON a.grantee <> o.proowner
 WHERE n.nspname = 'public' AND ";

type ColumnRow = (String, bool, Option<String>, Option<String>, Option<bool>, Option<bool>);
type GrantRow = (String, Option<String>, Option<String>);

impl Snapshot {
    /// Reads the schema of the database `pool` is on, as a role that can see its catalogs.
    pub async fn read(pool: &PgPool) -> Result<Snapshot> {
        let mut snapshot = Snapshot { version: ledger_version(pool).await?, ..Snapshot::default() };
        let columns: Vec<ColumnRow> = rows(pool, COLUMNS, "pg_class").await?;
        for (table, is_view, column, type_name, not_null, has_default) in columns {
            let relation =
                snapshot.relations.entry(table).or_insert_with(|| Relation { is_view, ..Relation::default() });
            if let (Some(column), Some(type_name), Some(not_null), Some(has_default)) =
                (column, type_name, not_null, has_default)
            {
                relation.columns.insert(column, Column { type_name, not_null, has_default });
            }
        }
        snapshot.functions = rows(pool, FUNCTIONS, "pg_proc").await?.into_iter().collect();
        snapshot.triggers = rows(pool, TRIGGERS, "pg_class").await?.into_iter().collect();
        snapshot.enum_labels = rows(pool, ENUM_LABELS, "pg_type").await?.into_iter().collect();
        let mut grants: Vec<GrantRow> = rows(pool, TABLE_GRANTS, "pg_class").await?;
        grants.extend(rows::<GrantRow>(pool, FUNCTION_GRANTS, "pg_proc").await?);
        for (object, role, privilege) in grants {
            let granted = snapshot.grants.entry(object).or_default();
            if let (Some(role), Some(privilege)) = (role, privilege) {
                granted.insert((role, privilege));
            }
        }
        Ok(snapshot)
    }
}

/// The rows of `query` (which ends in `AND `) over objects of catalog `catalog` that no
/// extension owns.
async fn rows<T>(pool: &PgPool, query: &str, catalog: &str) -> Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let sql = format!("{query}{NOT_FROM_EXTENSION}");
    Ok(sqlx::query_as::<_, T>(sqlx::AssertSqlSafe(sql)).bind(catalog).fetch_all(pool).await?)
}

/// The newest successful migration, `0` on a database without the ledger.
async fn ledger_version(pool: &PgPool) -> Result<i64> {
    let ledger: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text").fetch_one(pool).await?;
    if ledger.is_none() {
        return Ok(0);
    }
    let newest: Option<i64> =
        sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations WHERE success").fetch_one(pool).await?;
    Ok(newest.unwrap_or(0))
}
