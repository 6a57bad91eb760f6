//! Everything a tenant owns, for its export: every table's rows as JSON (the tables read from
//! the schema by [`tenant_tables`](crate::tenant_tables), secrets withheld), and its skills and
//! memory as the files the agent knows them as. Everything runs as the tenant role, so an
//! export holds the tenant's rows and nothing else whatever a condition says.

use sqlx::{Postgres, Transaction};

use hermes_core::TenantId;

use crate::tenant_tables::{self, OwnedTable};
use crate::{Result, views::Tenancy};

/// A table's rows being read, a batch at a time, on a cursor of its own transaction.
pub struct RowCursor {
    tx: Transaction<'static, Postgres>,
}

impl RowCursor {
    /// Up to `batch` more rows, each a JSON object; empty when the table is done.
    pub async fn next_batch(&mut self, batch: u32) -> Result<Vec<String>> {
        let sql = format!("FETCH FORWARD {batch} FROM tenant_export");
        Ok(sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(&mut *self.tx).await?)
    }
}

/// One of the tenant's skills as a file of its folder.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SkillFile {
    /// The agent the skill belongs to; `None` for the tenant's own (every agent's).
    pub agent: Option<String>,
    pub skill: String,
    /// `SKILL.md`, or the file's path inside the skill's folder.
    pub path: String,
    pub content: String,
}

/// One memory store of an agent (its own notes, or what it knows of one user).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemoryFile {
    pub agent: String,
    /// `memory` or `user`.
    pub target: String,
    /// The user, for a `user` store.
    pub user_key: String,
    pub entries: Vec<String>,
}

impl Tenancy<'_> {
    /// The tables holding a tenant's rows (see `tenant_tables`); fails on a schema with a table
    /// no one classified.
    pub async fn export_tables(self, tenant: TenantId) -> Result<Vec<OwnedTable>> {
        tenant_tables::owned_tables(&mut *self.as_tenant(tenant).await?).await
    }

    /// A cursor over `tenant`'s rows of `table`, each as a JSON object without the columns the
    /// export withholds.
    pub async fn export_rows(self, tenant: TenantId, table: &OwnedTable) -> Result<RowCursor> {
        let mut tx = self.tenant_tx(tenant).await?;
        // A cursor takes no parameters: the tenant's id (hex and dashes) is written in, and
        // the columns are the catalogue's plain names.
        let condition = table.condition.replace("$1", &format!("'{}'::uuid", tenant.as_uuid()));
        let columns: Vec<String> = table.exported.iter().map(|c| format!("\"{c}\"")).collect();
        let sql = format!(
            "DECLARE tenant_export NO SCROLL CURSOR FOR
             SELECT to_jsonb(r)::text FROM (SELECT {} FROM {} WHERE {condition}) r",
            columns.join(", "),
            table.quoted(),
        );
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *tx).await?;
        Ok(RowCursor { tx })
    }

    /// `tenant`'s skills (agents' and its own), each file of each.
    pub async fn export_skill_files(self, tenant: TenantId) -> Result<Vec<SkillFile>> {
        Ok(sqlx::query_as(
            "SELECT a.name AS agent, s.name AS skill, 'SKILL.md' AS path, s.skill_md AS content
             FROM skills s LEFT JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
             WHERE s.tenant_id = $1
             UNION ALL
             SELECT a.name, s.name, f.path, f.content
             FROM skills s JOIN skill_files f ON f.skill_id = s.id
             LEFT JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
             WHERE s.tenant_id = $1
             ORDER BY 1, 2, 3",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// `tenant`'s agents' memory stores.
    pub async fn export_memory(self, tenant: TenantId) -> Result<Vec<MemoryFile>> {
        Ok(sqlx::query_as(
            "SELECT a.name AS agent, m.target, m.user_key, m.entries
             FROM memories m JOIN agents a ON a.tenant_id = m.tenant_id AND a.id = m.agent_id
             WHERE m.tenant_id = $1 ORDER BY 1, 2, 3",
        )
        .bind(tenant.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?)
    }
}
