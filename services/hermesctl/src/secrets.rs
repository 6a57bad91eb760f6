//! `hermesctl secret bind|list|unbind`: which of the team's credentials an agent's sandboxes may
//! use, under which variable name. The sandbox sees a placeholder only; the egress proxy adds
//! the real value on requests to the credential's hosts (issue 39).

use clap::Subcommand;
use serde_json::json;

use hermes_core::secret_placement::SecretPlacement;
use hermes_store::Store;
use hermes_wire::admin::{SecretBind, SecretBinding};

use crate::audit_trail::cli_actor;
use crate::cli::{print, tenant};
use crate::mcp::AgentRef;

#[derive(Subcommand)]
pub enum SecretCmd {
    /// Bind a variable of the agent's sandboxes to one of the team's credentials.
    Bind {
        #[command(flatten)]
        agent: AgentRef,
        /// The variable's name in the sandbox (`GITHUB_TOKEN`).
        #[arg(long)]
        name: String,
        /// The credential (its pool name, as `credential add --provider` named it).
        #[arg(long)]
        credential: String,
        /// Also put the value in the query string.
        #[arg(long)]
        in_query: bool,
        /// Also put the value in this top-level field of a JSON or form body.
        #[arg(long)]
        body_field: Option<String>,
        /// Refuse requests to the credential's hosts whose HEADER carries another credential.
        #[arg(long, value_name = "HEADER")]
        require_header: Option<String>,
    },
    /// The agent's bindings (never a value).
    List(AgentRef),
    /// Remove a binding.
    Unbind {
        #[command(flatten)]
        agent: AgentRef,
        #[arg(long)]
        name: String,
    },
}

/// The request a `bind` describes.
pub fn bind_request(
    credential: &str,
    in_query: bool,
    body_field: Option<String>,
    header: Option<String>,
) -> SecretBind {
    let placement = SecretPlacement { query: in_query, body_field, required_header: header };
    SecretBind { credential: credential.to_owned(), placement }
}

/// The admin API's path for `who`'s bindings (`tenant` is the tenant's id).
pub fn api_path(tenant: &str, who: &AgentRef, name: Option<&str>) -> String {
    let agent: String = form_urlencoded::byte_serialize(who.agent.as_bytes()).collect();
    let base = format!("/admin/v1/tenants/{tenant}/agents/{agent}/secrets");
    name.map_or_else(|| base.clone(), |name| format!("{base}/{name}"))
}

pub fn lines(bindings: &[SecretBinding]) -> String {
    let line = |b: &SecretBinding| {
        let key = if b.has_key { b.hosts.join(",") } else { "(no key: add one)".into() };
        format!("{}\t{}\t{key}", b.name, b.credential)
    };
    bindings.iter().map(line).collect::<Vec<_>>().join("\n")
}

pub async fn run_secret(json_mode: bool, store: &Store, cmd: SecretCmd) -> anyhow::Result<()> {
    match cmd {
        SecretCmd::Bind { agent: who, name, credential, in_query, body_field, require_header } => {
            let t = tenant(store, &who.tenant).await?;
            let agent = hermes_ops::agent(store, t.id, &who.agent).await?;
            let request = bind_request(&credential, in_query, body_field, require_header);
            let bound = hermes_ops::secrets::bind(store, cli_actor(), (t.id, &agent), &name, &request).await?;
            let human = format!("bound {name} of {} to credential {credential}", agent.name);
            print(json_mode, serde_json::to_value(&bound)?, human);
        }
        SecretCmd::List(who) => {
            let t = tenant(store, &who.tenant).await?;
            let agent = hermes_ops::agent(store, t.id, &who.agent).await?;
            let bindings = hermes_ops::secrets::list(store, t.id, &agent).await?;
            print(json_mode, serde_json::to_value(&bindings)?, lines(&bindings));
        }
        SecretCmd::Unbind { agent: who, name } => {
            let t = tenant(store, &who.tenant).await?;
            let agent = hermes_ops::agent(store, t.id, &who.agent).await?;
            hermes_ops::secrets::unbind(store, cli_actor(), (t.id, &agent), &name).await?;
            print(json_mode, json!({"unbound": name}), format!("unbound {name} of {}", agent.name));
        }
    }
    Ok(())
}
