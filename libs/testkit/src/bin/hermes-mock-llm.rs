//! `hermes-mock-llm`: the scripted OpenAI-compatible model as a standalone server, for demos
//! and load tests. Unscripted requests are answered by echoing, and `$ cmd` messages become a
//! `terminal` tool call. Push scripted replies with `POST /__script` (a JSON array).

use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;

use hermes_testkit::ScriptedLlm;

#[derive(Parser)]
#[command(about = "A scripted OpenAI-compatible chat model for demos and load tests")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9999")]
    bind: SocketAddr,
    /// Delay before every unscripted answer.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Keep no request (`GET /__requests` stays empty): for load tests.
    #[arg(long)]
    forget_requests: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = ScriptedLlm::start_on(args.bind).await?;
    server.set_default_latency(Duration::from_millis(args.latency_ms));
    if args.forget_requests {
        server.forget_requests();
    }
    eprintln!("hermes-mock-llm listening on {}", server.base_url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
