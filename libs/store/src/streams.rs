//! Previews of an answer as it is written (`chat_streams`): one message per turn and chat,
//! edited until the outbox takes the final answer over.

use hermes_core::{TenantId, TurnId};

use crate::{Result, views::Chat};

impl Chat<'_> {
    /// Starts a preview of `turn`'s answer in `chat`; `false` if the answer was delivered already.
    pub async fn stream_begin(self, tenant: TenantId, turn: TurnId, chat: &str) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO chat_streams (tenant_id, turn_id, chat_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(crate::messages::without_nul(chat))
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Records the preview's message; `false` once the outbox took over (the preview must go).
    pub async fn stream_message(self, tenant: TenantId, turn: TurnId, message_id: &str) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE chat_streams SET message_id = $3 WHERE tenant_id = $1 AND turn_id = $2 AND NOT finalized",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .bind(message_id)
        .execute(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Whether the outbox took the answer over (the preview stops).
    pub async fn stream_finalized(self, tenant: TenantId, turn: TurnId) -> Result<bool> {
        let finalized: Option<bool> =
            sqlx::query_scalar("SELECT finalized FROM chat_streams WHERE tenant_id = $1 AND turn_id = $2")
                .bind(tenant.as_uuid())
                .bind(turn.as_uuid())
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        Ok(finalized.unwrap_or(true))
    }

    /// Takes a turn's preview over for the final answer: its chat and message, if it has one.
    pub async fn stream_finalize(self, tenant: TenantId, turn: TurnId) -> Result<Option<(String, String)>> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "UPDATE chat_streams SET finalized = true WHERE tenant_id = $1 AND turn_id = $2
             RETURNING chat_id, message_id",
        )
        .bind(tenant.as_uuid())
        .bind(turn.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        Ok(row.and_then(|(chat, message)| message.map(|m| (chat, m))))
    }
}
