//! Subcommands. Each prints the created object (`--json` for machines); an API key is
//! printed in clear exactly once, when it is created.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_store::Store;
use hermes_wire::admin::{NewTenant, TenantMade};

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
    /// Work through the admin API at this address (e.g. https://hermes.example.com) instead of
    /// the database: no database URL or master key needed here.
    #[arg(long, env = "HERMES_URL", global = true)]
    pub url: Option<String>,
    /// The admin token for `--url` (`hat_...`; `hermesctl operator token` makes one).
    #[arg(long, env = "HERMES_TOKEN", global = true, hide_env_values = true)]
    pub token: Option<String>,
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
    /// An agent's MCP servers (upstream's `mcp_servers`).
    #[command(subcommand)]
    Mcp(crate::mcp::McpCmd),
    /// An agent's secret bindings: team credentials its sandboxes use as placeholders only.
    #[command(subcommand)]
    Secret(crate::secrets::SecretCmd),
    /// A tenant's audit log, newest first, as JSON lines (`--json`) or a table.
    Audit(AuditArgs),
}

/// Which audit entries.
#[derive(clap::Args)]
pub struct AuditArgs {
    #[arg(long)]
    pub tenant: String,
    /// Actions starting with this, such as `member.`.
    #[arg(long)]
    pub action: Option<String>,
    /// By this actor (email, person or token id).
    #[arg(long)]
    pub actor: Option<String>,
    /// From this time (RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Until this time (RFC 3339).
    #[arg(long)]
    pub until: Option<String>,
}

#[derive(Subcommand)]
pub enum TenantCmd {
    /// List the tenants.
    List,
    /// Create a tenant (and invite its first owner: prints their invitation link).
    Create {
        name: String,
        /// Invite this person as the tenant's first owner.
        #[arg(long)]
        owner_email: Option<String>,
    },
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
    /// Write everything the tenant owns to one archive (rows as JSON lines, skills, memory).
    Export(crate::tenant_data::ExportArgs),
    /// Show or change how long the tenant keeps sessions, turns, files and usage detail.
    Retention(crate::tenant_data::RetentionArgs),
    /// Delete the tenant and everything it owns (rows in every table, its keys in Redis; its
    /// sandboxes and their volumes when a worker next reaps).
    Delete(crate::tenant_data::DeleteArgs),
}

pub async fn run(cli: Cli, config: &HermesConfig, store: &Store) -> anyhow::Result<()> {
    let json_mode = cli.json;
    match cli.command {
        Command::Tenant(TenantCmd::List) => {
            let tenants = store.admin().tenants_page(None, 500).await?;
            crate::cli::print_lines(json_mode, &tenants, |t| format!("{}\t{}", t.name, t.id));
        }
        Command::Audit(args) => {
            let t = tenant(store, &args.tenant).await?;
            let parse = |v: &Option<String>| -> anyhow::Result<Option<chrono::DateTime<chrono::Utc>>> {
                Ok(v.as_deref().map(chrono::DateTime::parse_from_rfc3339).transpose()?.map(|d| d.to_utc()))
            };
            let filter = hermes_store::admin::AuditFilter {
                action: args.action,
                actor: args.actor,
                object_id: None,
                since: parse(&args.since)?,
                until: parse(&args.until)?,
                before_id: None,
                limit: 1000,
            };
            let page = store.admin().audit_entries(t.id, &filter).await?;
            crate::cli::print_audit(json_mode, &page.entries);
        }
        Command::Tenant(TenantCmd::Create { name, owner_email }) => {
            let valid_for = std::time::Duration::from_secs(config.admin.invitation_days.max(1) * 86_400);
            let new = NewTenant { name, owner_email };
            let made = hermes_ops::tenants::create(store, crate::audit_trail::cli_actor(), &new, valid_for).await?;
            let link = made.owner_invitation.map(|token| config.console_link("invite", &token));
            crate::cli::print_tenant_made(json_mode, &TenantMade { tenant: made.tenant, owner_invitation_link: link })?;
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
        Command::Mcp(cmd) => crate::mcp::run_mcp(json_mode, config, store, cmd).await?,
        Command::Secret(cmd) => crate::secrets::run_secret(json_mode, store, cmd).await?,
        Command::Operator(cmd) => crate::people::run_operator(json_mode, config, store, cmd).await?,
        Command::Person(cmd) => crate::people::run_person(json_mode, config, store, cmd).await?,
        Command::Member(cmd) => crate::people::run_member(json_mode, config, store, cmd).await?,
        Command::Tenant(TenantCmd::Limits { tenant: name, requests_per_minute, concurrent_turns }) => {
            let t = tenant(store, &name).await?;
            store.tenancy().set_tenant_limits(t.id, requests_per_minute, concurrent_turns).await?;
            let value = json!({"requests_per_minute": requests_per_minute, "concurrent_turns": concurrent_turns});
            print(json_mode, value.clone(), format!("limits of {}: {value}", t.name));
        }
        Command::Tenant(TenantCmd::Export(args)) => crate::tenant_data::run_export(json_mode, store, args).await?,
        Command::Tenant(TenantCmd::Retention(args)) => {
            crate::tenant_data::run_retention(json_mode, config, store, args).await?;
        }
        Command::Tenant(TenantCmd::Delete(args)) => {
            crate::tenant_data::run_delete(json_mode, config, store, args).await?;
        }
        Command::Tenant(TenantCmd::Rows { tenant: name }) => {
            let t = tenant(store, &name).await?;
            let rows = store.tenancy().tenant_rows(t.id).await?;
            let held: serde_json::Map<String, serde_json::Value> =
                rows.into_iter().filter(|(_, n)| *n > 0).map(|(table, n)| (table, json!(n))).collect();
            let human = held.iter().map(|(table, n)| format!("{table:<24} {n}")).collect::<Vec<_>>().join("\n");
            print(json_mode, json!(held), human);
        }
    }
    Ok(())
}
