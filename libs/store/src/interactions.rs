//! Interactions: the questions a parked turn waits on (dangerous-command approvals,
//! clarifying questions), their answers, and the command patterns the user allowed.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;
use sqlx::types::Json;

use hermes_core::outbox::Destination;
use hermes_core::{
    AgentId, ApprovalChoice, ApprovalMode, InteractionAnswer, InteractionId, InteractionKind, InteractionStatus,
    PendingInteraction, SessionId, TenantId, TurnId,
};

use crate::admin::audited::tenant_writes;
use crate::rows::vocab;
use crate::turns::outbox_rows::queue_question;
use crate::{Result, StoreError, views::Turns};

/// The call a turn parks on.
#[derive(Debug, Clone)]
pub struct Park<'a> {
    pub agent: AgentId,
    pub call_id: &'a str,
    pub kind: InteractionKind,
    pub prompt: &'a Value,
    /// How long the user has to answer.
    pub timeout: Duration,
}

/// An answered interaction: the turn to resume.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered {
    pub turn_id: TurnId,
    pub session_id: SessionId,
    pub agent_id: AgentId,
}

/// What parking a turn wrote: when the question expires, and where the turn's chat is.
#[derive(sqlx::FromRow)]
struct Parked {
    expires_at: DateTime<Utc>,
    reply_to: Option<Json<Destination>>,
}

/// The latest resolved interaction of a turn (`answer` is `NULL` when it expired).
#[derive(sqlx::FromRow)]
struct Resolution {
    call_id: String,
    answer: Option<Value>,
}

/// An interaction being answered, with its turn's status, locked.
#[derive(sqlx::FromRow)]
struct Answering {
    #[sqlx(try_from = "crate::rows::Id")]
    turn_id: TurnId,
    #[sqlx(try_from = "crate::rows::Id")]
    session_id: SessionId,
    #[sqlx(try_from = "crate::rows::Id")]
    agent_id: AgentId,
    #[sqlx(try_from = "String")]
    kind: InteractionKind,
    prompt: Value,
    #[sqlx(try_from = "String")]
    status: InteractionStatus,
    /// Read with `rows::vocab` (a bad name is `Corrupt`).
    turn_status: String,
}

/// Remembers command patterns as allowed for the agent (`session` None) or one session.
async fn insert_grants(
    db: impl sqlx::PgExecutor<'_>,
    tenant: TenantId,
    agent: uuid::Uuid,
    session: Option<uuid::Uuid>,
    keys: &[String],
) -> Result<()> {
    sqlx::query(
        "INSERT INTO approval_grants (tenant_id, agent_id, session_id, pattern_key)
         SELECT $1, $2, $3, unnest($4::text[]) ON CONFLICT DO NOTHING",
    )
    .bind(tenant.as_uuid())
    .bind(agent)
    .bind(session)
    .bind(keys)
    .execute(db)
    .await?;
    Ok(())
}

