//! Agents: a tenant's configured Hermes profiles (model, provider, SOUL, toolsets).

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgConnection;

use hermes_core::{AgentId, ApiMode, TenantId};
use hermes_wire::admin::Agent as Shown;
pub use hermes_wire::admin::{AuxiliaryModels, ModelRef};

use crate::admin::audited::tenant_writes;
use crate::{Result, SecretBox, StoreError, views::Agents};

/// An agent as stored: the agent as the admin API shows it, with its provider secret, which
/// stays sealed until [`Agent::provider_key`]. It reads as its [`Shown`] agent.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Agent {
    #[serde(flatten)]
    pub shown: Shown,
    #[serde(skip)]
    pub provider_secret: Option<Vec<u8>>,
}

impl std::ops::Deref for Agent {
    type Target = Shown;

    fn deref(&self) -> &Shown {
        &self.shown
    }
}

impl std::ops::DerefMut for Agent {
    fn deref_mut(&mut self) -> &mut Shown {
        &mut self.shown
    }
}

/// What it takes to create an agent.
#[derive(Debug, Clone)]
pub struct NewAgent {
    pub name: String,
    pub model: String,
    pub provider_base_url: String,
    /// The provider API key in clear; sealed before it is stored.
    pub provider_key: Option<String>,
    pub soul: Option<String>,
    pub system_message: Option<String>,
    pub toolsets: Vec<String>,
    /// Hosts the provider key may be sent to (required with a key).
    pub provider_key_hosts: Vec<String>,
    pub fallbacks: Vec<ModelRef>,
    pub api_mode: Option<ApiMode>,
    pub auxiliary: Option<ModelRef>,
    pub context_window: Option<i32>,
}

fn secret_context(tenant: TenantId, agent: AgentId) -> String {
    format!("agent-provider-key:{tenant}:{agent}")
}

/// An agent's row ([`agent_columns!`]); its tenant is the one it was looked up in.
#[derive(sqlx::FromRow)]
struct AgentRow {
    #[sqlx(try_from = "uuid::Uuid")]
    id: AgentId,
    name: String,
    model: String,
    provider_base_url: String,
    provider_secret: Option<Vec<u8>>,
    soul: Option<String>,
    system_message: Option<String>,
    toolsets: Vec<String>,
    provider_key_hosts: Vec<String>,
    fallbacks: Value,
    api_mode: Option<String>,
    auxiliary: Option<Value>,
    context_window: Option<i32>,
    approval_mode: String,
    egress: bool,
    disabled_skills: Vec<String>,
    image_input_mode: String,
    vision_model: Option<Value>,
    workspace: String,
    sandbox: Value,
    model_settings: Value,
    client_limits: Value,
    provider_routing: Value,
    auxiliary_models: Value,
    created_at: DateTime<Utc>,
}

/// Side tasks' models as stored, read by any release: a task or a model this one cannot read
/// (a newer release's) is left out, so that task falls back to the auxiliary model.
fn stored_auxiliary_models(value: Value) -> AuxiliaryModels {
    let Value::Object(tasks) = value else { return AuxiliaryModels::new() };
    // A model whose API this release does not know keeps its URL and name: the API is then
    // resolved from the provider, so the task never moves to another provider.
    let model = |mut m: Value| {
        serde_json::from_value::<ModelRef>(m.clone()).ok().or_else(|| {
            m.as_object_mut()?.remove("api_mode");
            serde_json::from_value(m).ok()
        })
    };
    let chain = |c: Value| match c {
        Value::Array(models) => models.into_iter().filter_map(model).collect(),
        _ => Vec::new(),
    };
    let read = |(task, models): (String, Value)| Some((task.parse().ok()?, chain(models)));
    tasks.into_iter().filter_map(read).filter(|(_, chain): &(_, Vec<ModelRef>)| !chain.is_empty()).collect()
}

/// A stored JSON model setting read back (`Corrupt` when it no longer parses).
fn model_setting(value: Option<Value>) -> Result<Option<ModelRef>> {
    value.map(serde_json::from_value).transpose().map_err(|e| StoreError::Corrupt(e.to_string()))
}

impl AgentRow {
    /// The agent of `tenant` this row holds.
    fn into_agent(self, tenant: TenantId) -> Result<Agent> {
        let shown = Shown {
            id: self.id,
            tenant_id: tenant,
            name: self.name,
            model: self.model,
            provider_base_url: self.provider_base_url,
            has_provider_key: self.provider_secret.is_some(),
            soul: self.soul,
            system_message: self.system_message,
            provider_key_hosts: self.provider_key_hosts,
            fallbacks: serde_json::from_value(self.fallbacks).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            toolsets: self.toolsets,
            api_mode: self.api_mode.as_deref().map(crate::rows::vocab).transpose()?,
            auxiliary: model_setting(self.auxiliary)?,
            context_window: self.context_window,
            approval_mode: crate::rows::vocab(&self.approval_mode)?,
            egress: self.egress,
            disabled_skills: self.disabled_skills,
            image_input_mode: crate::rows::vocab(&self.image_input_mode)?,
            vision_model: model_setting(self.vision_model)?,
            workspace: crate::rows::vocab(&self.workspace)?,
            sandbox: serde_json::from_value(self.sandbox).map_err(|e| StoreError::Corrupt(e.to_string()))?,
            // Read leniently: a newer release may have stored fields this one does not know.
            model_settings: hermes_core::Stored::from_stored(self.model_settings),
            client_limits: hermes_core::Stored::from_stored(self.client_limits),
            provider_routing: hermes_core::Stored::from_stored(self.provider_routing),
            auxiliary_models: stored_auxiliary_models(self.auxiliary_models),
            created_at: self.created_at,
        };
        Ok(Agent { shown, provider_secret: self.provider_secret })
    }
}

