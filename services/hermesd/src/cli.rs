//! Command line.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

#[derive(Parser)]
#[command(name = "hermesd", version, about = "Hermes Cloud: run roles or apply migrations")]
pub struct Cli {
    /// TOML configuration file (layered over the defaults, under HERMES__* env vars).
    #[arg(long, env = "HERMES_CONFIG")]
    pub config: Option<PathBuf>,
    /// Print the effective configuration (secrets masked) and exit.
    #[arg(long)]
    pub dump_config: bool,
    /// What to run: `all`, any of `api worker gateway scheduler`, or `migrate`.
    #[arg(value_enum)]
    pub commands: Vec<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Command {
    All,
    Api,
    Worker,
    Gateway,
    Scheduler,
    Migrate,
}

/// The roles a process runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Roles {
    pub api: bool,
    pub worker: bool,
    pub gateway: bool,
    pub scheduler: bool,
    /// Only apply migrations, then exit.
    pub migrate_only: bool,
}

impl Roles {
    /// The default `service.name` of this process's spans: `hermes-api`, `hermes-worker`,
    /// `hermes-api+gateway`, ... (`OTEL_SERVICE_NAME` overrides it).
    pub fn service_name(&self) -> String {
        let names =
            [(self.api, "api"), (self.gateway, "gateway"), (self.worker, "worker"), (self.scheduler, "scheduler")];
        let on: Vec<&str> = names.iter().filter(|(on, _)| *on).map(|(_, n)| *n).collect();
        match on.len() {
            0 => "hermes-migrate".into(),
            4 => "hermesd".into(),
            _ => format!("hermes-{}", on.join("+")),
        }
    }
}

impl Cli {
    pub fn roles(&self) -> anyhow::Result<Roles> {
        let mut r = Roles::default();
        if self.commands.is_empty() {
            anyhow::bail!("name what to run: hermesd all | api | worker | gateway | scheduler | migrate (see --help)");
        }
        for c in &self.commands {
            match c {
                Command::All => {
                    r.api = true;
                    r.worker = true;
                    r.gateway = true;
                    r.scheduler = true;
                }
                Command::Api => r.api = true,
                Command::Worker => r.worker = true,
                Command::Gateway => r.gateway = true,
                Command::Scheduler => r.scheduler = true,
                Command::Migrate => r.migrate_only = true,
            }
        }
        if r.migrate_only && (r.api || r.worker || r.gateway || r.scheduler) {
            anyhow::bail!("`migrate` runs alone; roles migrate at start when database.migrate_on_start is true");
        }
        Ok(r)
    }
}
