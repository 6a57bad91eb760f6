//! The audit entry of every local command that changes something. Commands that write to the
//! database directly are recorded in the same log the admin API writes, as the operating-system
//! user who ran them, with the command and its arguments (secrets masked). Commands whose store
//! call records a fuller entry itself (people, memberships) are left to it; commands that only
//! read record nothing. Every command is classified below, and a test keeps it so.

use clap::ArgMatches;
use serde_json::{Map, Value, json};

use hermes_store::Store;
use hermes_store::admin::{Actor, ActorKind, Audit, Change};

/// What a command does to the installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Reads,
    Writes,
    /// Writes, and its store call records the entry (with before and after).
    RecordsItself,
}

use Effect::{Reads, RecordsItself, Writes};

/// Every leaf command by its path.
const COMMANDS: &[(&str, Effect)] = &[
    ("tenant list", Reads),
    ("tenant create", RecordsItself),
    // Shows the policy, or changes it: recorded either way.
    ("tenant policy", Writes),
    ("tenant limits", Writes),
    ("tenant rows", Reads),
    // Reads, but a whole tenant's data leaving the installation is recorded.
    ("tenant export", Writes),
    // Shows the periods, or changes them: recorded either way.
    ("tenant retention", Writes),
    // Records `tenant.deletion_started` and `tenant.deleted` in the installation's log.
    ("tenant delete", RecordsItself),
    ("agent create", RecordsItself),
    ("agent list", Reads),
    ("key create", RecordsItself),
    ("key list", Reads),
    ("key revoke", RecordsItself),
    ("key limits", Writes),
    ("credential add", Writes),
    ("mcp add", RecordsItself),
    ("mcp list", Reads),
    ("mcp remove", RecordsItself),
    ("secret bind", RecordsItself),
    ("secret list", Reads),
    ("secret unbind", RecordsItself),
    ("pool strategy", Writes),
    ("session export", Reads),
    ("session lineage", Reads),
    ("session rename", Writes),
    ("skill import", Writes),
    ("skill pin", Writes),
    ("skill log", Reads),
    ("price set", Writes),
    ("price list", Reads),
    ("budget set", Writes),
    ("channel create", RecordsItself),
    ("channel list", Reads),
    ("channel update", RecordsItself),
    ("channel pair list", Reads),
    ("channel pair approve", RecordsItself),
    ("channel delete", RecordsItself),
    ("cron list", Reads),
    ("cron create", RecordsItself),
    ("cron pause", RecordsItself),
    ("cron resume", RecordsItself),
    ("cron run", RecordsItself),
    ("cron runs", Reads),
    ("cron remove", RecordsItself),
    ("webhook list", Reads),
    ("webhook create", Writes),
    ("webhook rotate", Writes),
    ("webhook remove", Writes),
    ("event-hook list", Reads),
    ("event-hook create", Writes),
    ("event-hook remove", Writes),
    ("operator create", RecordsItself),
    ("operator token", RecordsItself),
    ("operator sso", RecordsItself),
    ("person link", Writes),
    ("member add", RecordsItself),
    ("member role", RecordsItself),
    ("member remove", RecordsItself),
    ("member list", Reads),
    ("audit", Reads),
];

/// A command as run: its path (`key create`) and its leaf's arguments.
pub struct Invocation<'a> {
    path: String,
    leaf: &'a ArgMatches,
}

/// The command `matches` names.
pub fn invocation(matches: &ArgMatches) -> Invocation<'_> {
    let mut path = Vec::new();
    let mut leaf = matches;
    while let Some((name, sub)) = leaf.subcommand() {
        path.push(name.to_owned());
        leaf = sub;
    }
    Invocation { path: path.join(" "), leaf }
}