impl Agent {
    /// The provider API key in clear, if the agent has one.
    pub fn provider_key(&self, secrets: Option<&SecretBox>) -> Result<Option<String>> {
        let Some(sealed) = &self.provider_secret else {
            return Ok(None);
        };
        let secrets = secrets.ok_or_else(|| {
            StoreError::Secret("agent has a provider key but secrets.master_key is not configured".into())
        })?;
        let plain = secrets.open(&secret_context(self.tenant_id, self.id), sealed)?;
        String::from_utf8(plain).map(Some).map_err(|_| StoreError::Corrupt("provider key is not UTF-8".into()))
    }
}

macro_rules! agent_columns {
    () => {
        "id, name, model, provider_base_url, provider_secret, soul, system_message, toolsets, provider_key_hosts, fallbacks, api_mode, auxiliary, context_window, approval_mode, egress, disabled_skills, image_input_mode, vision_model, workspace, sandbox, model_settings, client_limits, provider_routing, auxiliary_models, created_at"
    };
}

impl Agents<'_> {
    /// The tenant's agent called `name` (what clients send as `model`).
    pub async fn agent_by_name(self, tenant: TenantId, name: &str) -> Result<Agent> {
        let sql = concat!("SELECT ", agent_columns!(), " FROM agents WHERE tenant_id = $1 AND name = $2");
        sqlx::query_as::<_, AgentRow>(sql)
            .bind(tenant.as_uuid())
            .bind(name)
            .fetch_optional(&mut *self.as_tenant(tenant).await?)
            .await?
            .ok_or(StoreError::NotFound)?
            .into_agent(tenant)
    }

    /// The tenant's agent `id`.
    pub async fn agent(self, tenant: TenantId, id: AgentId) -> Result<Agent> {
        agent_on(&mut *self.as_tenant(tenant).await?, tenant, id).await
    }

    /// All of the tenant's agents, by name.
    pub async fn list_agents(self, tenant: TenantId) -> Result<Vec<Agent>> {
        let sql = concat!("SELECT ", agent_columns!(), " FROM agents WHERE tenant_id = $1 ORDER BY name");
        let rows = sqlx::query_as::<_, AgentRow>(sql)
            .bind(tenant.as_uuid())
            .fetch_all(&mut *self.as_tenant(tenant).await?)
            .await?;
        rows.into_iter().map(|r| r.into_agent(tenant)).collect()
    }
}

/// Changes to an agent's settings (`None`: unchanged; an empty SOUL or system message clears
/// it). New sessions see them; a running session keeps the prompt it started with.
#[derive(Debug, Clone, Default)]
pub struct AgentChanges {
    pub model: Option<String>,
    pub soul: Option<String>,
    pub system_message: Option<String>,
    pub toolsets: Option<Vec<String>>,
    pub fallbacks: Option<Vec<ModelRef>>,
}

/// [`Agents::agent`](crate::views::Agents::agent) on a connection already set to `tenant`.
pub(crate) async fn agent_on(conn: &mut PgConnection, tenant: TenantId, id: AgentId) -> Result<Agent> {
    let sql = concat!("SELECT ", agent_columns!(), " FROM agents WHERE tenant_id = $1 AND id = $2");
    sqlx::query_as::<_, AgentRow>(sql)
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound)?
        .into_agent(tenant)
}

tenant_writes! {
    in Agents;
    /// Creates an agent in `tenant`; the provider key is sealed with `secrets`.
    pub async fn create_agent(new: NewAgent, secrets: Option<&SecretBox>) -> Result<Agent> = create_agent_on;

    /// Applies `changes` to the agent; the agent as it now is.
    pub async fn update_agent(id: AgentId, changes: &AgentChanges) -> Result<Agent> = update_agent_on;

    /// Sets how the agent's model is shown images (`None`: unchanged) and its vision model
    /// (`None`: unchanged; `Some(None)`: none).
    pub async fn set_vision(
        agent: AgentId,
        mode: Option<hermes_core::ImageInputMode>,
        model: Option<Option<&ModelRef>>,
    ) -> Result<()>
        = set_vision_on;

    /// Sets where OpenRouter may send the agent's calls and its side tasks' models (`None`:
    /// unchanged, never rewritten from what this release read); turns claimed after it use them.
    pub async fn set_model_routing(
        agent: AgentId,
        routing: Option<&hermes_core::ProviderRouting>,
        auxiliary_models: Option<&AuxiliaryModels>,
    ) -> Result<()> = set_model_routing_on;
}

