//! The sockets a sandbox's own processes connect to (its egress proxy, its spans), opened in
//! the sandbox's socket directory. Its own file, below both users of it (`common.rs` and
//! `span_relay.rs`), so neither imports the other for it.

use std::path::Path;

/// Listens on `path` in a sandbox's socket directory (taking the path over from an earlier
/// listener), for the sandbox user to connect to: the directory is what guards the socket.
pub(crate) fn listen_for_sandbox(path: &Path, what: &str) -> Option<tokio::net::UnixListener> {
    let _ = std::fs::remove_file(path);
    match tokio::net::UnixListener::bind(path) {
        Ok(listener) => {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666));
            Some(listener)
        }
        Err(e) => {
            tracing::warn!(error = %e, path = %path.display(), "cannot listen for the sandbox's {what}");
            None
        }
    }
}
