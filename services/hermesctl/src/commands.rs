//! Subcommands. Each prints the created object (`--json` for machines); an API key is
//! printed in clear exactly once, when it is created.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_llm::keys::{provider_for_url, provider_hosts};
use hermes_store::{FallbackModel, NewAgent, NewCredential, SecretBox, Store, StoreError};

use crate::cli::{print, print_lines, tenant};

#[derive(Parser)]
#[command(name = "hermesctl", version, about = "Administer Hermes Cloud tenants, agents and API keys")]
pub struct Cli {
    /// TOML configuration file (same format as hermesd's).
    #[arg(long, env = "HERMES_CONFIG", global = true)]
    pub config: Option<PathBuf>,
    /// Print results as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Tenants (teams).
    #[command(subcommand)]
    Tenant(TenantCmd),
    /// Agents of a tenant.
    #[command(subcommand)]
    Agent(AgentCmd),
    /// API keys of a tenant.
    #[command(subcommand)]
    Key(KeyCmd),
    /// Provider keys of a tenant, pooled per provider.
    #[command(subcommand)]
    Credential(CredentialCmd),
    /// A tenant's sessions: export, lineage, titles.
    #[command(subcommand)]
    Session(crate::sessions::SessionCmd),
    /// Tenant-wide skills, pins and skill logs.
    #[command(subcommand)]
    Skill(crate::skills::SkillCmd),
    /// Model prices for usage costs.
    #[command(subcommand)]
    Price(crate::prices::PriceCmd),
    /// Spending caps per tenant or agent.
    #[command(subcommand)]
    Budget(crate::prices::BudgetCmd),
    /// How a provider's key pool picks a key.
    #[command(subcommand)]
    Pool(PoolCmd),
    /// Chat bots bound to agents (Telegram, Slack, WeCom).
    #[command(subcommand)]
    Channel(crate::channels::ChannelCmd),
    /// Scheduled agent runs.
    #[command(subcommand)]
    Cron(crate::cron::CronCmd),
    /// Webhook triggers: third parties start an agent.
    #[command(subcommand)]
    Webhook(crate::hooks::WebhookCmd),
    /// Outbound event webhooks: the tenant's endpoints told what happened.
    #[command(subcommand)]
    EventHook(crate::hooks::EventHookCmd),
}

#[derive(Subcommand)]
pub enum CredentialCmd {
    /// Add a provider key to the tenant's pool for that provider.
    Add {
        #[arg(long)]
        tenant: String,
        /// Pool name: openai, openrouter, anthropic, ..., or custom:<host>.
        #[arg(long)]
        provider: String,
        #[arg(long)]
        label: String,
        /// Name of an environment variable holding the key.
        #[arg(long)]
        key_env: String,
        /// Lower is used first with the fill_first strategy.
        #[arg(long, default_value_t = 0)]
        priority: i32,
        /// Hosts the key may be sent to (default: the provider's own hosts).
        #[arg(long = "host")]
        hosts: Vec<String>,
    },
}

#[derive(Subcommand)]
pub enum PoolCmd {
    /// Set the strategy: fill_first, round_robin, random or least_used.
    Strategy {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        provider: String,
        strategy: String,
    },
}

#[derive(Subcommand)]
pub enum TenantCmd {
    /// Create a tenant.
    Create { name: String },
    /// Show or change the tenant's session policy (time zone, resets, retention).
    Policy(crate::sessions::PolicyArgs),
    /// Set the tenant's rate limits (omitted: the installation's default; 0: unlimited).
    Limits {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        requests_per_minute: Option<u32>,
        #[arg(long)]
        concurrent_turns: Option<u32>,
    },
}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Create an agent; its name is the `model` clients ask for.
    Create(Box<AgentCreate>),
    /// List a tenant's agents.
    List {
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Args)]
pub struct AgentCreate {
    #[arg(long)]
    tenant: String,
    #[arg(long)]
    name: String,
    /// The provider's model id, e.g. gpt-4o-mini or anthropic/claude-sonnet-4.
    #[arg(long)]
    model: String,
    /// The provider's OpenAI-compatible base URL, e.g. https://api.openai.com/v1.
    #[arg(long)]
    base_url: String,
    /// Name of an environment variable holding the provider API key (stored encrypted).
    #[arg(long)]
    api_key_env: Option<String>,
    /// A file with the agent's SOUL (identity prompt).
    #[arg(long)]
    soul_file: Option<PathBuf>,
    /// Standing instructions added to the agent's system prompt.
    #[arg(long)]
    system_message: Option<String>,
    /// Enabled toolsets.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "terminal,file,code_execution,todo,memory,session_search,skills,clarify,delegation"
    )]
    toolsets: Vec<String>,
    /// How dangerous shell commands are approved: manual (ask the user), off (never ask) or
    /// smart. Hard-blocked commands are refused in every mode.
    #[arg(long, default_value = "manual")]
    approval_mode: hermes_core::ApprovalMode,
    /// Let the agent's sandbox reach the public internet (private, loopback, link-local and
    /// metadata addresses stay unreachable).
    #[arg(long)]
    egress: bool,
    /// A model to fall back to, as MODEL@BASE_URL; repeat for a chain (keys come from the
    /// tenant's pool for that provider).
    #[arg(long = "fallback")]
    fallbacks: Vec<String>,
    /// Hosts the agent's key may be sent to (default: the provider's hosts, or the base URL's).
    #[arg(long = "key-host")]
    key_hosts: Vec<String>,
    /// The provider API: chat_completions, anthropic_messages or responses (default: from the provider).
    #[arg(long)]
    api_mode: Option<String>,
    /// A cheaper model for side tasks such as compaction summaries, as MODEL@BASE_URL.
    #[arg(long)]
    aux_model: Option<String>,
    /// The model's context window in tokens (default: known from the model's name).
    #[arg(long)]
    context_window: Option<i32>,
}

