//! sandboxd: the daemon inside every sandbox. It serves the worker over gRPC (a unix socket
//! in a directory the backend mounts, or a TCP port guarded by a per-sandbox token) and does
//! everything that touches the sandbox: commands with streamed output, a timeout and a kill of
//! the whole process group; background processes; file reads, writes, edits and search; and
//! workspace checkpoints; the text of documents people send and the unpacking of archives,
//! both in child processes (`extract.rs`, `unpack.rs`). The worker never builds shell strings
//! to move file contents.

pub mod archive;
pub mod checkpoints;
mod child;
pub mod code;
pub mod code_guard;
pub mod exec;
pub mod extract;
pub mod files;
pub mod identity;
pub mod inbox;
pub mod mcp_home;
pub mod notebook;
pub mod office;
pub mod procs;
pub mod pty;
pub mod relay;
pub mod run_as;
pub mod safe_write;
pub mod search;
mod service;
pub mod stdio;
pub mod unpack;
pub mod xlsx;
mod xml;

#[cfg(test)]
#[path = "fixtures_tests.rs"]
mod fixtures;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub use service::{Daemon, TlsIdentity, bind_unix, serve_tcp, serve_unix};

/// Where the daemon works.
#[derive(Debug, Clone)]
pub struct Config {
    /// The agent's persistent workspace (relative paths resolve here).
    pub workspace: PathBuf,
    /// Daemon state kept with the workspace (finished processes, checkpoints); hidden from
    /// search and checkpoints.
    pub state_dir: PathBuf,
    /// Directories writes may go to (besides the workspace).
    pub writable: Vec<PathBuf>,
    /// A command's timeout when the request gives none.
    pub default_timeout: Duration,
    /// The token TCP clients must present (`None` on a unix socket).
    pub token: Option<String>,
}

impl Config {
    /// The defaults inside a sandbox: `/workspace`, its `.hermes` state, `/tmp` writable.
    pub fn for_workspace(workspace: PathBuf) -> Self {
        Self {
            state_dir: workspace.join(".hermes"),
            writable: vec![workspace.clone(), PathBuf::from("/tmp")],
            workspace,
            default_timeout: Duration::from_secs(180),
            token: None,
        }
    }
}

/// What the idle reaper asks: when anything last happened, and what runs now.
#[derive(Debug)]
pub struct Activity {
    last: Mutex<Instant>,
    running_execs: AtomicU32,
}

impl Default for Activity {
    fn default() -> Self {
        Self { last: Mutex::new(Instant::now()), running_execs: AtomicU32::new(0) }
    }
}

impl Activity {
    pub fn touch(&self) {
        if let Ok(mut last) = self.last.lock() {
            *last = Instant::now();
        }
    }

    /// Seconds since the last request, or 0 while a command runs.
    pub fn idle_secs(&self) -> u64 {
        if self.running() > 0 {
            return 0;
        }
        self.last.lock().map(|l| l.elapsed().as_secs()).unwrap_or(0)
    }

    pub fn running(&self) -> u32 {
        self.running_execs.load(Ordering::SeqCst)
    }

    /// Counts a running command until the guard drops.
    pub fn begin(&self) -> RunningGuard<'_> {
        self.running_execs.fetch_add(1, Ordering::SeqCst);
        self.touch();
        RunningGuard(self)
    }
}

/// Marks one running command.
pub struct RunningGuard<'a>(&'a Activity);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.running_execs.fetch_sub(1, Ordering::SeqCst);
        self.0.touch();
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
