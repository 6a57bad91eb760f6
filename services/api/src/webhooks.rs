//! `/v1/webhooks`: webhook triggers. A hook gives one agent a signed endpoint on the gateway
//! (`POST /hooks/{id}`) that turns a third party's event into a turn, or fires one of the
//! agent's cron jobs now. The secret is shown on creation and on rotation only. A key
//! restricted to one agent sees only that agent's hooks; another tenant's is a 404.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use hermes_core::outbox::DeliveryTarget;
use hermes_http::{ApiError, ApiJson, ErrorCode};
use hermes_store::webhooks::{NewWebhook, Webhook, WebhookChanges};
use hermes_store::{KeyAuth, StoreError};
use hermes_wire::Slice;
use hermes_wire::v1::{Deleted, Webhook as Shown};

use crate::agents::resolve_agent;
use crate::auth::Caller;
use crate::documented::{BadRequest, NoApiKey, NoSuchWebhook, WebhookPath};
use crate::errors::{Failure, Resource, deleted, path_id, resource, store_error};
use crate::state::AppState;
use crate::visible::{CallerObject, Visible};

/// This module's handlers' error: a store error is about a webhook.
type Result<T> = std::result::Result<T, Failure<resource::Webhook>>;

/// The caller's hook `id` (a key restricted to one agent sees only that agent's).
impl CallerObject for Webhook {
    type Path = WebhookPath;
    type Missing = Failure<resource::Webhook>;

    async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<Self> {
        let id: hermes_core::WebhookId = path_id::<resource::Webhook, _>(id)?;
        let hook = state.store.automation().webhook(auth.tenant_id, id).await?;
        match auth.agent_id {
            Some(agent) if agent != hook.agent_id => Err(resource::Webhook::not_found().into()),
            _ => Ok(hook),
        }
    }
}

/// The hook as shown: with where senders post (`url` when `gateway.public_url` is set).
fn shown(state: &AppState, hook: &Webhook, secret: Option<String>) -> Shown {
    let path = format!("/hooks/{}", hook.id);
    let url = state.config.gateway.public_url.as_ref().map(|base| format!("{}{path}", base.trim_end_matches('/')));
    Shown { object: "webhook".into(), hook: hook.shown.clone(), path, url, secret }
}

fn invalid(why: impl Into<String>) -> ApiError {
    ApiError::invalid_request(ErrorCode::InvalidValue, why.into())
}

/// `local`, or chat targets `platform[:chat[:thread]]`, comma-separated (a webhook has no
/// chat of origin).
fn check_deliver(deliver: &str) -> std::result::Result<(), ApiError> {
    let targets = DeliveryTarget::list(deliver).map_err(|e| invalid(e.to_string()))?;
    if targets.contains(&DeliveryTarget::Origin) {
        return Err(invalid(
            "a webhook has no chat of origin: deliver to local or telegram|slack|wecom[:chat[:thread]]",
        ));
    }
    Ok(())
}

fn check_prompt(prompt: &str) -> std::result::Result<(), ApiError> {
    if let Some(finding) = hermes_threats::scan_strict(prompt).first() {
        let why = format!("the prompt looks like an injection or exfiltration attempt ({})", finding.reason);
        return Err(ApiError::invalid_request(ErrorCode::PromptRefused, why));
    }
    Ok(())
}

fn check_rate(rate: i32) -> std::result::Result<(), ApiError> {
    if (1..=600).contains(&rate) { Ok(()) } else { Err(invalid("rate_limit_per_minute must be 1 to 600")) }
}

fn check_toolsets(toolsets: Option<&[String]>) -> std::result::Result<(), ApiError> {
    match toolsets.into_iter().flatten().find(|t| t.parse::<hermes_core::ToolsetName>().is_err()) {
        Some(unknown) => Err(invalid(format!("no toolset `{unknown}` (GET /v1/toolsets lists them)"))),
        None => Ok(()),
    }
}

