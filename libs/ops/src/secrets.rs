//! An agent's secret bindings (issue 39): bind one of the team's credentials under a variable
//! name of the agent's sandboxes, list the bindings (never a value), unbind. The sandbox gets a
//! placeholder; the egress proxy puts the key in its place for the key's hosts only.

use hermes_core::{ErrorCode, TenantId};
use hermes_store::admin::{Audit, Change};
use hermes_store::{Agent, Store};
use hermes_wire::admin::{SecretBind, SecretBinding};

use crate::{OpsError, Result};

/// Names a binding may not take: the sandbox's own plumbing (its proxy, its trusted
/// certificates, its paths and loader), which a placeholder must never replace.
const RESERVED: [&str; 16] = [
    "PATH",
    "HOME",
    "LANG",
    "USER",
    "SHELL",
    "PWD",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];
const RESERVED_PREFIXES: [&str; 5] = ["HERMES_", "SANDBOXD_", "LD_", "PYTHON", "NODE_"];

/// Why `name` cannot be a bound variable, if it cannot.
pub fn refuse_name(name: &str) -> Option<String> {
    let well_formed = !name.is_empty()
        && name.len() <= 128
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !well_formed {
        return Some(format!("{name:?} is not a variable name: letters, digits and _, not starting with a digit"));
    }
    let upper = name.to_ascii_uppercase();
    if RESERVED.contains(&upper.as_str()) || RESERVED_PREFIXES.iter().any(|p| upper.starts_with(p)) {
        return Some(format!("{name} is the sandbox's own: choose another name"));
    }
    None
}

fn shown((binding, key): hermes_store::BoundSecret) -> SecretBinding {
    SecretBinding {
        name: binding.env_name,
        credential: binding.pool,
        placement: binding.placement,
        has_key: key.is_some(),
        hosts: key.map(|k| k.allowed_hosts).unwrap_or_default(),
        created_at: binding.created_at,
    }
}

/// The agent's bindings, with whether each credential has a key and where it may go.
pub async fn list(store: &Store, tenant: TenantId, agent: &Agent) -> Result<Vec<SecretBinding>> {
    Ok(store.agents().bound_secrets(tenant, agent.id).await?.into_iter().map(shown).collect())
}

/// Binds `name` of `agent`'s sandboxes to the credential `bind` names; its next sandbox
/// command sees the placeholder.
pub async fn bind(
    store: &Store,
    by: Audit,
    (tenant, agent): (TenantId, &Agent),
    name: &str,
    bind: &SecretBind,
) -> Result<SecretBinding> {
    if let Some(why) = refuse_name(name) {
        return Err(OpsError::invalid("name", why));
    }
    bind.placement.check().map_err(|why| OpsError::invalid("placement", why))?;
    let mut tx = store.audited(tenant, by).await?;
    let replaced = tx.bind_secret(agent.id, name, &bind.credential, &bind.placement).await?;
    let action = if replaced { "secret.rebound" } else { "secret.bound" };
    tx.commit(Change::new(action, "secret_binding", format!("{}/{name}", agent.id)).after(bind)).await?;
    let all = list(store, tenant, agent).await?;
    all.into_iter().find(|b| b.name == name).ok_or(OpsError::NotFound { code: ErrorCode::NotFound, what: "binding" })
}

/// Removes the binding of `name`: the agent's sandboxes no longer get that variable.
pub async fn unbind(store: &Store, by: Audit, (tenant, agent): (TenantId, &Agent), name: &str) -> Result<()> {
    let mut tx = store.audited(tenant, by).await?;
    let gone = tx.unbind_secret(agent.id, name).await;
    let gone = gone.map_err(|e| OpsError::missing(e, ErrorCode::NotFound, "secret binding"))?;
    tx.commit(Change::new("secret.unbound", "secret_binding", format!("{}/{name}", agent.id)).before(&gone)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_binding_takes_a_plain_variable_name_never_the_sandboxs_own() {
        assert!(super::refuse_name("GITHUB_TOKEN").is_none());
        assert!(super::refuse_name("gh_token2").is_none());
        for bad in ["", "2FA", "A-B", "A B", "PATH", "https_proxy", "HERMES_RPC_SOCKET", "LD_PRELOAD", "NODE_OPTIONS"] {
            assert!(super::refuse_name(bad).is_some(), "{bad} refused");
        }
    }
}
