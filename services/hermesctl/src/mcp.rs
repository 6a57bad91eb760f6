//! `hermesctl mcp add|list|remove`: an agent's MCP servers, in upstream Hermes's shape.
//! Secret values never go on the command line: `--header-env NAME=VAR` and `--env-from
//! NAME=VAR` read them from this process's environment (or `--from-file` a JSON file in
//! upstream's `mcp_servers.<name>` shape).

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_mcp_config::{McpServerSpec, valid_server_name};
use hermes_net_policy::outbound::Policy;
use hermes_store::{SecretBox, Store};

use crate::audit_trail::cli_actor;
use crate::cli::{print, tenant};

/// Which agent's servers.
#[derive(Args)]
pub struct AgentRef {
    #[arg(long)]
    pub tenant: String,
    /// The agent's name or id.
    #[arg(long)]
    pub agent: String,
}

#[derive(Subcommand)]
pub enum McpCmd {
    /// Add or replace a server.
    Add(Box<AddArgs>),
    /// The agent's servers (secret values masked).
    List(AgentRef),
    /// Remove a server.
    Remove {
        #[command(flatten)]
        agent: AgentRef,
        #[arg(long)]
        name: String,
    },
}

#[derive(Args)]
pub struct AddArgs {
    #[command(flatten)]
    pub agent: AgentRef,
    /// Letters, digits, `-` and `_` (tools are named `mcp_<name>_<tool>`).
    #[arg(long)]
    pub name: String,
    /// A JSON file with the whole configuration (upstream's shape); other flags add to it.
    #[arg(long)]
    pub from_file: Option<std::path::PathBuf>,
    /// A streamable-HTTP server's URL (`--url` is hermesctl's own: the admin API's).
    #[arg(long)]
    pub server_url: Option<String>,
    /// A stdio server's program (run in the agent's sandbox).
    #[arg(long)]
    pub command: Option<String>,
    /// One argument of the program, repeated in order; it may start with `-` (`--arg -y`).
    #[arg(long = "arg", allow_hyphen_values = true)]
    pub args: Vec<String>,
    /// `NAME=VAR`: a header whose value is this process's `$VAR`.
    #[arg(long = "header-env")]
    pub header_env: Vec<String>,
    /// `NAME=VAR`: a variable of the stdio server, from this process's `$VAR`.
    #[arg(long = "env-from")]
    pub env_from: Vec<String>,
    /// `NAME=VALUE`: a variable of the stdio server, as written; `${SECRET}` is the placeholder
    /// of the agent's bound secret SECRET (`hermesctl secret bind`), swapped for the team's key
    /// only on the way to the key's hosts.
    #[arg(long = "env")]
    pub env: Vec<String>,
    /// Only these tools (globs).
    #[arg(long)]
    pub include: Vec<String>,
    /// All but these tools (globs).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Seconds a call may take (default 120).
    #[arg(long)]
    pub timeout: Option<f64>,
    /// Add it switched off.
    #[arg(long)]
    pub disabled: bool,
}

/// The tenant's agent by name.
async fn agent(store: &Store, tenant: hermes_core::TenantId, name: &str) -> anyhow::Result<hermes_store::Agent> {
    store.agents().agent_by_name(tenant, name).await.with_context(|| format!("no agent named {name:?}"))
}

/// `NAME=VAR` pairs, each value read from the environment.
fn from_env(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| {
            let (name, var) = pair.split_once('=').with_context(|| format!("{pair:?} is not NAME=VAR"))?;
            let value = std::env::var(var).with_context(|| format!("environment variable {var} is not set"))?;
            Ok((name.to_owned(), value))
        })
        .collect()
}