/// The caller's cron job `reference` (id or name), which must be the hook's agent's.
async fn job_of(
    state: &AppState,
    auth: &KeyAuth,
    agent: hermes_core::AgentId,
    reference: &str,
) -> std::result::Result<hermes_core::JobId, ApiError> {
    let job = state.store.automation().find_job(auth.tenant_id, Some(agent), reference).await.map_err(|e| match e {
        // The job is a field of the hook: naming one that is not there is a bad request.
        StoreError::NotFound => invalid(format!("the hook's agent has no cron job `{reference}`")),
        other => store_error::<resource::Webhook>(other),
    })?;
    Ok(job.id)
}

#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks",
    responses((status = 200, description = "The tenant's webhooks (without secrets)", body = Slice<hermes_wire::v1::Webhook>), NoApiKey))]
pub(crate) async fn list(State(state): State<AppState>, Caller(auth): Caller) -> Result<Json<Slice<Shown>>> {
    let hooks = state.store.automation().list_webhooks(auth.tenant_id).await?;
    let data = hooks
        .iter()
        .filter(|h| auth.agent_id.is_none_or(|a| a == h.agent_id))
        .map(|h| shown(&state, h, None))
        .collect();
    Ok(Json(Slice::whole(data)))
}

/// A webhook to create.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateWebhook {
    /// Unique per agent, ignoring case.
    name: String,
    /// The agent (by name); the key's agent or the tenant's only agent when absent.
    model: Option<String>,
    /// Event types taken (`X-GitHub-Event`, `X-GitLab-Event`, the payload's `event_type` or
    /// `type`); others are answered 200 `ignored`. Empty: all.
    #[serde(default)]
    events: Vec<String>,
    /// What the agent is asked, with `{dotted.path}` placeholders filled from the payload
    /// (`{event_type}`, `{__raw__}`); empty: the event and its payload.
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    skills: Vec<String>,
    /// `local` (the default) or `platform[:chat[:thread]]`, comma-separated.
    deliver: Option<String>,
    /// Fire this cron job (id or name) with the event as context, instead of a turn.
    cron_job: Option<String>,
    /// Deliveries taken per minute (default 30).
    rate_limit_per_minute: Option<i32>,
    /// Only these of the agent's toolsets in its turns (a webhook's turn never has more than
    /// `web` and `vision` anyway).
    toolsets: Option<Vec<String>>,
}

#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = CreateWebhook,
    responses((status = 201, description = "The webhook with its secret (shown this once) and path", body = hermes_wire::v1::Webhook), BadRequest, (status = 409, description = "The agent has a webhook of that name", body = hermes_wire::ErrorBody)))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(auth): Caller,
    ApiJson(c): ApiJson<CreateWebhook>,
) -> Result<(StatusCode, Json<Shown>)> {
    let new = new_webhook(&state, &auth, c).await?;
    let (hook, secret) = state.store.automation().create_webhook(auth.tenant_id, &new, state.secrets.as_ref()).await?;
    Ok((StatusCode::CREATED, Json(shown(&state, &hook, Some(secret)))))
}

/// The webhook `c` asks for, checked.
async fn new_webhook(state: &AppState, auth: &KeyAuth, c: CreateWebhook) -> Result<NewWebhook> {
    let agent = resolve_agent(state, auth, c.model.as_deref()).await?;
    let name = c.name.trim().to_owned();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(invalid("give the webhook a name of 1 to 100 characters").into());
    }
    check_prompt(&c.prompt)?;
    let deliver = c.deliver.unwrap_or_else(|| "local".into());
    check_deliver(&deliver)?;
    let rate = c.rate_limit_per_minute.unwrap_or(30);
    check_rate(rate)?;
    check_toolsets(c.toolsets.as_deref())?;
    let cron_job_id = match &c.cron_job {
        Some(reference) => Some(job_of(state, auth, agent.id, reference).await?),
        None => None,
    };
    Ok(NewWebhook {
        agent_id: agent.id,
        name,
        events: c.events,
        prompt: c.prompt,
        skills: c.skills,
        deliver,
        cron_job_id,
        rate_limit_per_minute: rate,
        toolsets: c.toolsets,
    })
}