impl Turns<'_> {
    /// Parks `owner`'s running turn on a new interaction, if `fence` still owns the session;
    /// the turn leaves its lease and waits.
    pub async fn park_turn(
        self,
        tenant: TenantId,
        session: SessionId,
        turn: TurnId,
        owner: &str,
        fence: i64,
        park: &Park<'_>,
    ) -> Result<PendingInteraction> {
        let id = InteractionId::new();
        // The question's outbox row commits with the park, or neither does.
        let mut tx = self.tenant_tx(tenant).await?;
        let parked = sqlx::query_as::<_, Parked>(
            "WITH s AS (
                SELECT 1 FROM sessions WHERE tenant_id = $1 AND id = $2 AND fence = $5
             ), t AS (
                UPDATE turns SET status = 'waiting', lease_owner = NULL, lease_expires_at = NULL
                WHERE tenant_id = $1 AND id = $3 AND status = 'running' AND lease_owner = $4
                  AND EXISTS (SELECT 1 FROM s)
                RETURNING id, reply_to
             )
             INSERT INTO interactions (id, tenant_id, turn_id, session_id, agent_id, call_id, kind, prompt, expires_at)
             SELECT $6, $1, $3, $2, $7, $8, $9, $10, now() + make_interval(secs => $11) FROM t
             RETURNING expires_at, (SELECT reply_to FROM t) AS reply_to",
        )
        .bind(tenant.as_uuid())
        .bind(session.as_uuid())
        .bind(turn.as_uuid())
        .bind(owner)
        .bind(fence)
        .bind(id.as_uuid())
        .bind(park.agent.as_uuid())
        .bind(park.call_id)
        .bind(park.kind.as_str())
        .bind(crate::messages::storable_json(park.prompt)?)
        .bind(park.timeout.as_secs_f64())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::Fenced)?;
        let asked =
            PendingInteraction { id, kind: park.kind, prompt: park.prompt.clone(), expires_at: parked.expires_at };
        if let Some(reply_to) = parked.reply_to {
            queue_question(&mut tx, tenant, turn, &reply_to, &asked).await?;
        }
        tx.commit().await?;
        Ok(asked)
    }

    /// The tenant's interaction `id` while it waits for an answer, with the agent it belongs
    /// to; `NotFound` otherwise.
    pub async fn pending_interaction(
        self,
        tenant: TenantId,
        id: InteractionId,
    ) -> Result<(PendingInteraction, AgentId)> {
        let (kind, prompt, expires_at, agent): (String, Value, DateTime<Utc>, uuid::Uuid) = sqlx::query_as(
            "SELECT kind, prompt, expires_at, agent_id FROM interactions
             WHERE tenant_id = $1 AND id = $2 AND status = 'pending'",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?
        .ok_or(StoreError::NotFound)?;
        Ok((PendingInteraction { id, kind: vocab(&kind)?, prompt, expires_at }, AgentId::from_uuid(agent)))
    }

    /// The question a session's waiting turn asks, if one does (what a chat's `/approve` or
    /// plain reply answers).
    pub async fn session_pending_interaction(
        self,
        tenant: TenantId,
        session: SessionId,
    ) -> Result<Option<PendingInteraction>> {
        self.latest_pending(tenant, None, Some(session.as_uuid())).await
    }

    /// The interaction a waiting turn waits on.
    pub async fn turn_pending_interaction(self, tenant: TenantId, turn: TurnId) -> Result<Option<PendingInteraction>> {
        self.latest_pending(tenant, Some(turn.as_uuid()), None).await
    }

    /// The newest pending interaction of a turn, or of a session.
    async fn latest_pending(
        self,
        tenant: TenantId,
        turn: Option<uuid::Uuid>,
        session: Option<uuid::Uuid>,
    ) -> Result<Option<PendingInteraction>> {
        let row: Option<(uuid::Uuid, String, Value, DateTime<Utc>)> = sqlx::query_as(
            "SELECT id, kind, prompt, expires_at FROM interactions
             WHERE tenant_id = $1 AND ($2::uuid IS NULL OR turn_id = $2) AND ($3::uuid IS NULL OR session_id = $3)
               AND status = 'pending'
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(tenant.as_uuid())
        .bind(turn)
        .bind(session)
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await?;
        row.map(|(id, kind, prompt, expires_at)| {
            Ok(PendingInteraction { id: InteractionId::from_uuid(id), kind: vocab(&kind)?, prompt, expires_at })
        })
        .transpose()
    }

    /// The latest answer (or expiry) of the turn's interactions: the call it belongs to runs
    /// again with it when the turn resumes.
    /// An answer that cannot be known counts as expired (an approval is then denied).
    pub async fn turn_resolution(self, tenant: TenantId, turn: TurnId) -> Result<Option<(String, InteractionAnswer)>> {
        turn_resolution_on(&mut *self.as_tenant(tenant).await?, tenant, turn).await
    }

    /// Command patterns allowed for the agent, and for this session.
    pub async fn approval_grants(
        self,
        tenant: TenantId,
        agent: AgentId,
        session: SessionId,
    ) -> Result<BTreeSet<String>> {
        approval_grants_on(&mut *self.as_tenant(tenant).await?, tenant, agent, session).await
    }

    /// Remembers command patterns as allowed for the rest of `session`.
    pub async fn grant_session_patterns(
        self,
        tenant: TenantId,
        agent: AgentId,
        session: SessionId,
        keys: &[String],
    ) -> Result<()> {
        insert_grants(&mut *self.as_tenant(tenant).await?, tenant, agent.as_uuid(), Some(session.as_uuid()), keys).await
    }
}

/// [`Turns::turn_resolution`](crate::views::Turns::turn_resolution) on a connection already set to `tenant`.
pub(crate) async fn turn_resolution_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    turn: TurnId,
) -> Result<Option<(String, InteractionAnswer)>> {
    let row = sqlx::query_as::<_, Resolution>(
        "SELECT call_id, answer FROM interactions
         WHERE tenant_id = $1 AND turn_id = $2 AND status <> 'pending'
         ORDER BY created_at DESC LIMIT 1",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        let answer = match row.answer {
            Some(answer) => serde_json::from_value(answer).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            None => InteractionAnswer::Expired { expired: true },
        };
        Ok((row.call_id, answer))
    })
    .transpose()
}

