//! Webhook triggers (migration 0031): a hook belongs to one agent; third parties POST events
//! to the gateway's `/hooks/{id}`, signed with the hook's secret, which is sealed at rest and
//! shown once (on creation and on rotation). Finding the hook a POST names and taking the
//! delivery in happen before any tenant is known: [`crate::system::webhooks`].

use hermes_core::{AgentId, JobId, SessionId, TenantId, TurnId, WebhookId};
use hermes_wire::v1::HookTrigger;

use crate::{NewTurn, Result, SecretBox, StoreError, views::Automation};

/// Longest prompt template a hook may have (its rendered prompt is cut at 64 KB besides).
pub const MAX_TEMPLATE_CHARS: usize = 8_000;

fn check_template(template: &str) -> Result<()> {
    let chars = template.chars().count();
    if chars > MAX_TEMPLATE_CHARS {
        return Err(StoreError::Invalid(format!(
            "the prompt template has {chars} characters; at most {MAX_TEMPLATE_CHARS} are allowed"
        )));
    }
    Ok(())
}

/// A hook to create.
#[derive(Debug, Clone)]
pub struct NewWebhook {
    pub agent_id: AgentId,
    pub name: String,
    pub events: Vec<String>,
    pub prompt: String,
    pub skills: Vec<String>,
    pub deliver: String,
    pub cron_job_id: Option<JobId>,
    pub rate_limit_per_minute: i32,
    /// The only toolsets of the agent's its turns may use (`None`: all a webhook's turn may).
    pub toolsets: Option<Vec<String>>,
}

/// Changes to a hook (`None`: unchanged; `cron_job_id: Some(None)` unlinks the job).
#[derive(Debug, Clone, Default)]
pub struct WebhookChanges {
    pub name: Option<String>,
    pub events: Option<Vec<String>>,
    pub prompt: Option<String>,
    pub skills: Option<Vec<String>>,
    pub deliver: Option<String>,
    pub cron_job_id: Option<Option<JobId>>,
    pub enabled: Option<bool>,
    pub rate_limit_per_minute: Option<i32>,
    /// Replaces the toolset list.
    pub toolsets: Option<Vec<String>>,
}

/// A stored hook: the trigger as the API shows it, with its tenant and its sealed secret
/// (never shown). It reads as its [`HookTrigger`].
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct Webhook {
    #[serde(skip)]
    #[sqlx(try_from = "crate::rows::Id")]
    pub tenant_id: TenantId,
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub shown: HookTrigger,
    #[serde(skip)]
    #[sqlx(rename = "secret")]
    sealed_secret: Vec<u8>,
}

impl std::ops::Deref for Webhook {
    type Target = HookTrigger;

    fn deref(&self) -> &HookTrigger {
        &self.shown
    }
}

/// The sealing context of the hook's secret (the same text as when it was a bare uuid).
fn context(id: WebhookId) -> String {
    format!("webhook:{id}")
}

impl Webhook {
    /// The signing secret in clear.
    pub fn secret(&self, secrets: Option<&SecretBox>) -> Result<Vec<u8>> {
        SecretBox::required(secrets, "a webhook's secret")?.open(&context(self.id), &self.sealed_secret)
    }
}

const NAME_TAKEN: &str = "this agent already has a webhook with that name";