/// [`Agents::set_model_routing`](crate::views::Agents::set_model_routing) on a connection already set to `tenant`.
async fn set_model_routing_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    routing: Option<&hermes_core::ProviderRouting>,
    auxiliary_models: Option<&AuxiliaryModels>,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE agents SET provider_routing = COALESCE($3, provider_routing),
                auxiliary_models = COALESCE($4, auxiliary_models), updated_at = now()
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(routing.map(sqlx::types::Json))
    .bind(auxiliary_models.map(sqlx::types::Json))
    .execute(conn)
    .await?;
    crate::require_changed(&done)
}

/// [`Agents::create_agent`](crate::views::Agents::create_agent) on a connection already set to `tenant`.
async fn create_agent_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    new: NewAgent,
    secrets: Option<&SecretBox>,
) -> Result<Agent> {
    let id = AgentId::new();
    if new.provider_key.is_some() && new.provider_key_hosts.is_empty() {
        return Err(StoreError::Invalid("a provider key needs the hosts it may be sent to".into()));
    }
    let sealed = match &new.provider_key {
        Some(key) => {
            let secrets = SecretBox::required(secrets, "storing a provider key")?;
            Some(secrets.seal(&secret_context(tenant, id), key.as_bytes())?)
        }
        None => None,
    };
    let sql = concat!(
        "INSERT INTO agents (id, tenant_id, name, model, provider_base_url, provider_secret, soul, system_message,
                             toolsets, provider_key_hosts, fallbacks, api_mode, auxiliary, context_window)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ",
        agent_columns!()
    );
    let row = sqlx::query_as::<_, AgentRow>(sql)
        .bind(id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(&new.name)
        .bind(&new.model)
        .bind(&new.provider_base_url)
        .bind(sealed)
        .bind(&new.soul)
        .bind(&new.system_message)
        .bind(&new.toolsets)
        .bind(&new.provider_key_hosts)
        .bind(serde_json::to_value(&new.fallbacks).map_err(|e| StoreError::Invalid(e.to_string()))?)
        .bind(new.api_mode.map(ApiMode::as_str))
        .bind(
            new.auxiliary
                .as_ref()
                .map(serde_json::to_value)
                .transpose()
                .map_err(|e| StoreError::Invalid(e.to_string()))?,
        )
        .bind(new.context_window)
        .fetch_one(conn)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(db) if db.constraint().is_some_and(|c| c.contains("context_window")) => {
                StoreError::Invalid("context_window must be a positive number of tokens".into())
            }
            sqlx::Error::Database(db) if db.is_check_violation() => StoreError::Invalid(format!(
                "agent name {:?} must start with a letter or digit and use letters, digits, '.', '_', ':', '/' or '-'",
                new.name
            )),
            _ => StoreError::conflict_on_unique(e, &format!("agent {:?}", new.name)),
        })?;
    row.into_agent(tenant)
}

/// [`Agents::update_agent`](crate::views::Agents::update_agent) on a connection already set to `tenant`.
async fn update_agent_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    id: AgentId,
    changes: &AgentChanges,
) -> Result<Agent> {
    let fallbacks = changes
        .fallbacks
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let sql = concat!(
        "UPDATE agents SET model = COALESCE($3, model),
                soul = CASE WHEN $4::text IS NULL THEN soul ELSE NULLIF($4, '') END,
                system_message = CASE WHEN $5::text IS NULL THEN system_message ELSE NULLIF($5, '') END,
                toolsets = COALESCE($6, toolsets), fallbacks = COALESCE($7, fallbacks), updated_at = now()
         WHERE tenant_id = $1 AND id = $2 RETURNING ",
        agent_columns!()
    );
    sqlx::query_as::<_, AgentRow>(sql)
        .bind(tenant.as_uuid())
        .bind(id.as_uuid())
        .bind(&changes.model)
        .bind(&changes.soul)
        .bind(&changes.system_message)
        .bind(&changes.toolsets)
        .bind(fallbacks)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::NotFound)?
        .into_agent(tenant)
}

/// [`Agents::set_vision`](crate::views::Agents::set_vision) on a connection already set to `tenant`.
async fn set_vision_on(
    conn: &mut PgConnection,
    tenant: TenantId,
    agent: AgentId,
    mode: Option<hermes_core::ImageInputMode>,
    model: Option<Option<&ModelRef>>,
) -> Result<()> {
    let value = match model {
        Some(Some(m)) => Some(serde_json::to_value(m).map_err(|e| StoreError::Invalid(e.to_string()))?),
        _ => None,
    };
    let done = sqlx::query(
        "UPDATE agents SET image_input_mode = COALESCE($3, image_input_mode),
                vision_model = CASE WHEN $4 THEN $5 ELSE vision_model END, updated_at = now()
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_uuid())
    .bind(agent.as_uuid())
    .bind(mode.map(|m| m.as_str()))
    .bind(model.is_some())
    .bind(value)
    .execute(conn)
    .await?;
    crate::require_changed(&done)
}
