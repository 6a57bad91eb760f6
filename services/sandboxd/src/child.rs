//! The children sandboxd starts to handle a stranger's file (`--extract-text`, `--unpack`):
//! itself again, as the sandbox user, killed after a timeout, its output capped and its
//! address space limited, so a hostile file can at worst crash or stall that child, never the
//! daemon, and never hold more memory than the limit.

use std::ffi::OsStr;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// Printed by a child just before its answer: anything a parser printed before it is dropped.
const MARKER: &str = "\u{1}hermes-child-answer\n";

/// Why a child gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ChildError {
    #[error("cannot start it: {0}")]
    Start(std::io::Error),
    #[error("it took over {0:?}")]
    TimedOut(Duration),
    #[error("reading its answer failed: {0}")]
    Io(std::io::Error),
    /// It ended without an answer: the file could not be handled (or it crashed on it).
    #[error("it gave no answer")]
    NoAnswer,
}

/// Runs `hermes-sandboxd ARGS` as the sandbox user and gives its answer: what it printed
/// after [`MARKER`], at most `max_output` bytes, when it exited 0 within `timeout`.
pub async fn run(args: &[&OsStr], timeout: Duration, max_output: u64) -> Result<String, ChildError> {
    let exe = std::env::current_exe().map_err(ChildError::Start)?;
    let mut cmd = tokio::process::Command::new(exe);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd.kill_on_drop(true);
    crate::identity::apply(&mut cmd);
    let mut child = crate::identity::starting(|| cmd.spawn()).map_err(ChildError::Start)?;
    let stdout = child.stdout.take().ok_or(ChildError::NoAnswer)?;
    let read = async {
        let mut out = Vec::new();
        // The pipe closes at the cap: a child writing on fails rather than blocks.
        stdout.take(max_output).read_to_end(&mut out).await?;
        let status = child.wait().await?;
        Ok::<_, std::io::Error>((status, out))
    };
    let (status, out) = tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| ChildError::TimedOut(timeout))?
        .map_err(ChildError::Io)?;
    let out = String::from_utf8_lossy(&out);
    match out.split_once(MARKER) {
        Some((_, answer)) if status.success() => Ok(answer.to_owned()),
        _ => Err(ChildError::NoAnswer),
    }
}

/// The child's side: prints [`MARKER`] and `answer`; the exit code says whether that worked.
pub fn answer(answer: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    let written =
        out.write_all(MARKER.as_bytes()).and_then(|()| out.write_all(answer.as_bytes())).and_then(|()| out.flush());
    if written.is_ok() { 0 } else { 3 }
}

/// Limits the calling process's address space to `bytes`: an allocation past it fails (and
/// the child aborts) instead of pressing on the sandbox's memory, which the agent's own
/// programs share.
pub fn limit_memory(bytes: u64) {
    use nix::sys::resource::{Resource, setrlimit};
    if let Err(e) = setrlimit(Resource::RLIMIT_AS, bytes, bytes) {
        // Still bounded by the sandbox's own memory limit.
        tracing::debug!(error = %e, "cannot limit the child's memory");
    }
}
