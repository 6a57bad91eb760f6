//! `hermesctl`: the operator's CLI. Talks to Postgres directly, or with `--url` and an admin
//! token to the admin API (`remote.rs`); naming `--tenant` is how the operator says whom they
//! act for.
#![allow(clippy::print_stdout, reason = "a CLI prints its results")]

mod agents;
mod audit_trail;
mod channels;
mod cli;
mod commands;
mod cron;
mod hooks;
mod keys;
mod mcp;
mod people;
mod prices;
mod remote;
mod secrets;
mod sessions;
mod skills;
mod tenant_data;

use clap::{CommandFactory, FromArgMatches};

use hermes_config::HermesConfig;
use hermes_store::Store;

fn main() -> anyhow::Result<()> {
    let matches = commands::Cli::command().get_matches();
    let cli = commands::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let config = HermesConfig::load(cli.config.as_deref())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        if let Some(url) = cli.url.clone() {
            return remote::run(cli, &url).await;
        }
        let store = Store::connect(&config.database.url, 2).await?;
        commands::run(cli, &config, &store).await?;
        audit_trail::record(&store, &audit_trail::invocation(&matches)).await
    })
}