impl Invocation<'_> {
    fn effect(&self) -> Effect {
        // An unlisted command is recorded: a forgotten write is worse than a logged read.
        COMMANDS.iter().find(|(path, _)| *path == self.path).map_or(Writes, |(_, effect)| *effect)
    }

    /// The leaf's arguments as given, secrets masked.
    fn arguments(&self) -> Map<String, Value> {
        let mut args = Map::new();
        for id in self.leaf.ids() {
            let id = id.as_str();
            let Ok(Some(raw)) = self.leaf.try_get_raw(id) else { continue };
            let values: Vec<String> = raw.map(|v| v.to_string_lossy().into_owned()).collect();
            let secret = ["key", "token", "secret", "password"].iter().any(|s| id.contains(s));
            let shown = if secret {
                json!("***")
            } else if values.len() == 1 {
                json!(values[0])
            } else {
                json!(values)
            };
            args.insert(id.to_owned(), shown);
        }
        args
    }

    /// The tenant the command acts for: `--tenant`, or the one `tenant create` made.
    fn tenant_name(&self) -> Option<String> {
        let named = |id: &str| self.leaf.try_get_one::<String>(id).ok().flatten().cloned();
        named("tenant").or_else(|| (self.path == "tenant create").then(|| named("name")).flatten())
    }
}

/// What the CLI's changes are recorded as: the operating-system user who ran it.
pub fn cli_actor() -> Audit {
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| "unknown".into());
    Audit {
        actor: Actor { kind: ActorKind::Cli, id: user.clone(), label: format!("hermesctl ({user})") },
        request_id: None,
        source_address: None,
    }
}

/// Records `run` in the audit log if it changed something (after it succeeded).
pub async fn record(store: &Store, run: &Invocation<'_>) -> anyhow::Result<()> {
    if run.effect() != Writes {
        return Ok(());
    }
    let tenant = match run.tenant_name() {
        Some(name) => store.tenancy().tenant_by_name(&name).await.ok().map(|t| t.id),
        None => None,
    };
    let change = Change::new("cli.command", "command", &run.path).after(json!({ "arguments": run.arguments() }));
    store.admin().record_audit(tenant, &cli_actor(), change).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn leaves(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        let subs: Vec<&clap::Command> = cmd.get_subcommands().filter(|s| s.get_name() != "help").collect();
        if subs.is_empty() {
            out.push(prefix.trim().to_owned());
        }
        for sub in subs {
            leaves(sub, &format!("{prefix} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_says_whether_it_changes_anything() {
        let mut all = Vec::new();
        leaves(&crate::commands::Cli::command(), "", &mut all);
        let missing: Vec<&String> = all.iter().filter(|p| !COMMANDS.iter().any(|(c, _)| c == p)).collect();
        let stale: Vec<&str> = COMMANDS.iter().map(|(c, _)| *c).filter(|c| !all.iter().any(|p| p == c)).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "classify these in COMMANDS: {missing:?}; no such commands: {stale:?}"
        );
    }

    #[test]
    fn a_write_is_recorded_with_its_arguments_and_secrets_are_masked() {
        let matches = crate::commands::Cli::command()
            .try_get_matches_from([
                "hermesctl",
                "credential",
                "add",
                "--tenant",
                "acme",
                "--provider",
                "openai",
                "--label",
                "sk-live-123",
                "--key-env",
                "OPENAI_KEY",
            ])
            .unwrap();
        let run = invocation(&matches);
        assert_eq!((run.path.as_str(), run.effect()), ("credential add", Writes));
        assert_eq!(run.tenant_name().as_deref(), Some("acme"));
        let args = run.arguments();
        assert_eq!((args["key_env"].as_str(), args["label"].as_str()), (Some("***"), Some("sk-live-123")), "{args:?}");
        assert_eq!(args["provider"], "openai");
        let matches =
            crate::commands::Cli::command().try_get_matches_from(["hermesctl", "tenant", "create", "globex"]).unwrap();
        assert_eq!(invocation(&matches).tenant_name().as_deref(), Some("globex"));
        let matches = crate::commands::Cli::command().try_get_matches_from(["hermesctl", "tenant", "list"]).unwrap();
        assert_eq!(invocation(&matches).effect(), Reads);
    }
}
