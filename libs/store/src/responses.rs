//! Stored responses of the Responses API (migration 0015). A response is a turn: its status,
//! outcome and messages are the turn's; the `responses` row adds what the request asked for
//! and makes it readable and continuable (`previous_response_id`, named conversations).

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use hermes_core::{AgentId, SessionId, TenantId, TurnId, TurnOutcome};

use crate::{Result, StoreError, views::Turns};
use hermes_core::TurnStatus;

/// What a Responses request records with its turn (only when the client stores it).
#[derive(Debug, Clone)]
pub struct NewResponse {
    /// The model name the client sent (echoed back in the response object).
    pub model: String,
    pub previous: Option<TurnId>,
    /// The conversation this response becomes the latest of.
    pub conversation: Option<String>,
    /// `auto` or `disabled`, as the client asked.
    pub truncation: String,
}

/// A stored response, read back.
#[derive(Debug, Clone)]
pub struct StoredResponse {
    pub turn_id: TurnId,
    pub session_id: SessionId,
    pub agent_id: AgentId,
    pub status: TurnStatus,
    pub outcome: Option<TurnOutcome>,
    pub instructions: Option<String>,
    pub model: String,
    pub previous: Option<TurnId>,
    pub conversation: Option<String>,
    pub truncation: String,
    pub created_at: DateTime<Utc>,
}

/// Where a response that continues `previous` runs.
#[derive(Debug, Clone)]
pub struct ResponseChain {
    pub agent_id: AgentId,
    /// The session to continue (or, with `fork_up_to`, to fork).
    pub session_id: SessionId,
    pub instructions: Option<String>,
    /// Set when later turns followed `previous` in its session: continuing it branches, so
    /// the caller forks the session up to this message first.
    pub fork_up_to: Option<i32>,
}

/// What [`TurnColumns`] reads, from a turn `t` joined with its session `s` (a macro, so
/// statements stay static strings).
macro_rules! turn_columns {
    () => {
        "t.session_id, s.agent_id, t.status::text AS status, t.outcome"
    };
}

/// The `session_id`, `agent_id`, `status` and `outcome` columns of a turn row.
#[derive(sqlx::FromRow)]
struct TurnColumns {
    #[sqlx(try_from = "uuid::Uuid")]
    session_id: SessionId,
    #[sqlx(try_from = "uuid::Uuid")]
    agent_id: AgentId,
    status: String,
    outcome: Option<Value>,
}

impl TurnColumns {
    /// The status and outcome decoded (`Corrupt` when the stored text or JSON is not one).
    fn read(self) -> Result<(SessionId, AgentId, TurnStatus, Option<TurnOutcome>)> {
        Ok((
            self.session_id,
            self.agent_id,
            crate::rows::vocab::<TurnStatus>(&self.status)?,
            self.outcome.map(serde_json::from_value).transpose().map_err(|e| StoreError::Corrupt(e.to_string()))?,
        ))
    }
}

/// A stored response's row: its turn's columns and what the request asked for.
#[derive(sqlx::FromRow)]
struct ResponseRow {
    #[sqlx(flatten)]
    turn: TurnColumns,
    instructions: Option<String>,
    model: String,
    previous_turn_id: Option<Uuid>,
    conversation: Option<String>,
    truncation: String,
    created_at: DateTime<Utc>,
}

impl ResponseRow {
    /// The response of `turn` (the row does not repeat the id it was looked up by).
    fn into_response(self, turn: TurnId) -> Result<StoredResponse> {
        let (session_id, agent_id, status, outcome) = self.turn.read()?;
        Ok(StoredResponse {
            turn_id: turn,
            session_id,
            agent_id,
            status,
            outcome,
            instructions: self.instructions,
            model: self.model,
            previous: self.previous_turn_id.map(TurnId::from_uuid),
            conversation: self.conversation,
            truncation: self.truncation,
            created_at: self.created_at,
        })
    }
}

/// Where the chain of a previous response stands: its own session, the latest continuation,
/// and whether later turns followed it.
#[derive(sqlx::FromRow)]
struct ChainRow {
    session_id: Uuid,
    #[sqlx(try_from = "uuid::Uuid")]
    agent_id: AgentId,
    instructions: Option<String>,
    latest: Option<Uuid>,
    branched: bool,
    last_seq: Option<i32>,
}

impl From<ChainRow> for ResponseChain {
    fn from(row: ChainRow) -> Self {
        // Branching forks the response's own session; otherwise it goes on where it is now.
        let (session, fork_up_to) = match (row.branched, row.last_seq) {
            (true, Some(seq)) => (row.session_id, Some(seq)),
            _ => (row.latest.unwrap_or(row.session_id), None),
        };
        ResponseChain {
            agent_id: row.agent_id,
            session_id: SessionId::from_uuid(session),
            instructions: row.instructions,
            fork_up_to,
        }
    }
}