impl Automation<'_> {
    /// Creates a hook; returns it with its secret (shown this once). `Conflict` on a name the
    /// agent uses already.
    pub async fn create_webhook(
        self,
        tenant: TenantId,
        new: &NewWebhook,
        secrets: Option<&SecretBox>,
    ) -> Result<(Webhook, String)> {
        check_template(&new.prompt)?;
        let id = WebhookId::new();
        let (_, secret) = crate::secrets::signing_secret()?;
        let sealed = SecretBox::required(secrets, "a webhook's secret")?.seal(&context(id), secret.as_bytes())?;
        let row = sqlx::query(
            "INSERT INTO webhooks (id, tenant_id, agent_id, name, secret, events, prompt, skills, deliver,
                                   cron_job_id, rate_limit_per_minute, toolsets)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *",
        )
        .bind(id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(new.agent_id.as_uuid())
        .bind(&new.name)
        .bind(sealed)
        .bind(&new.events)
        .bind(crate::messages::without_nul(&new.prompt))
        .bind(&new.skills)
        .bind(&new.deliver)
        .bind(new.cron_job_id.map(|j| j.as_uuid()))
        .bind(new.rate_limit_per_minute)
        .bind(new.toolsets.as_ref())
        .fetch_one(&mut *self.as_tenant(tenant).await?)
        .await
        .map_err(|e| StoreError::conflict_on_unique(e, NAME_TAKEN))?;
        Ok((crate::rows::read::<Webhook>(&row)?, secret))
    }

    /// The tenant's hooks, oldest first.
    pub async fn list_webhooks(self, tenant: TenantId) -> Result<Vec<Webhook>> {
        self.rows_of(tenant, "SELECT * FROM webhooks WHERE tenant_id = $1 ORDER BY created_at, id").await
    }

    /// One of the tenant's hooks.
    pub async fn webhook(self, tenant: TenantId, id: WebhookId) -> Result<Webhook> {
        self.row_of(tenant, "SELECT * FROM webhooks WHERE tenant_id = $1 AND id = $2", id.as_uuid()).await
    }

    pub async fn update_webhook(self, tenant: TenantId, id: WebhookId, changes: &WebhookChanges) -> Result<Webhook> {
        if let Some(prompt) = &changes.prompt {
            check_template(prompt)?;
        }
        let row = sqlx::query(
            "UPDATE webhooks SET name = COALESCE($3, name), events = COALESCE($4, events),
                    prompt = COALESCE($5, prompt), skills = COALESCE($6, skills), deliver = COALESCE($7, deliver),
                    cron_job_id = CASE WHEN $8 THEN $9 ELSE cron_job_id END, enabled = COALESCE($10, enabled),
                    rate_limit_per_minute = COALESCE($11, rate_limit_per_minute),
                    toolsets = COALESCE($12, toolsets), updated_at = now()
             WHERE tenant_id = $1 AND id = $2 RETURNING *",
        )
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(changes.name.as_deref())
        .bind(changes.events.as_ref())
        .bind(changes.prompt.as_deref().map(crate::messages::without_nul))
        .bind(changes.skills.as_ref())
        .bind(changes.deliver.as_deref())
        .bind(changes.cron_job_id.is_some())
        .bind(changes.cron_job_id.flatten().map(|j| j.as_uuid()))
        .bind(changes.enabled)
        .bind(changes.rate_limit_per_minute)
        .bind(changes.toolsets.as_ref())
        .fetch_optional(&mut *self.as_tenant(tenant).await?)
        .await
        .map_err(|e| StoreError::conflict_on_unique(e, NAME_TAKEN))?
        .ok_or(StoreError::NotFound)?;
        crate::rows::read::<Webhook>(&row)
    }

    /// Gives the hook a new secret (the old one stops working at once) and returns it.
    pub async fn rotate_webhook_secret(
        self,
        tenant: TenantId,
        id: WebhookId,
        secrets: Option<&SecretBox>,
    ) -> Result<String> {
        let (_, secret) = crate::secrets::signing_secret()?;
        let sealed = SecretBox::required(secrets, "a webhook's secret")?.seal(&context(id), secret.as_bytes())?;
        let done = sqlx::query("UPDATE webhooks SET secret = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .bind(sealed)
            .execute(&mut *self.as_tenant(tenant).await?)
            .await?;
        crate::require_changed(&done)?;
        Ok(secret)
    }

    /// Deletes a hook; `false` when there was none.
    pub async fn delete_webhook(self, tenant: TenantId, id: WebhookId) -> Result<bool> {
        self.delete_row_of(tenant, "DELETE FROM webhooks WHERE tenant_id = $1 AND id = $2", id.as_uuid()).await
    }
}

/// What a delivery starts.
pub enum WebhookStart {
    /// A turn of the hook's agent.
    Turn(Box<NewTurn>),
    /// A run of the cron job now, with `context` above its prompt.
    FireJob { job: JobId, context: String },
}

/// What a delivery started.
#[derive(Debug, Clone, Copy)]
pub enum Started {
    Turn { session: SessionId, turn: TurnId },
    Job(JobId),
}
