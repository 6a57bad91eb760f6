//! Subcommands. Each prints the created object (`--json` for machines); an API key is
//! printed in clear exactly once, when it is created.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_store::{NewAgent, SecretBox, Store, StoreError};

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
}

#[derive(Subcommand)]
pub enum TenantCmd {
    /// Create a tenant.
    Create { name: String },
}

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Create an agent; its name is the `model` clients ask for.
    Create(AgentCreate),
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
    #[arg(long, value_delimiter = ',', default_value = "terminal")]
    toolsets: Vec<String>,
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
}

fn print(json_mode: bool, value: serde_json::Value, human: String) {
    if json_mode {
        println!("{value}");
    } else {
        println!("{human}");
    }
}

async fn tenant(store: &Store, name: &str) -> anyhow::Result<hermes_store::Tenant> {
    match store.tenant_by_name(name).await {
        Ok(t) => Ok(t),
        Err(StoreError::NotFound) => {
            bail!("no tenant named {name:?} (create it with `hermesctl tenant create {name}`)")
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn run(cli: Cli, config: &HermesConfig, store: &Store) -> anyhow::Result<()> {
    let json_mode = cli.json;
    match cli.command {
        Command::Tenant(TenantCmd::Create { name }) => {
            let t = store.create_tenant(&name).await?;
            print(json_mode, json!(t), format!("created tenant {} ({})", t.name, t.id));
        }
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
            let new = NewAgent {
                name: a.name,
                model: a.model,
                provider_base_url: a.base_url,
                provider_key,
                soul,
                system_message: a.system_message,
                toolsets: a.toolsets,
            };
            let agent = store.create_agent(t.id, new, secrets.as_ref()).await?;
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
            let human = agents
                .iter()
                .map(|a| format!("{}\t{}\t{}\t{}", a.name, a.id, a.model, a.provider_base_url))
                .collect::<Vec<_>>()
                .join("\n");
            print(json_mode, json!(agents), human);
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
        Command::Key(KeyCmd::Revoke { tenant: name, id }) => {
            let t = tenant(store, &name).await?;
            let id = id.parse().context("not an API key id")?;
            store.revoke_api_key(t.id, id).await?;
            print(json_mode, json!({"revoked": id}), format!("revoked API key {id}"));
        }
    }
    Ok(())
}
