//! Where a tenant's rows are, read from the schema rather than listed by hand, so a table
//! added later is exported and deleted with the rest without anyone remembering to: every
//! table with a `tenant_id` column, plus the few that hold a tenant's rows under another name
//! ([`OWNED_ELSEWHERE`]). Every other table must be named the installation's
//! ([`INSTALLATION`]); a table that is neither stops an export or a deletion
//! ([`StoreError::Invalid`]) rather than leave its rows behind.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgConnection;

use crate::{Result, StoreError};

/// Tables that hold a tenant's rows without a `tenant_id` column, and the condition (on `$1`,
/// the tenant's id) that picks them.
pub const OWNED_ELSEWHERE: [(&str, &str); 5] = [
    ("tenants", "id = $1"),
    // The people in the tenant: those with a membership in it.
    ("people", "EXISTS (SELECT 1 FROM memberships m WHERE m.person_id = people.id AND m.tenant_id = $1)"),
    ("skill_files", "EXISTS (SELECT 1 FROM skills s WHERE s.id = skill_files.skill_id AND s.tenant_id = $1)"),
    // The version of a tenant's skill catalogue (the bundled catalogue's scope is all zeros).
    ("skill_versions", "scope = $1"),
    (
        "webhook_deliveries",
        "EXISTS (SELECT 1 FROM webhooks w WHERE w.id = webhook_deliveries.webhook_id AND w.tenant_id = $1)",
    ),
];

/// Tables that hold no tenant's rows: the installation's own (migrations, the egress CA,
/// prices) and the admin plane's sign-in state of people, which goes with the people.
pub const INSTALLATION: [&str; 6] =
    ["_sqlx_migrations", "console_sessions", "egress_authority", "model_prices", "person_identities", "sign_in_links"];

/// Columns never exported: secrets sealed at rest and hashes of credentials (useless without
/// the installation's keys, and a gift to whoever finds the archive).
pub const WITHHELD: [(&str, &str); 12] = [
    ("admin_tokens", "hash"),
    ("agents", "provider_secret"),
    ("api_keys", "hash"),
    ("channels", "credentials"),
    ("channels", "webhook_secret"),
    ("event_hooks", "secret"),
    ("invitations", "hash"),
    ("mcp_servers", "secrets"),
    ("people", "password_hash"),
    ("provider_credentials", "secret"),
    ("tenant_identity_providers", "client_secret"),
    ("webhooks", "secret"),
];

/// Byte columns that are no secret and are exported (as `\x…` hex): the bytes of a file a
/// turn was given.
const KEPT_BYTES: [(&str, &str); 1] = [("turn_files", "data")];

/// One table holding a tenant's rows and the condition that picks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedTable {
    pub name: String,
    /// A SQL condition on `$1` (the tenant's id).
    pub condition: String,
    /// Whether the rows are picked by their own `tenant_id` column.
    pub by_tenant_column: bool,
    /// The columns an export reads: those the reading role may, less [`WITHHELD`].
    pub exported: Vec<String>,
    /// Whether a row may be large (it holds a file's bytes): read one at a time.
    pub large_rows: bool,
}

impl OwnedTable {
    /// The columns of this table an export leaves out (whatever the role may read).
    pub fn withheld(&self) -> Vec<String> {
        WITHHELD.iter().filter(|(table, _)| *table == self.name).map(|(_, column)| (*column).to_owned()).collect()
    }

    /// The table's name quoted for SQL (it comes from the catalogue, and is checked to be a
    /// plain lower-case name there).
    pub fn quoted(&self) -> String {
        format!("\"{}\"", self.name)
    }
}

/// Every table of the schema with its columns' names and types and whether the connection's
/// role may read each, and its foreign keys.
struct Catalogue {
    columns: BTreeMap<String, Vec<(String, String, bool)>>,
    /// (referencing table, referenced table)
    references: Vec<(String, String)>,
}

async fn catalogue(conn: &mut PgConnection) -> Result<Catalogue> {
    let rows: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT c.relname::text, a.attname::text, format_type(a.atttypid, NULL),
                has_column_privilege(c.oid, a.attnum, 'SELECT')
         FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut columns: BTreeMap<String, Vec<(String, String, bool)>> = BTreeMap::new();
    for (table, column, kind, readable) in rows {
        columns.entry(table).or_default().push((column, kind, readable));
    }
    let references: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT c.relname::text, r.relname::text
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
         WHERE k.contype = 'f' AND c.relnamespace = 'public'::regnamespace",
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(Catalogue { columns, references })
}