/// A turn's overview row.
#[derive(sqlx::FromRow)]
struct OverviewRow {
    #[sqlx(flatten)]
    turn: TurnColumns,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<OverviewRow> for TurnOverview {
    type Error = StoreError;

    fn try_from(row: OverviewRow) -> Result<Self> {
        let (session_id, agent_id, status, outcome) = row.turn.read()?;
        Ok(TurnOverview {
            session_id,
            agent_id,
            status,
            outcome,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

/// Records a response in the transaction that enqueues its turn.
pub(crate) async fn record_in(
    tx: &mut sqlx::PgConnection,
    tenant: TenantId,
    turn: TurnId,
    response: &NewResponse,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO responses (tenant_id, turn_id, model, previous_turn_id, conversation, truncation)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .bind(crate::messages::without_nul(&response.model))
    .bind(response.previous.map(|p| p.as_uuid()))
    .bind(response.conversation.as_deref().map(crate::messages::without_nul))
    .bind(&response.truncation)
    .execute(&mut *tx)
    .await?;
    if let Some(name) = &response.conversation {
        sqlx::query(
            "INSERT INTO response_conversations (tenant_id, name, turn_id) VALUES ($1, $2, $3)
             ON CONFLICT (tenant_id, name) DO UPDATE SET turn_id = EXCLUDED.turn_id, updated_at = now()",
        )
        .bind(tenant.as_uuid())
        .bind(crate::messages::without_nul(name))
        .bind(turn.as_uuid())
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
}

impl Turns<'_> {
    /// A stored response of this tenant (`NotFound` for unknown, unstored or deleted ones).
    pub async fn stored_response(self, tenant: TenantId, turn: TurnId) -> Result<StoredResponse> {
        let sql = concat!(
            "SELECT ",
            turn_columns!(),
            ", t.instructions, r.model, r.previous_turn_id, r.conversation, r.truncation, r.created_at
             FROM responses r
             JOIN turns t ON t.tenant_id = r.tenant_id AND t.id = r.turn_id
             JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
             WHERE r.tenant_id = $1 AND r.turn_id = $2"
        );
        self.row_of::<ResponseRow>(tenant, sql, turn.as_uuid()).await?.into_response(turn)
    }

    /// A turn of this tenant, with its agent.
    pub async fn turn_overview(self, tenant: TenantId, turn: TurnId) -> Result<TurnOverview> {
        let sql = concat!(
            "SELECT ",
            turn_columns!(),
            ", t.created_at, GREATEST(t.created_at, t.started_at, t.finished_at) AS updated_at
             FROM turns t JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
             WHERE t.tenant_id = $1 AND t.id = $2"
        );
        self.row_of::<OverviewRow>(tenant, sql, turn.as_uuid()).await?.try_into()
    }

    /// Forgets a stored response (its conversation turns stay in the session); `false` when
    /// there was none.
    pub async fn delete_response(self, tenant: TenantId, turn: TurnId) -> Result<bool> {
        self.delete_row_of(tenant, "DELETE FROM responses WHERE tenant_id = $1 AND turn_id = $2", turn.as_uuid()).await
    }

    /// The latest stored response of a named conversation.
    pub async fn conversation_head(self, tenant: TenantId, name: &str) -> Result<Option<TurnId>> {
        let row: Option<(Uuid,)> =
            sqlx::query_as("SELECT turn_id FROM response_conversations WHERE tenant_id = $1 AND name = $2")
                .bind(tenant.as_uuid())
                .bind(crate::messages::without_nul(name))
                .fetch_optional(&mut *self.as_tenant(tenant).await?)
                .await?;
        Ok(row.map(|(id,)| TurnId::from_uuid(id)))
    }

    /// How to continue the stored response `previous`: its session, carried instructions, and
    /// whether the conversation branches there.
    pub async fn response_chain(self, tenant: TenantId, previous: TurnId) -> Result<ResponseChain> {
        // Compaction may have moved the conversation on to continuation sessions: the
        // response continues in the latest, and it branches if any later turn exists in the
        // whole chain.
        let row = sqlx::query_as::<_, ChainRow>(
            "WITH RECURSIVE prev AS (
                SELECT t.id, t.session_id, t.created_at, t.instructions, s.agent_id
                FROM responses r
                JOIN turns t ON t.tenant_id = r.tenant_id AND t.id = r.turn_id
                JOIN sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
                WHERE r.tenant_id = $1 AND r.turn_id = $2
             ), chain AS (
                SELECT session_id AS id, 0 AS depth FROM prev
                UNION ALL
                SELECT c.id, chain.depth + 1 FROM chain
                JOIN sessions c ON c.tenant_id = $1 AND c.parent_session_id = chain.id AND c.lineage = 'compaction'
                WHERE chain.depth < 1000
             )
             SELECT prev.session_id, prev.agent_id, prev.instructions,
                    (SELECT id FROM chain ORDER BY depth DESC LIMIT 1) AS latest,
                    EXISTS (SELECT 1 FROM turns later WHERE later.tenant_id = $1
                              AND later.session_id IN (SELECT id FROM chain)
                              AND later.created_at > prev.created_at) AS branched,
                    (SELECT max(m.seq) FROM messages m WHERE m.tenant_id = $1
                       AND m.session_id = prev.session_id AND m.turn_id = prev.id) AS last_seq
             FROM prev",
        )
        .bind(tenant.as_uuid())
        .bind(previous.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok(row.into())
    }
}

/// A turn seen from outside (the Runs API's status object).
#[derive(Debug, Clone)]
pub struct TurnOverview {
    pub session_id: SessionId,
    pub agent_id: AgentId,
    pub status: TurnStatus,
    pub outcome: Option<TurnOutcome>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}
