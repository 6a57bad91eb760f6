//! `hermes-otlp-sink`: an OTLP collector that counts the spans it is sent (gRPC and
//! HTTP/protobuf) and keeps none, so the load test can measure what exporting traces costs.

use clap::Parser;

use hermes_testkit::otlp::OtlpReceiver;

#[derive(Parser)]
#[command(about = "An OTLP trace sink that counts spans")]
struct Args {
    #[arg(long, default_value = "127.0.0.1:4317")]
    grpc: String,
    #[arg(long, default_value = "127.0.0.1:4318")]
    http: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let sink = OtlpReceiver::start_with(&args.grpc, &args.http, true).await?;
    eprintln!("hermes-otlp-sink: gRPC {} HTTP {}", sink.grpc_url(), sink.http_url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    let (grpc, http) = sink.requests();
    eprintln!("hermes-otlp-sink: {} spans in {} export requests", sink.received(), grpc + http);
    Ok(())
}