/// [`Turns::approval_grants`](crate::views::Turns::approval_grants) on a connection already set to `tenant`.
pub(crate) async fn approval_grants_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    session: SessionId,
) -> Result<BTreeSet<String>> {
    let keys: Vec<String> = sqlx::query_scalar(
        "SELECT pattern_key FROM approval_grants
         WHERE tenant_id = $1 AND agent_id = $2 AND (session_id IS NULL OR session_id = $3)",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(session.as_uuid())
    .fetch_all(conn)
    .await?;
    Ok(keys.into_iter().collect())
}

tenant_writes! {
    in Turns;
    /// Answers the tenant's pending interaction `id` and queues its turn again (its events to
    /// `hub`, the pod that will wait for them). An approval answered `session` or `always`
    /// remembers its command patterns for the session or the agent. `Conflict` when it was
    /// answered, expired or its turn stopped meanwhile.
    pub async fn answer_interaction(id: InteractionId, answer: &InteractionAnswer, hub: Option<&str>) -> Result<Answered>
        = answer_interaction_on in transaction;

    /// Lets the agent's sandbox reach the public internet, or not.
    pub async fn set_egress(agent: AgentId, enabled: bool) -> Result<()> = set_egress_on;

    /// Sets how the agent's dangerous commands are approved.
    pub async fn set_approval_mode(agent: AgentId, mode: ApprovalMode) -> Result<()> = set_approval_mode_on;

    /// Sets whose sandbox the agent's tools use; turns claimed after it use the new one.
    pub async fn set_workspace_scope(agent: AgentId, scope: hermes_core::WorkspaceScope) -> Result<()>
        = set_workspace_scope_on;

    /// Sets the agent's sandbox image and limits; its sandboxes are remade with them when next
    /// opened.
    pub async fn set_sandbox_choice(agent: AgentId, choice: &hermes_core::SandboxChoice) -> Result<()>
        = set_sandbox_choice_on;

    /// Sets the agent's model settings and what API callers may ask; turns claimed after it
    /// use them.
    pub async fn set_model_settings(
        agent: AgentId,
        settings: &hermes_core::ModelSettings,
        limits: &hermes_core::ClientLimits,
    ) -> Result<()> = set_model_settings_on;
}

/// [`Turns::answer_interaction`](crate::views::Turns::answer_interaction) on a connection already set to `tenant`.
async fn answer_interaction_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    id: InteractionId,
    answer: &InteractionAnswer,
    hub: Option<&str>,
) -> Result<Answered> {
    let row = sqlx::query(
        "SELECT i.turn_id, i.session_id, i.agent_id, i.kind, i.prompt, i.status, t.status::text AS turn_status
         FROM interactions i JOIN turns t ON t.tenant_id = i.tenant_id AND t.id = i.turn_id
         WHERE i.tenant_id = $1 AND i.id = $2 FOR UPDATE OF i, t",
    )
    .bind(tenant.as_uuid())
    .bind(id.as_uuid())
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(StoreError::NotFound)?;
    // A kind or status outside its vocabulary is `Corrupt`.
    let row = crate::rows::read::<Answering>(&row)?;
    let (status, turn_status) = (row.status, crate::rows::vocab::<crate::TurnStatus>(&row.turn_status)?);
    if status != InteractionStatus::Pending || turn_status != crate::TurnStatus::Waiting {
        return Err(StoreError::Conflict(format!("an answer to this {status} question")));
    }
    let (turn, session, agent) = (row.turn_id, row.session_id, row.agent_id);
    sqlx::query("UPDATE interactions SET status = 'answered', answer = $3, answered_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(crate::messages::storable_json(answer)?)
        .execute(&mut *conn)
        .await?;
    let scope = match answer {
        InteractionAnswer::Approval { choice: ApprovalChoice::Session } => Some(Some(session.as_uuid())),
        InteractionAnswer::Approval { choice: ApprovalChoice::Always } => Some(None),
        _ => None,
    };
    if let (true, Some(scope)) = (row.kind == InteractionKind::Approval, scope) {
        let keys: Vec<String> = row.prompt["pattern_keys"]
            .as_array()
            .map(|keys| keys.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        insert_grants(&mut *conn, tenant, agent.as_uuid(), scope, &keys).await?;
    }
    sqlx::query(
        "UPDATE turns SET status = 'queued', notify_hub = COALESCE($3, notify_hub)
         WHERE tenant_id = $1 AND id = $2 AND status = 'waiting'",
    )
    .bind(tenant.as_uuid())
    .bind(turn.as_uuid())
    .bind(hub)
    .execute(&mut *conn)
    .await?;
    Ok(Answered { turn_id: turn, session_id: session, agent_id: agent })
}

/// [`Turns::set_egress`](crate::views::Turns::set_egress) on a connection already set to `tenant`.
async fn set_egress_on(conn: &mut PgConnection, tenant: TenantId, agent: AgentId, enabled: bool) -> Result<()> {
    let done = sqlx::query("UPDATE agents SET egress = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(enabled)
        .execute(conn)
        .await?;
    crate::require_changed(&done)
}

/// [`Turns::set_sandbox_choice`](crate::views::Turns::set_sandbox_choice) on a connection already set to `tenant`.
async fn set_sandbox_choice_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    choice: &hermes_core::SandboxChoice,
) -> Result<()> {
    let done = sqlx::query("UPDATE agents SET sandbox = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(sqlx::types::Json(choice))
        .execute(conn)
        .await?;
    crate::require_changed(&done)
}

/// [`Turns::set_model_settings`](crate::views::Turns::set_model_settings) on a connection already set to `tenant`.
async fn set_model_settings_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    settings: &hermes_core::ModelSettings,
    limits: &hermes_core::ClientLimits,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE agents SET model_settings = $3, client_limits = $4, updated_at = now()
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(sqlx::types::Json(settings))
    .bind(sqlx::types::Json(limits))
    .execute(conn)
    .await?;
    crate::require_changed(&done)
}

/// [`Turns::set_workspace_scope`](crate::views::Turns::set_workspace_scope) on a connection already set to `tenant`.
async fn set_workspace_scope_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    scope: hermes_core::WorkspaceScope,
) -> Result<()> {
    let done = sqlx::query("UPDATE agents SET workspace = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(scope.as_str())
        .execute(conn)
        .await?;
    crate::require_changed(&done)
}

/// [`Turns::set_approval_mode`](crate::views::Turns::set_approval_mode) on a connection already set to `tenant`.
async fn set_approval_mode_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    mode: ApprovalMode,
) -> Result<()> {
    let done = sqlx::query("UPDATE agents SET approval_mode = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_uuid())
        .bind(agent.as_uuid())
        .bind(mode.as_str())
        .execute(conn)
        .await?;
    crate::require_changed(&done)
}
