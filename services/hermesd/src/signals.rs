//! SIGTERM/SIGINT: the first starts a graceful drain, the second exits at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGTERM or SIGINT.
pub fn shutdown_token() -> CancellationToken {
    let token = CancellationToken::new();
    let trigger = token.clone();
    hermes_telemetry::tasks::spawn("signals", async move {
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return;
        };
        let Ok(mut int) = signal(SignalKind::interrupt()) else {
            return;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::info!("shutdown requested; draining (signal again to exit now)");
        trigger.cancel();
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("second signal: exiting without draining");
        std::process::exit(130);
    });
    token
}
