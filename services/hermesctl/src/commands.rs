//! Subcommands. Each prints the created object (`--json` for machines); an API key is
//! printed in clear exactly once, when it is created.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_store::Store;

use crate::cli::{print, tenant};

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
    Agent(crate::agents::AgentCmd),
    /// API keys of a tenant.
    #[command(subcommand)]
    Key(crate::keys::KeyCmd),
    /// Provider keys of a tenant, pooled per provider.
    #[command(subcommand)]
    Credential(crate::keys::CredentialCmd),
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
    Pool(crate::keys::PoolCmd),
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
    /// Platform operators of the admin console.
    #[command(subcommand)]
    Operator(crate::people::OperatorCmd),
    /// People of the admin console: sign-in links.
    #[command(subcommand)]
    Person(crate::people::PersonCmd),
    /// A tenant's members in the admin console, and their roles.
    #[command(subcommand)]
    Member(crate::people::MemberCmd),
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
    /// What the tenant holds: its rows in each table (what deleting it would remove).
    Rows {
        #[arg(long)]
        tenant: String,
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
        Command::Agent(cmd) => crate::agents::run_agent(json_mode, config, store, cmd).await?,
        Command::Key(cmd) => crate::keys::run_key(json_mode, store, cmd).await?,
        Command::Credential(cmd) => crate::keys::run_credential(json_mode, config, store, cmd).await?,
        Command::Pool(cmd) => crate::keys::run_pool(json_mode, store, cmd).await?,
        Command::Operator(cmd) => crate::people::run_operator(json_mode, config, store, cmd).await?,
        Command::Person(cmd) => crate::people::run_person(json_mode, config, store, cmd).await?,
        Command::Member(cmd) => crate::people::run_member(json_mode, config, store, cmd).await?,
        Command::Tenant(TenantCmd::Limits { tenant: name, requests_per_minute, concurrent_turns }) => {
            let t = tenant(store, &name).await?;
            store.set_tenant_limits(t.id, requests_per_minute, concurrent_turns).await?;
            let value = json!({"requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns});
            print(json_mode, value.clone(), format!("limits of {}: {value}", t.name));
        }
        Command::Tenant(TenantCmd::Rows { tenant: name }) => {
            let t = tenant(store, &name).await?;
            let rows = store.tenant_rows(t.id).await?;
            let held: serde_json::Map<String, serde_json::Value> =
                rows.into_iter().filter(|(_, n)| *n > 0).map(|(table, n)| (table, json!(n))).collect();
            let human = held.iter().map(|(table, n)| format!("{table:<24} {n}")).collect::<Vec<_>>().join("\n");
            print(json_mode, json!(held), human);
        }
    }
    Ok(())
}
