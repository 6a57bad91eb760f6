//! Files a chat answer hands over (migration 0026; see `hermes_core::media`).

use chrono::{DateTime, Utc};

use hermes_core::{AgentId, TenantId, TurnId};

use crate::{Result, views::Turns};

/// A file named by an answer: its bytes, or why they could not be read.
#[derive(Debug, Clone)]
pub struct TurnFile {
    /// What the answer named (a workspace path, or a URL).
    pub target: String,
    pub name: String,
    pub mime: String,
    pub data: Result<Vec<u8>, String>,
}

/// A stored file of an answer: its bytes, or the error that took their place.
#[derive(sqlx::FromRow)]
struct TurnFileRow {
    target: String,
    name: String,
    mime: String,
    data: Option<Vec<u8>>,
    error: Option<String>,
}

impl From<TurnFileRow> for TurnFile {
    fn from(row: TurnFileRow) -> Self {
        let TurnFileRow { target, name, mime, data, error } = row;
        TurnFile { target, name, mime, data: data.ok_or_else(|| error.unwrap_or_else(|| "the file is missing".into())) }
    }
}

/// A kept file as the API hands it out (`GET /v1/files/{id}`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SharedFile {
    /// The agent whose turn made it (a key restricted to another agent does not see it).
    #[sqlx(try_from = "crate::rows::Id")]
    pub agent_id: AgentId,
    pub name: String,
    pub mime: String,
    pub data: Vec<u8>,
    pub created_at: DateTime<Utc>,
}

impl Turns<'_> {
    /// The file named `name` that `turn` kept, with its bytes; `None` if the tenant has no such
    /// turn or file, or the file could not be read when it was kept.
    pub async fn shared_file(self, tenant: TenantId, turn: TurnId, name: &str) -> Result<Option<SharedFile>> {
        Ok(sqlx::query_as::<_, SharedFile>(
            "SELECT s.agent_id, f.name, f.mime, f.data, f.created_at FROM turn_files f
             JOIN turns t ON t.tenant_id = f.tenant_id AND t.id = f.turn_id
             JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
             WHERE f.tenant_id = $1 AND f.turn_id = $2 AND f.name = $3 AND f.data IS NOT NULL
             ORDER BY f.target LIMIT 1",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(name)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?)
    }

    /// Records a file of a turn's answer (again: replaced). Another tenant's turn is `NotFound`
    /// (or refused by the foreign key): the key has no tenant, so the update checks it.
    pub async fn save_turn_file(self, tenant: TenantId, turn: TurnId, file: &TurnFile) -> Result<()> {
        let (data, error) = match &file.data {
            Ok(bytes) => (Some(bytes.as_slice()), None),
            Err(e) => (None, Some(crate::messages::without_nul(e))),
        };
        let done = sqlx::query(
            "INSERT INTO turn_files (tenant_id, turn_id, target, name, mime, data, error)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (turn_id, target) DO UPDATE SET name = EXCLUDED.name, mime = EXCLUDED.mime,
                 data = EXCLUDED.data, error = EXCLUDED.error
             WHERE turn_files.tenant_id = EXCLUDED.tenant_id",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(crate::messages::without_nul(&file.target))
        .bind(crate::messages::without_nul(&file.name))
        .bind(&file.mime)
        .bind(data)
        .bind(error)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        crate::require_changed(&done)
    }

    /// The files of a turn's answer, by what the answer named.
    pub async fn turn_files(self, tenant: TenantId, turn: TurnId) -> Result<Vec<TurnFile>> {
        let rows = sqlx::query_as::<_, TurnFileRow>(
            "SELECT target, name, mime, data, error FROM turn_files WHERE tenant_id = $1 AND turn_id = $2",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_all(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(rows.into_iter().map(TurnFile::from).collect())
    }
}
