//! `hermesctl session ...` and `hermesctl tenant policy`: a tenant's conversations (lineage,
//! export, titles) and its session policy (time zone, resets, retention).

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use serde_json::json;

use hermes_core::SessionId;
use hermes_store::{SessionPolicy, Store};

use crate::cli::{print, print_lines, tenant};

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    /// Everything kept: metadata, lineage, every message as stored.
    Json,
    /// The conversation as ShareGPT (`human`, `gpt`, `tool`), one JSON object.
    Sharegpt,
}

#[derive(Subcommand)]
pub enum SessionCmd {
    /// Print a session with its lineage and messages.
    Export {
        #[arg(long)]
        tenant: String,
        #[arg(long, value_enum, default_value = "json")]
        format: ExportFormat,
        id: String,
    },
    /// The family of a session: compactions, forks and delegated children, from the root.
    Lineage {
        #[arg(long)]
        tenant: String,
        id: String,
    },
    /// Set a session's title (an empty title clears it).
    Rename {
        #[arg(long)]
        tenant: String,
        id: String,
        title: String,
    },
}

/// Options of `hermesctl tenant policy`; unset ones keep their value.
#[derive(clap::Args)]
pub struct PolicyArgs {
    #[arg(long)]
    tenant: String,
    /// IANA time zone for daily resets, e.g. Asia/Shanghai.
    #[arg(long)]
    timezone: Option<String>,
    /// Reset a chat's session after this many idle minutes (0: never).
    #[arg(long)]
    idle_reset_minutes: Option<u32>,
    /// Reset a chat's session daily when this local hour passes.
    #[arg(long, conflicts_with = "no_daily_reset")]
    daily_reset_hour: Option<u8>,
    #[arg(long)]
    no_daily_reset: bool,
    /// Delete sessions this many days after their last activity (`tenant retention` sets
    /// this and the other periods).
    #[arg(long, conflicts_with = "keep_forever")]
    retention_days: Option<u32>,
    #[arg(long)]
    keep_forever: bool,
}

fn id(text: &str) -> anyhow::Result<SessionId> {
    text.parse().context("not a session id")
}

pub async fn run_session(json_mode: bool, store: &Store, cmd: SessionCmd) -> anyhow::Result<()> {
    match cmd {
        SessionCmd::Export { tenant: name, format, id: session } => {
            let t = tenant(store, &name).await?;
            let export = store.conversations().export_session(t.id, id(&session)?).await?;
            let value = match format {
                ExportFormat::Json => serde_json::to_value(&export)?,
                ExportFormat::Sharegpt => export.to_sharegpt(),
            };
            println!("{}", if json_mode { value.to_string() } else { serde_json::to_string_pretty(&value)? });
        }
        SessionCmd::Lineage { tenant: name, id: session } => {
            let t = tenant(store, &name).await?;
            let nodes = store.conversations().session_lineage(t.id, id(&session)?).await?;
            print_lines(json_mode, &nodes, |n| {
                let indent = "  ".repeat(usize::try_from(n.depth).unwrap_or(0));
                let lineage = n.lineage.as_deref().unwrap_or("root");
                format!("{indent}{} {lineage} {}", n.session_id, n.title.as_deref().unwrap_or(""))
            });
        }
        SessionCmd::Rename { tenant: name, id: session, title } => {
            let t = tenant(store, &name).await?;
            let session = id(&session)?;
            store.conversations().set_session_title(t.id, session, Some(&title)).await?;
            print(json_mode, json!({"session_id": session, "title": title}), format!("renamed {session}"));
        }
    }
    Ok(())
}

pub async fn run_policy(json_mode: bool, store: &Store, args: PolicyArgs) -> anyhow::Result<()> {
    let t = tenant(store, &args.tenant).await?;
    let mut policy: SessionPolicy = store.conversations().session_policy(t.id).await?;
    if let Some(zone) = &args.timezone {
        policy.timezone = zone.parse().map_err(|_| anyhow::anyhow!("unknown time zone {zone:?}"))?;
    }
    if let Some(minutes) = args.idle_reset_minutes {
        policy.idle_reset_minutes = minutes;
    }
    if args.no_daily_reset {
        policy.daily_reset_hour = None;
    } else if let Some(hour) = args.daily_reset_hour {
        policy.daily_reset_hour = Some(hour);
    }
    if args.keep_forever {
        policy.retention_days = Some(0);
    } else if let Some(days) = args.retention_days {
        policy.retention_days = Some(days);
    }
    store.conversations().set_session_policy(t.id, &policy).await?;
    let value = json!({
        "timezone": policy.timezone.name(),
        "idle_reset_minutes": policy.idle_reset_minutes,
        "daily_reset_hour": policy.daily_reset_hour,
        "retention_days": policy.retention_days,
    });
    print(json_mode, value.clone(), format!("session policy of {}: {value}", t.name));
    Ok(())
}
