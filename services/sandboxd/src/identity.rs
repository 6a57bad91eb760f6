//! Who sandboxd acts as, and who the programs it starts are.
//!
//! In a container sandboxd starts as root with only `CAP_SETUID`, `CAP_SETGID` and `CAP_KILL`
//! and is told `--run-as UID:GID` (the sandbox user). It keeps root's process identity, so the
//! programs it starts as the sandbox user can neither signal it nor read its memory or
//! environment, nor replace its socket (root's, in a sticky directory). Every file it touches
//! it touches as the sandbox user (the per-thread filesystem ids of every runtime thread), so
//! what it writes belongs to that user and it can read nothing that user could not.
//!
//! `--mcp-as UID:GID` is a second user, for the programs that hold the tenant's secrets (stdio
//! MCP servers): another uid, so the kernel refuses the sandbox user their `/proc/<pid>/environ`,
//! `mem`, `fd` and `maps`, and a home of its own ([`crate::mcp_home`]).
//!
//! Without `--run-as` (the local backend without root, tests) everything runs as whoever
//! started it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::unistd::{getegid, geteuid};

use crate::run_as::RunAs;

/// How every program sandboxd starts is started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The user programs run as (`None`: sandboxd's own).
    pub run_as: Option<RunAs>,
    /// The user stdio programs holding secrets (MCP servers) run as (`None`: the sandbox
    /// user, who can then read their environment).
    pub mcp_as: Option<RunAs>,
    /// Variables of sandboxd's environment programs never see (its token).
    pub hidden_env: Vec<String>,
}

/// The MCP server user, ready: its ids and its private home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpUser {
    pub ids: RunAs,
    pub home: PathBuf,
}

/// A launch that cannot be.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("--mcp-as needs --run-as (sandboxd must be root to start programs as either user)")]
    McpWithoutRunAs,
    #[error("--mcp-as must name another uid and gid than --run-as, or the sandbox user could read its programs")]
    McpIsTheSandboxUser,
}

struct Launched {
    launch: Launch,
    /// The MCP server user, or why its home cannot be used (then its programs are refused).
    mcp: Option<Result<McpUser, String>>,
}

static LAUNCHED: OnceLock<Launched> = OnceLock::new();

/// Fixes how programs are started, once, at startup (before any program runs): with
/// `--mcp-as`, the MCP server user's home is made under `mcp_mount` now, so no program of the
/// sandbox user's can be there first.
pub fn set(launch: Launch, mcp_mount: &Path) -> Result<(), LaunchError> {
    let mcp = match (launch.mcp_as, launch.run_as) {
        (None, _) => None,
        (Some(_), None) => return Err(LaunchError::McpWithoutRunAs),
        (Some(mcp), Some(sandbox)) if mcp.uid == sandbox.uid || mcp.gid == sandbox.gid => {
            return Err(LaunchError::McpIsTheSandboxUser);
        }
        (Some(mcp), Some(sandbox)) => Some(
            crate::mcp_home::prepare(mcp_mount, mcp, sandbox)
                .map(|home| McpUser { ids: mcp, home })
                .map_err(|e| e.to_string()),
        ),
    };
    let _ = LAUNCHED.set(Launched { launch, mcp });
    Ok(())
}

/// The sandbox user: `--run-as`, else sandboxd's own ids.
pub fn sandbox_user() -> RunAs {
    LAUNCHED
        .get()
        .and_then(|l| l.launch.run_as)
        .unwrap_or_else(|| RunAs { uid: geteuid().as_raw(), gid: getegid().as_raw() })
}

/// The MCP server user: `None` without `--mcp-as`; an error when its home is unusable.
pub fn mcp_user() -> Option<Result<&'static McpUser, &'static str>> {
    LAUNCHED.get()?.mcp.as_ref().map(|m| m.as_ref().map_err(String::as_str))
}

fn hide_env(cmd: &mut tokio::process::Command) {
    for name in LAUNCHED.get().map(|l| l.launch.hidden_env.as_slice()).unwrap_or_default() {
        cmd.env_remove(name);
    }
}

/// Applies the launch rules to a program about to start as the sandbox user.
pub fn apply(cmd: &mut tokio::process::Command) {
    hide_env(cmd);
    if let Some(run_as) = LAUNCHED.get().and_then(|l| l.launch.run_as) {
        // std drops the supplementary groups too when it changes ids as root.
        cmd.uid(run_as.uid).gid(run_as.gid);
    }
}

/// Held (shared) by every program's start, and (alone) while a terminal is opened: the crate
/// that opens one marks its master end close-on-exec only after opening it, and a program
/// started in between would inherit it (and so read and type on another session's terminal).
static STARTING: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs `start` (a program's spawn) while no terminal is being opened.
pub fn starting<T>(start: impl FnOnce() -> T) -> T {
    let _shared = STARTING.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    start()
}

/// Runs `open` (a terminal's opening) while no program starts.
pub fn opening_terminal<T>(open: impl FnOnce() -> T) -> T {
    let _alone = STARTING.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    open()
}

/// Applies the launch rules to a program about to start on a terminal as the sandbox user.
pub fn apply_pty(mut cmd: pty_process::Command) -> pty_process::Command {
    for name in LAUNCHED.get().map(|l| l.launch.hidden_env.as_slice()).unwrap_or_default() {
        cmd = cmd.env_remove(name);
    }
    match LAUNCHED.get().and_then(|l| l.launch.run_as) {
        Some(run_as) => cmd.uid(run_as.uid).gid(run_as.gid),
        None => cmd,
    }
}

/// Applies the launch rules to a program about to start as the MCP server user.
pub fn apply_mcp(cmd: &mut tokio::process::Command, user: &McpUser) {
    hide_env(cmd);
    cmd.uid(user.ids.uid).gid(user.ids.gid);
}