/// `NAME=VALUE` pairs, as written.
fn as_written(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| {
            let (name, value) = pair.split_once('=').with_context(|| format!("{pair:?} is not NAME=VALUE"))?;
            Ok((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The configuration the flags describe, checked.
pub fn spec_of(args: &AddArgs) -> anyhow::Result<McpServerSpec> {
    if !valid_server_name(&args.name) {
        bail!("{:?} is not a server name: letters, digits, - and _, at most 40", args.name);
    }
    let mut spec: McpServerSpec = match &args.from_file {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str(&text)
                .with_context(|| format!("{} is not an MCP server configuration", path.display()))?
        }
        None => serde_json::from_value(json!({}))?,
    };
    if args.server_url.is_some() {
        spec.url = args.server_url.clone();
    }
    if args.command.is_some() {
        spec.command = args.command.clone();
    }
    spec.args.extend(args.args.iter().cloned());
    spec.headers.extend(from_env(&args.header_env)?);
    spec.env.extend(from_env(&args.env_from)?);
    spec.env.extend(as_written(&args.env)?);
    spec.tools.include.extend(args.include.iter().cloned());
    spec.tools.exclude.extend(args.exclude.iter().cloned());
    spec.timeout = args.timeout.or(spec.timeout);
    spec.enabled = spec.enabled && !args.disabled;
    spec.validate().map_err(|e| anyhow::anyhow!(e.0))?;
    Ok(spec)
}

fn describe(name: &str, spec: &serde_json::Value, enabled: bool) -> String {
    let target = spec["url"].as_str().or(spec["command"].as_str()).unwrap_or("");
    format!("{name}\t{}\t{target}", if enabled { "on" } else { "off" })
}

pub async fn run_mcp(json_mode: bool, config: &HermesConfig, store: &Store, cmd: McpCmd) -> anyhow::Result<()> {
    match cmd {
        McpCmd::Add(args) => {
            let spec = spec_of(&args)?;
            let t = tenant(store, &args.agent.tenant).await?;
            let agent = agent(store, t.id, &args.agent.agent).await?;
            let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
            let policy = Policy::trusting(&config.mcp.allow_private_hosts);
            let checks = (&policy, secrets.as_ref());
            let set = hermes_ops::mcp::set(store, cli_actor(), (t.id, &agent), &args.name, &spec, checks).await?;
            print(
                json_mode,
                json!({"name": set.name, "config": set.config}),
                format!("set MCP server {} of {}", args.name, agent.name),
            );
        }
        McpCmd::List(who) => {
            let t = tenant(store, &who.tenant).await?;
            let agent = agent(store, t.id, &who.agent).await?;
            let servers = store.agents().mcp_servers(t.id, agent.id).await?;
            let value: Vec<serde_json::Value> =
                servers.iter().map(|s| json!({"name": s.name, "enabled": s.enabled, "config": s.spec})).collect();
            let human = servers.iter().map(|s| describe(&s.name, &s.spec, s.enabled)).collect::<Vec<_>>().join("\n");
            print(json_mode, json!(value), human);
        }
        McpCmd::Remove { agent: who, name } => {
            let t = tenant(store, &who.tenant).await?;
            let agent = agent(store, t.id, &who.agent).await?;
            hermes_ops::mcp::remove(store, cli_actor(), (t.id, &agent), &name).await?;
            print(json_mode, json!({"removed": name}), format!("removed MCP server {name} of {}", agent.name));
        }
    }
    Ok(())
}

/// The admin API's path for `who`'s servers (`tenant` is the tenant's id).
pub fn api_path(tenant: &str, who: &AgentRef, name: Option<&str>) -> String {
    let agent: String = form_urlencoded::byte_serialize(who.agent.as_bytes()).collect();
    match name {
        Some(name) => format!("/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}"),
        None => format!("/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers"),
    }
}

pub fn list_lines(servers: &[hermes_wire::admin::McpServer]) -> String {
    servers.iter().map(|s| describe(&s.name, &s.config, s.enabled)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::commands::{Cli, Command};

    #[test]
    fn the_readmes_stdio_example_parses_with_its_dash_arguments_in_order() {
        let line = "hermesctl mcp add --tenant acme --agent helper --name github --command npx --arg -y \
                    --arg @modelcontextprotocol/server-github --env GITHUB_PERSONAL_ACCESS_TOKEN=${GITHUB_TOKEN}";
        let Command::Mcp(McpCmd::Add(add)) = Cli::try_parse_from(line.split_whitespace()).unwrap().command else {
            panic!("not an mcp add");
        };
        assert_eq!(add.args, ["-y", "@modelcontextprotocol/server-github"]);
        let spec = spec_of(&add).unwrap();
        assert_eq!(spec.env["GITHUB_PERSONAL_ACCESS_TOKEN"], "${GITHUB_TOKEN}", "kept as written, for the turn");
    }
}
