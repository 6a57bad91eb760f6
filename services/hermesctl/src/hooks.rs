//! `hermesctl webhook ...` (webhook triggers: third parties start an agent) and `hermesctl
//! event-hook ...` (a tenant's endpoints told what happened). Secrets are printed once, on
//! creation and rotation; the API's `/v1/webhooks` and `/v1/event-hooks` do the same.

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_core::{EventHookId, TenantId, WebhookId};
use hermes_net_policy::outbound;
use hermes_store::event_hooks::EVENTS;
use hermes_store::webhooks::NewWebhook;
use hermes_store::{SecretBox, Store, StoreError};

use crate::cli::{TenantAgent, TenantArg, TenantItem, print, print_lines, tenant};

#[derive(Subcommand)]
pub enum WebhookCmd {
    /// The tenant's webhooks.
    List(TenantArg),
    /// A signed endpoint on the gateway (`/hooks/<id>`) that starts a turn of the agent.
    Create {
        #[command(flatten)]
        owner: TenantAgent,
        #[arg(long)]
        name: String,
        /// Event types taken (X-GitHub-Event, ...); repeat for several; none: all.
        #[arg(long = "event")]
        events: Vec<String>,
        /// The prompt, with {payload.path} placeholders.
        #[arg(long, default_value = "")]
        prompt: String,
        /// local (default), or platform:chat[:thread], comma-separated.
        #[arg(long, default_value = "local")]
        deliver: String,
        /// Fire this cron job (id or name) instead of starting a turn.
        #[arg(long)]
        cron_job: Option<String>,
        /// Only these of the agent's toolsets in its turns; repeat.
        #[arg(long = "toolset")]
        toolsets: Vec<String>,
    },
    /// A new secret; the old one stops working at once.
    Rotate(TenantItem),
    Remove(TenantItem),
}

#[derive(Subcommand)]
pub enum EventHookCmd {
    /// The tenant's endpoints, with how their last delivery went.
    List(TenantArg),
    /// Send the tenant's events to a URL, signed as Standard Webhooks.
    Create {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        url: String,
        /// turn.finished, cron.run.finished, cron.run.failed, approval.requested; none: all.
        #[arg(long = "event")]
        events: Vec<String>,
    },
    Remove(TenantItem),
}

fn secrets(config: &HermesConfig) -> anyhow::Result<Option<SecretBox>> {
    SecretBox::from_config(config.secrets.master_key.as_deref()).context("secrets.master_key")
}

pub async fn run_webhook(json_mode: bool, config: &HermesConfig, store: &Store, cmd: WebhookCmd) -> anyhow::Result<()> {
    match cmd {
        WebhookCmd::List(t) => {
            let t = t.resolve(store).await?;
            let hooks = store.automation().list_webhooks(t.id).await?;
            print_lines(json_mode, &hooks, |h| {
                format!("{}\t{}\t/hooks/{}\tdeliver {}\tenabled {}", h.id, h.name, h.id, h.deliver, h.enabled)
            });
        }
        WebhookCmd::Create { owner, name: hook_name, events, prompt, deliver, cron_job, toolsets } => {
            if let Some(unknown) = toolsets.iter().find(|t| t.parse::<hermes_core::ToolsetName>().is_err()) {
                bail!("no toolset `{unknown}` (hermesctl toolsets lists them)");
            }
            let (t, agent) = owner.resolve(store).await?;
            if let Some(finding) = hermes_threats::scan_strict(&prompt).first() {
                bail!("the prompt was refused: it looks like {}", finding.reason);
            }
            let cron_job_id = match cron_job {
                Some(reference) => {
                    Some(store.automation().find_job(t.id, Some(agent.id), &reference).await.context("no such job")?.id)
                }
                None => None,
            };
            let new = NewWebhook {
                agent_id: agent.id,
                name: hook_name,
                events,
                prompt,
                skills: Vec::new(),
                deliver,
                cron_job_id,
                rate_limit_per_minute: 30,
                toolsets: crate::keys::only(toolsets),
            };
            let (hook, secret) = store.automation().create_webhook(t.id, &new, secrets(config)?.as_ref()).await?;
            let human = format!(
                "webhook {}: POST to the gateway's /hooks/{}\nsecret (shown once): {secret}",
                hook.name, hook.id
            );
            print(json_mode, json!({ "webhook": hook, "secret": secret }), human);
        }
        WebhookCmd::Rotate(TenantItem { tenant: name, id }) => {
            let t = tenant(store, &name).await?;
            let secret = store
                .automation()
                .rotate_webhook_secret(t.id, WebhookId::from_uuid(id), secrets(config)?.as_ref())
                .await?;
            print(json_mode, json!({ "id": id, "secret": secret }), format!("new secret (shown once): {secret}"));
        }
        WebhookCmd::Remove(item) => {
            let delete = async |t, id| store.automation().delete_webhook(t, WebhookId::from_uuid(id)).await;
            remove(json_mode, store, item, "webhook", delete).await?;
        }
    }
    Ok(())
}

pub async fn run_event_hook(
    json_mode: bool,
    config: &HermesConfig,
    store: &Store,
    cmd: EventHookCmd,
) -> anyhow::Result<()> {
    match cmd {
        EventHookCmd::List(t) => {
            let t = t.resolve(store).await?;
            let hooks = store.automation().list_event_hooks(t.id).await?;
            print_lines(json_mode, &hooks, |h| {
                let error = h.last_error.as_deref().unwrap_or("");
                format!("{}\t{}\t{:?}\tlast {:?} {error}", h.id, h.url, h.events, h.last_status)
            });
        }
        EventHookCmd::Create { tenant: name, url, events } => {
            let t = tenant(store, &name).await?;
            if let Some(why) = outbound::refuse_url(&url, config.gateway.events_allow_private_targets) {
                bail!("{why}");
            }
            if let Some(unknown) = events.iter().find(|e| !EVENTS.contains(&e.as_str())) {
                bail!("no event {unknown:?}: the events are {}", EVENTS.join(", "));
            }
            let (hook, secret) =
                store.automation().create_event_hook(t.id, &url, &events, "", secrets(config)?.as_ref()).await?;
            let human = format!("events go to {}\nsecret (shown once): {secret}", hook.url);
            print(json_mode, json!({ "event_hook": hook, "secret": secret }), human);
        }
        EventHookCmd::Remove(item) => {
            let delete = async |t, id| store.automation().delete_event_hook(t, EventHookId::from_uuid(id)).await;
            remove(json_mode, store, item, "event hook", delete).await?;
        }
    }
    Ok(())
}

/// Deletes the hook `item` names with `delete` (true when the store found one) and says so,
/// or fails when its tenant has no `what` with that id.
async fn remove(
    json_mode: bool,
    store: &Store,
    TenantItem { tenant: name, id }: TenantItem,
    what: &str,
    delete: impl AsyncFnOnce(TenantId, uuid::Uuid) -> Result<bool, StoreError>,
) -> anyhow::Result<()> {
    let t = tenant(store, &name).await?;
    if !delete(t.id, id).await? {
        bail!("no {what} {id}");
    }
    print(json_mode, json!({ "id": id, "deleted": true }), format!("removed {id}"));
    Ok(())
}
