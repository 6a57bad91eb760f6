//! Files a chat answer hands over (migration 0026; see `hermes_core::media`).

use sqlx::Row;

use hermes_core::{TenantId, TurnId};

use crate::{Result, Store, StoreError};

/// A file named by an answer: its bytes, or why they could not be read.
#[derive(Debug, Clone)]
pub struct TurnFile {
    /// What the answer named (a workspace path, or a URL).
    pub target: String,
    pub name: String,
    pub mime: String,
    pub data: Result<Vec<u8>, String>,
}

impl Store {
    /// Records a file of a turn's answer (again: replaced). Another tenant's turn is `NotFound`
    /// (or refused by the foreign key): the key has no tenant, so the update checks it.
    pub async fn save_turn_file(&self, tenant: TenantId, turn: TurnId, file: &TurnFile) -> Result<()> {
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
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    /// The files of a turn's answer, by what the answer named.
    pub async fn turn_files(&self, tenant: TenantId, turn: TurnId) -> Result<Vec<TurnFile>> {
        let rows =
            sqlx::query("SELECT target, name, mime, data, error FROM turn_files WHERE tenant_id = $1 AND turn_id = $2")
                .bind(tenant.as_uuid())
                .bind(turn.as_uuid())
                .fetch_all(&mut *self.as_tenant(tenant).await?)
                .await?;
        rows.iter()
            .map(|r| {
                let data: Option<Vec<u8>> = r.try_get("data")?;
                let error: Option<String> = r.try_get("error")?;
                Ok(TurnFile {
                    target: r.try_get("target")?,
                    name: r.try_get("name")?,
                    mime: r.try_get("mime")?,
                    data: data.ok_or_else(|| error.unwrap_or_else(|| "the file is missing".into())),
                })
            })
            .collect()
    }
}