#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks", params(WebhookPath),
    responses((status = 200, description = "The webhook (without its secret)", body = hermes_wire::v1::Webhook), NoSuchWebhook))]
pub(crate) async fn get(Visible { state, found: hook, .. }: Visible<Webhook>) -> Result<Json<Shown>> {
    Ok(Json(shown(&state, &hook, None)))
}

/// Changes to a webhook (absent fields stay as they are).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateWebhook {
    name: Option<String>,
    events: Option<Vec<String>>,
    prompt: Option<String>,
    skills: Option<Vec<String>>,
    deliver: Option<String>,
    /// A cron job (id or name) to fire; "" unlinks it (deliveries start turns again).
    cron_job: Option<String>,
    enabled: Option<bool>,
    rate_limit_per_minute: Option<i32>,
    /// Replaces the list of the only toolsets its turns may use.
    toolsets: Option<Vec<String>>,
}

#[utoipa::path(patch, path = "/v1/webhooks/{id}", tag = "webhooks", params(WebhookPath), request_body = UpdateWebhook,
    responses((status = 200, description = "The changed webhook", body = hermes_wire::v1::Webhook), BadRequest, NoSuchWebhook))]
pub(crate) async fn update(
    Visible { state, auth, found: hook, .. }: Visible<Webhook>,
    ApiJson(u): ApiJson<UpdateWebhook>,
) -> Result<Json<Shown>> {
    let changes = changes(&state, &auth, &hook, u).await?;
    let hook = state.store.automation().update_webhook(auth.tenant_id, hook.id, &changes).await?;
    Ok(Json(shown(&state, &hook, None)))
}

/// The changes `u` asks of `hook`, checked.
async fn changes(state: &AppState, auth: &KeyAuth, hook: &Webhook, u: UpdateWebhook) -> Result<WebhookChanges> {
    if let Some(prompt) = &u.prompt {
        check_prompt(prompt)?;
    }
    if let Some(deliver) = &u.deliver {
        check_deliver(deliver)?;
    }
    if let Some(rate) = u.rate_limit_per_minute {
        check_rate(rate)?;
    }
    check_toolsets(u.toolsets.as_deref())?;
    let cron_job_id = match u.cron_job.as_deref().map(str::trim) {
        None => None,
        Some("") => Some(None),
        Some(reference) => Some(Some(job_of(state, auth, hook.agent_id, reference).await?)),
    };
    Ok(WebhookChanges {
        name: u.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()),
        events: u.events,
        prompt: u.prompt,
        skills: u.skills,
        deliver: u.deliver,
        cron_job_id,
        enabled: u.enabled,
        rate_limit_per_minute: u.rate_limit_per_minute,
        toolsets: u.toolsets,
    })
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate-secret", tag = "webhooks", params(WebhookPath),
    responses((status = 200, description = "The webhook with its new secret; the old one stops working at once", body = hermes_wire::v1::Webhook), NoSuchWebhook))]
pub(crate) async fn rotate_secret(Visible { state, auth, found: hook, .. }: Visible<Webhook>) -> Result<Json<Shown>> {
    let secret =
        state.store.automation().rotate_webhook_secret(auth.tenant_id, hook.id, state.secrets.as_ref()).await?;
    Ok(Json(shown(&state, &hook, Some(secret))))
}

#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", params(WebhookPath),
    responses((status = 200, description = "Removed; its endpoint answers 404 from now on", body = Deleted), NoSuchWebhook))]
pub(crate) async fn delete(Visible { state, auth, found: hook, .. }: Visible<Webhook>) -> Result<Json<Deleted>> {
    deleted::<resource::Webhook>(state.store.automation().delete_webhook(auth.tenant_id, hook.id).await?)?;
    Ok(Json(Deleted::new(hook.id, "webhook.deleted")))
}