/// Every table holding a tenant's rows, those that others reference last (so a batch of
/// deletes never cascades into a large table the batches have not emptied yet). Fails when a
/// table is neither a tenant's nor named the installation's, or a byte column is undecided.
pub(crate) async fn owned_tables(conn: &mut PgConnection) -> Result<Vec<OwnedTable>> {
    let catalogue = catalogue(conn).await?;
    let problems = unclassified(&catalogue);
    if !problems.is_empty() {
        return Err(StoreError::Invalid(format!(
            "the schema has tables or columns no one decided about (libs/store/src/tenant_tables.rs): {}",
            problems.join(", ")
        )));
    }
    let mut tables = Vec::new();
    for (name, columns) in &catalogue.columns {
        let exported: Vec<String> = columns
            .iter()
            .filter(|(c, _, readable)| *readable && !WITHHELD.contains(&(name.as_str(), c.as_str())))
            .map(|(c, _, _)| c.clone())
            .collect();
        let by_tenant_column = columns.iter().any(|(c, _, _)| c == "tenant_id");
        let condition = match OWNED_ELSEWHERE.iter().find(|(t, _)| t == name) {
            _ if by_tenant_column => "tenant_id = $1",
            Some((_, condition)) => condition,
            None => continue,
        };
        let large_rows = columns.iter().any(|(c, _, _)| KEPT_BYTES.contains(&(name.as_str(), c.as_str())));
        let (name, condition) = (name.clone(), condition.into());
        tables.push(OwnedTable { name, condition, by_tenant_column, exported, large_rows });
    }
    Ok(leaves_first(tables, &catalogue.references))
}

/// What the schema holds that this module does not account for: a table that is neither a
/// tenant's nor the installation's, a name that is not a plain identifier, a byte column of a
/// tenant's table neither withheld nor kept.
fn unclassified(catalogue: &Catalogue) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, columns) in &catalogue.columns {
        if !plain(name) {
            problems.push(format!("{name:?} (not a plain name)"));
            continue;
        }
        let has_tenant = columns.iter().any(|(c, _, _)| c == "tenant_id");
        let elsewhere = OWNED_ELSEWHERE.iter().any(|(t, _)| t == name);
        if !has_tenant && !elsewhere {
            if !INSTALLATION.contains(&name.as_str()) {
                problems.push(format!("table {name}"));
            }
            continue;
        }
        for (column, kind, _) in columns {
            if !plain(column) {
                problems.push(format!("column {name}.{column:?} (not a plain name)"));
            }
            let decided = WITHHELD.iter().chain(&KEPT_BYTES).any(|(t, c)| t == name && c == column);
            if kind == "bytea" && !decided {
                problems.push(format!("byte column {name}.{column}"));
            }
        }
    }
    problems
}

/// Whether `name` is written into SQL as is safely (it is quoted there too).
fn plain(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// `tables` ordered so that a table comes after every table of the set that references it.
/// Cycles (none today) are broken by name.
fn leaves_first(tables: Vec<OwnedTable>, references: &[(String, String)]) -> Vec<OwnedTable> {
    let names: BTreeSet<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    let edges: Vec<(&str, &str)> = references
        .iter()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .filter(|(from, to)| from != to && names.contains(from) && names.contains(to))
        .collect();
    let mut left: BTreeSet<&str> = names.clone();
    let mut order: Vec<String> = Vec::new();
    while !left.is_empty() {
        let ready: Vec<&str> =
            left.iter().copied().filter(|t| !edges.iter().any(|(from, to)| to == t && left.contains(from))).collect();
        let next = if ready.is_empty() { left.iter().copied().take(1).collect() } else { ready };
        for t in next {
            left.remove(t);
            order.push(t.to_owned());
        }
    }
    let mut by_name: BTreeMap<String, OwnedTable> = tables.into_iter().map(|t| (t.name.clone(), t)).collect();
    order.into_iter().filter_map(|name| by_name.remove(&name)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str) -> OwnedTable {
        let condition = "tenant_id = $1".into();
        OwnedTable { name: name.into(), condition, by_tenant_column: true, exported: vec![], large_rows: false }
    }

    #[test]
    fn a_referenced_table_comes_after_what_references_it() {
        let refs = [("messages", "sessions"), ("sessions", "agents"), ("turns", "sessions"), ("agents", "tenants")]
            .map(|(a, b)| (a.to_owned(), b.to_owned()));
        let order: Vec<String> =
            leaves_first(["agents", "messages", "sessions", "tenants", "turns"].map(table).into(), &refs)
                .into_iter()
                .map(|t| t.name)
                .collect();
        let at = |n: &str| order.iter().position(|t| t == n).unwrap();
        assert!(at("messages") < at("sessions") && at("turns") < at("sessions"), "{order:?}");
        assert!(at("sessions") < at("agents") && at("agents") < at("tenants"), "{order:?}");
    }

    #[test]
    fn a_cycle_still_orders_every_table() {
        let refs = [("a", "b"), ("b", "a")].map(|(a, b)| (a.to_owned(), b.to_owned()));
        assert_eq!(leaves_first(["a", "b", "c"].map(table).into(), &refs).len(), 3);
    }
}
