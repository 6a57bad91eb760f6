//! `hermesd`: runs any set of Hermes Cloud roles in one process (`hermesd all` on one
//! machine; one role per pod in a cluster), or applies migrations (`hermesd migrate`).
#![allow(clippy::print_stdout, reason = "--dump-config prints the configuration")]

mod cli;
mod compose;
mod signals;

use clap::Parser;

use hermes_config::HermesConfig;

/// mimalloc instead of glibc's malloc: allocation was a tenth of the process's CPU under load
/// (many short-lived buffers per turn); turns per second rose by a sixth (docs/PERFORMANCE.md).
/// Built without transparent huge pages, which held idle memory resident.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let cli = cli::Cli::parse();
    let config = HermesConfig::load(cli.config.as_deref())?;
    if cli.dump_config {
        print!("{}", config.to_toml_redacted());
        return Ok(());
    }
    let roles = cli.roles()?;
    // One TLS provider for every client (Postgres, RabbitMQ, providers, the OTLP exporter).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    // The trace exporter batches on the runtime.
    let telemetry = runtime.block_on(async { hermes_telemetry::init(&config.telemetry, &roles.service_name()) })?;
    let result = runtime.block_on(async move {
        let shutdown = signals::shutdown_token();
        compose::run(config, roles, shutdown).await
    });
    telemetry.shutdown();
    result
}
