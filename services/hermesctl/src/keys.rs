//! `hermesctl key`, `credential` and `pool`: the tenant's API keys (shown once, when made) and
//! its pooled provider keys.

use anyhow::Context;
use clap::Subcommand;
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_llm::keys::provider_hosts;
use hermes_store::{NewCredential, SecretBox, Store};
use hermes_wire::admin::{ApiKeyMade, NewApiKey};

use crate::audit_trail::cli_actor;
use crate::cli::{print, tenant};

#[derive(Subcommand)]
pub enum KeyCmd {
    /// Create an API key; it is shown once.
    Create {
        #[arg(long)]
        tenant: String,
        /// Restrict the key to one agent.
        #[arg(long)]
        agent: Option<String>,
        /// A label for the key (1 to 100 characters).
        #[arg(long, default_value = "hermesctl")]
        name: String,
        /// Keep the key's turns to these of their agent's toolsets (repeat; e.g. `--toolset web`).
        #[arg(long = "toolset")]
        toolsets: Vec<String>,
    },
    /// List a tenant's API keys (never their secrets).
    List {
        #[arg(long)]
        tenant: String,
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

#[derive(Subcommand)]
pub enum CredentialCmd {
    /// Add a provider key to the tenant's pool for that provider.
    Add {
        #[arg(long)]
        tenant: String,
        /// Pool name: openai, openrouter, anthropic, ..., or custom:<host>; for the web
        /// toolset firecrawl, tavily, exa or brave.
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

/// A `--toolset` list as a limit: none given, no limit.
pub fn only(toolsets: Vec<String>) -> Option<Vec<String>> {
    if toolsets.is_empty() { None } else { Some(toolsets) }
}

pub async fn run_key(json_mode: bool, store: &Store, cmd: KeyCmd) -> anyhow::Result<()> {
    match cmd {
        KeyCmd::Create { tenant: name, agent, name: label, toolsets } => {
            let t = tenant(store, &name).await?;
            let new = NewApiKey { name: label, agent, expires_in_days: None, toolsets: only(toolsets) };
            let ApiKeyMade { key, secret } = hermes_ops::keys::create(store, cli_actor(), t.id, &new).await?;
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
        KeyCmd::Limits { tenant: name, id, requests_per_minute, concurrent_turns } => {
            let t = tenant(store, &name).await?;
            let id = id.parse().context("not an API key id")?;
            store.tenancy().set_key_limits(t.id, id, requests_per_minute, concurrent_turns).await?;
            let value = json!({"requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns});
            print(json_mode, value.clone(), format!("limits of key {id}: {value}"));
        }
        KeyCmd::List { tenant: name } => {
            let t = tenant(store, &name).await?;
            let keys = store.tenancy().api_keys(t.id).await?;
            crate::cli::print_lines(json_mode, &keys, |k| {
                let revoked = if k.revoked_at.is_some() { "  (revoked)" } else { "" };
                format!("{}\t{}\t{}{revoked}", k.prefix, k.name, k.id)
            });
        }
        KeyCmd::Revoke { tenant: name, id } => {
            let t = tenant(store, &name).await?;
            let id = id.parse().context("not an API key id")?;
            hermes_ops::keys::revoke(store, cli_actor(), t.id, id).await?;
            print(json_mode, json!({"revoked": id}), format!("revoked API key {id}"));
        }
    }
    Ok(())
}

pub async fn run_credential(
    json_mode: bool,
    config: &HermesConfig,
    store: &Store,
    cmd: CredentialCmd,
) -> anyhow::Result<()> {
    let CredentialCmd::Add { tenant: name, provider, label, key_env, priority, hosts } = cmd;
    let t = tenant(store, &name).await?;
    let secret = std::env::var(&key_env).with_context(|| format!("environment variable {key_env} is not set"))?;
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
        .tenancy()
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
            cred.allowed_hosts.join(", "),
        ),
    );
    Ok(())
}

pub async fn run_pool(json_mode: bool, store: &Store, cmd: PoolCmd) -> anyhow::Result<()> {
    let PoolCmd::Strategy { tenant: name, provider, strategy } = cmd;
    let t = tenant(store, &name).await?;
    store.tenancy().set_pool_strategy(t.id, &provider, &strategy).await?;
    print(json_mode, json!({"provider": provider, "strategy": strategy}), format!("{provider} pool uses {strategy}"));
    Ok(())
}