fn model_at(spec: &str) -> anyhow::Result<FallbackModel> {
    let (model, base_url) = spec.split_once('@').context("expected MODEL@BASE_URL")?;
    Ok(FallbackModel { model: model.to_owned(), base_url: base_url.to_owned(), api_mode: None })
}

/// The hosts a key for `base_url` may go to by default.
fn default_hosts(base_url: &str) -> anyhow::Result<Vec<String>> {
    let provider = provider_for_url(base_url);
    if let Some(hosts) = provider_hosts(&provider) {
        return Ok(hosts.iter().map(|h| (*h).to_owned()).collect());
    }
    let url = reqwest::Url::parse(base_url).with_context(|| format!("{base_url:?} is not a URL"))?;
    Ok(vec![url.host_str().context("the base URL has no host")?.to_ascii_lowercase()])
}

#[derive(Subcommand)]
pub enum KeyCmd {
    /// Create an API key; it is shown once.
    Create {
        #[arg(long)]
        tenant: String,
        /// Restrict the key to one agent.
        #[arg(long)]
        agent: Option<String>,
        /// A label for the key.
        #[arg(long, default_value = "")]
        name: String,
    },
    /// Revoke an API key by id.
    Revoke {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    /// Set an API key's rate limits (omitted: the installation's default; 0: unlimited).
    Limits {
        #[arg(long)]
        tenant: String,
        id: String,
        #[arg(long)]
        requests_per_minute: Option<u32>,
        #[arg(long)]
        concurrent_turns: Option<u32>,
    },
}

pub async fn run(cli: Cli, config: &HermesConfig, store: &Store) -> anyhow::Result<()> {
    let json_mode = cli.json;
    match cli.command {
        Command::Tenant(TenantCmd::Create { name }) => {
            let t = store.create_tenant(&name).await?;
            print(json_mode, json!(t), format!("created tenant {} ({})", t.name, t.id));
        }
        Command::Tenant(TenantCmd::Policy(args)) => crate::sessions::run_policy(json_mode, store, args).await?,
        Command::Session(cmd) => crate::sessions::run_session(json_mode, store, cmd).await?,
        Command::Skill(cmd) => crate::skills::run_skill(json_mode, store, cmd).await?,
        Command::Price(cmd) => crate::prices::run_price(json_mode, store, cmd).await?,
        Command::Budget(cmd) => crate::prices::run_budget(json_mode, store, cmd).await?,
        Command::Channel(cmd) => crate::channels::run_channel(json_mode, config, store, cmd).await?,
        Command::Cron(cmd) => crate::cron::run_cron(json_mode, store, cmd).await?,
        Command::Webhook(cmd) => crate::hooks::run_webhook(json_mode, config, store, cmd).await?,
        Command::EventHook(cmd) => crate::hooks::run_event_hook(json_mode, config, store, cmd).await?,
        Command::Agent(AgentCmd::Create(a)) => {
            let t = tenant(store, &a.tenant).await?;
            let provider_key = match &a.api_key_env {
                Some(var) => Some(
                    std::env::var(var)
                        .with_context(|| format!("environment variable {var} (from --api-key-env) is not set"))?,
                ),
                None => None,
            };
            let soul = match &a.soul_file {
                Some(path) => {
                    Some(std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?)
                }
                None => None,
            };
            let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
            let fallbacks = a
                .fallbacks
                .iter()
                .map(|f| model_at(f).context("--fallback takes MODEL@BASE_URL"))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let auxiliary =
                a.aux_model.as_deref().map(model_at).transpose().context("--aux-model takes MODEL@BASE_URL")?;
            let provider_key_hosts = if a.key_hosts.is_empty() { default_hosts(&a.base_url)? } else { a.key_hosts };
            let new = NewAgent {
                auxiliary,
                context_window: a.context_window,
                api_mode: a.api_mode,
                fallbacks,
                provider_key_hosts,
                name: a.name,
                model: a.model,
                provider_base_url: a.base_url,
                provider_key,
                soul,
                system_message: a.system_message,
                toolsets: a.toolsets,
            };
            let mut agent = store.create_agent(t.id, new, secrets.as_ref()).await?;
            if a.approval_mode != agent.approval_mode {
                store.set_approval_mode(t.id, agent.id, a.approval_mode).await?;
                agent.approval_mode = a.approval_mode;
            }
            if a.egress {
                store.set_egress(t.id, agent.id, true).await?;
                agent.egress = true;
            }
            print(
                json_mode,
                json!(agent),
                format!(
                    "created agent {} ({}) in tenant {}: model {} at {}",
                    agent.name, agent.id, t.name, agent.model, agent.provider_base_url
                ),
            );
        }
        Command::Agent(AgentCmd::List { tenant: name }) => {
            let t = tenant(store, &name).await?;
            let agents = store.list_agents(t.id).await?;
            print_lines(json_mode, &agents, |a| format!("{}\t{}\t{}\t{}", a.name, a.id, a.model, a.provider_base_url));
        }
        Command::Key(KeyCmd::Create { tenant: name, agent, name: label }) => {
            let t = tenant(store, &name).await?;
            let agent_id = match agent {
                Some(a) => Some(match store.agent_by_name(t.id, &a).await {
                    Ok(agent) => agent.id,
                    Err(StoreError::NotFound) => bail!("tenant {name:?} has no agent named {a:?}"),
                    Err(e) => return Err(e.into()),
                }),
                None => None,
            };
            let (key, secret) = store.create_api_key(t.id, agent_id, &label, None).await?;
            let mut value = json!(key);
            value["key"] = json!(secret);
            print(
                json_mode,
                value,
                format!(
                    "created API key {} for tenant {}\n\n    {secret}\n\nStore it now: it is not shown again.",
                    key.id, t.name
                ),
            );
        }
        Command::Credential(CredentialCmd::Add { tenant: name, provider, label, key_env, priority, hosts }) => {
            let t = tenant(store, &name).await?;
            let secret =
                std::env::var(&key_env).with_context(|| format!("environment variable {key_env} is not set"))?;
            let allowed_hosts = if hosts.is_empty() {
                provider_hosts(&provider)
                    .map(|h| h.iter().map(|s| (*s).to_owned()).collect())
                    .context("a custom provider needs --host for the hosts its key may be sent to")?
            } else {
                hosts
            };
            let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?
                .context("storing a provider key needs secrets.master_key (HERMES__SECRETS__MASTER_KEY)")?;
            let cred = store
                .add_credential(t.id, NewCredential { provider, label, secret, priority, allowed_hosts }, &secrets)
                .await?;
            print(
                json_mode,
                json!(cred),
                format!(
                    "added key {:?} to the {} pool of tenant {} (hosts: {})",
                    cred.label,
                    cred.provider,
                    t.name,
                    cred.allowed_hosts.join(", ")
                ),
            );
        }
        Command::Pool(PoolCmd::Strategy { tenant: name, provider, strategy }) => {
            let t = tenant(store, &name).await?;
            store.set_pool_strategy(t.id, &provider, &strategy).await?;
            print(
                json_mode,
                json!({"provider": provider, "strategy": strategy}),
                format!("{provider} pool uses {strategy}"),
            );
        }
        Command::Tenant(TenantCmd::Limits { tenant: name, requests_per_minute, concurrent_turns }) => {
            let t = tenant(store, &name).await?;
            store.set_tenant_limits(t.id, requests_per_minute, concurrent_turns).await?;
            let value = json!({"requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns});
            print(json_mode, value.clone(), format!("limits of {}: {value}", t.name));
        }
        Command::Key(KeyCmd::Limits { tenant: name, id, requests_per_minute, concurrent_turns }) => {
            let t = tenant(store, &name).await?;
            let id = id.parse().context("not an API key id")?;
            store.set_key_limits(t.id, id, requests_per_minute, concurrent_turns).await?;
            let value = json!({"requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns});
            print(json_mode, value.clone(), format!("limits of key {id}: {value}"));
        }
        Command::Key(KeyCmd::Revoke { tenant: name, id }) => {
            let t = tenant(store, &name).await?;
            let id = id.parse().context("not an API key id")?;
            store.revoke_api_key(t.id, id).await?;
            print(json_mode, json!({"revoked": id}), format!("revoked API key {id}"));
        }
    }
    Ok(())
}
