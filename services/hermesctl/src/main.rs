//! `hermesctl`: the operator's CLI. Talks to Postgres directly (the admin API arrives with the
//! admin console); naming `--tenant` is how the operator says whom they act for.
#![allow(clippy::print_stdout, reason = "a CLI prints its results")]

mod agents;
mod channels;
mod cli;
mod commands;
mod cron;
mod hooks;
mod keys;
mod people;
mod prices;
mod sessions;
mod skills;

use clap::Parser;

use hermes_config::HermesConfig;
use hermes_store::Store;

fn main() -> anyhow::Result<()> {
    let cli = commands::Cli::parse();
    let config = HermesConfig::load(cli.config.as_deref())?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        let store = Store::connect(&config.database.url, 2).await?;
        commands::run(cli, &config, &store).await
    })
}
