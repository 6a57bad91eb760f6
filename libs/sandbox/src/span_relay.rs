//! The worker's end of sandboxd's span export: a unix socket in each sandbox's socket
//! directory, served by the worker's [`hermes_telemetry::relay::SpanRelay`] while traces are
//! exported (the sandbox has no network to reach a collector itself).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex as StdMutex;

/// The socket's name in the socket directory.
pub(crate) const OTLP_SOCKET: &str = "otlp.sock";

/// sandboxd's arguments for exporting its spans (none while traces are not exported).
pub(crate) fn sandboxd_args(ipc_mount: &str) -> Vec<String> {
    match hermes_telemetry::relay::relay() {
        Some(_) => vec!["--otlp-socket".into(), format!("{ipc_mount}/{OTLP_SOCKET}")],
        None => Vec::new(),
    }
}

/// The relay sockets this worker serves, one per sandbox it opened.
#[derive(Default)]
pub(crate) struct SpanListeners {
    listening: StdMutex<HashMap<String, tokio::task::JoinHandle<()>>>,
}

impl SpanListeners {
    /// Serves `name`'s relay socket unless this worker already does (the newest listener
    /// takes the path over, as with the egress socket).
    pub fn ensure(&self, name: &str, ipc_dir: &Path) {
        let Some(relay) = hermes_telemetry::relay::relay() else { return };
        let Ok(mut listening) = self.listening.lock() else { return };
        if listening.get(name).is_some_and(|task| !task.is_finished()) {
            return;
        }
        // sandboxd exports as the sandbox user; the relay only takes spans of traces it sent.
        let Some(listener) = crate::listening::listen_for_sandbox(&ipc_dir.join(OTLP_SOCKET), "spans") else { return };
        listening.insert(name.to_owned(), hermes_telemetry::tasks::spawn("sandbox_span_relay", relay.serve(listener)));
    }

    pub fn stop(&self, name: &str) {
        if let Some(task) = self.listening.lock().ok().and_then(|mut l| l.remove(name)) {
            task.abort();
        }
    }
}
