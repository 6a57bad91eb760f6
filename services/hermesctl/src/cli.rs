//! What the command files share: the tenant a command acts for (named with `--tenant`), the
//! arguments that name one thing of it, and printing the result for people or, with `--json`,
//! for machines.

use anyhow::{Context, bail};
use clap::Args;
use serde::Serialize;
use serde_json::json;

use hermes_store::{Agent, Store, StoreError, Tenant};

/// `--tenant NAME`.
#[derive(Args)]
pub struct TenantArg {
    #[arg(long)]
    pub tenant: String,
}

impl TenantArg {
    pub async fn resolve(&self, store: &Store) -> anyhow::Result<Tenant> {
        tenant(store, &self.tenant).await
    }
}

/// `--tenant NAME --agent NAME`: what a new thing belongs to.
#[derive(Args)]
pub struct TenantAgent {
    #[arg(long)]
    pub tenant: String,
    /// The agent's name.
    #[arg(long)]
    pub agent: String,
}

impl TenantAgent {
    /// The tenant and its agent these name.
    pub async fn resolve(&self, store: &Store) -> anyhow::Result<(Tenant, Agent)> {
        let t = tenant(store, &self.tenant).await?;
        let agent = store.agents().agent_by_name(t.id, &self.agent).await.context("no such agent")?;
        Ok((t, agent))
    }
}

/// `--tenant NAME ID`: one thing of a tenant, by its id.
#[derive(Args)]
pub struct TenantItem {
    #[arg(long)]
    pub tenant: String,
    pub id: uuid::Uuid,
}

/// `--tenant NAME JOB`: one cron job, by id or name.
#[derive(Args)]
pub struct TenantJob {
    #[arg(long)]
    pub tenant: String,
    pub job: String,
}

/// The tenant named `name`, or how to create it.
pub async fn tenant(store: &Store, name: &str) -> anyhow::Result<Tenant> {
    match store.tenancy().tenant_by_name(name).await {
        Ok(t) => Ok(t),
        Err(StoreError::NotFound) => {
            bail!("no tenant named {name:?} (create it with `hermesctl tenant create {name}`)")
        }
        Err(e) => Err(e.into()),
    }
}

/// Prints `value` as JSON in `--json` mode, `human` otherwise.
pub fn print(json_mode: bool, value: serde_json::Value, human: String) {
    if json_mode {
        println!("{value}");
    } else {
        println!("{human}");
    }
}

/// Prints a list: a JSON array in `--json` mode, otherwise one `line` per item.
/// A tenant just made (on the database or over the admin API), with its owner's invitation.
pub fn print_tenant_made(json_mode: bool, made: &hermes_wire::admin::TenantMade) -> anyhow::Result<()> {
    let t = &made.tenant;
    let human = match &made.owner_invitation_link {
        Some(link) => format!("created tenant {} ({})\nowner's invitation (works once): {link}", t.name, t.id),
        None => format!("created tenant {} ({})", t.name, t.id),
    };
    print(json_mode, serde_json::to_value(made)?, human);
    Ok(())
}

pub fn print_lines<T: Serialize>(json_mode: bool, items: &[T], line: impl Fn(&T) -> String) {
    let human = items.iter().map(line).collect::<Vec<_>>().join("\n");
    print(json_mode, json!(items), human);
}

/// Audit entries: JSON lines in `--json` mode, otherwise one line each (time, who, what, object).
pub fn print_audit(json_mode: bool, entries: &[hermes_wire::admin::AuditEntry]) {
    if json_mode {
        for e in entries {
            println!("{}", json!(e));
        }
        return;
    }
    for e in entries {
        let at = e.at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
        println!("{at}  {:<28} {:<24} {} {}", e.actor.label, e.action, e.object_kind, e.object_id);
    }
}
