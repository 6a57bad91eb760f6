//! Programs on a terminal (`terminal(pty=true)`): a pseudo-terminal of 30 rows by 120 columns
//! (upstream's size) as the controlling terminal of a new session, for programs that are
//! interactive only on one (REPLs, CLIs that prompt, password questions). A kill, or the
//! leader's end, ends the whole session ([`hang_up`]): a shell on a terminal puts each job in a
//! process group of its own, so the leader's group alone is not everything it started.
//!
//! The pseudo-terminal is opened with the runtime thread's filesystem ids, the sandbox user's
//! ([`crate::identity`]), so its device belongs to that user as their own login's would; the
//! master end stays in sandboxd.

use std::collections::HashMap;
use std::path::Path;

use pty_process::{OwnedReadPty, OwnedWritePty, Size};
use tokio::process::Child;

/// The terminal's size: rows.
pub const ROWS: u16 = 30;
/// The terminal's size: columns.
pub const COLUMNS: u16 = 120;
/// The end-of-file key (^D, the line discipline's default `VEOF`): a terminal has no input
/// to close, so "close" sends this, as a person would.
pub const END_OF_FILE: &[u8] = b"\x04";
/// The Enter key on a terminal (the line discipline turns it into `\n` for a program that
/// reads lines; one in raw mode sees the key itself).
pub const ENTER: &[u8] = b"\r";

/// A program started on a terminal: the program, what it shows and where its keys go.
pub struct OnTerminal {
    pub child: Child,
    pub output: OwnedReadPty,
    pub input: OwnedWritePty,
}

fn io_error(e: pty_process::Error) -> std::io::Error {
    match e {
        pty_process::Error::Io(e) => e,
        other => std::io::Error::other(other.to_string()),
    }
}

/// Starts `command` under `/bin/sh -c` in `workdir`, on a new terminal. `TERM` is
/// `xterm-256color` unless `env` says otherwise.
pub fn spawn(command: &str, workdir: &Path, env: &HashMap<String, String>) -> std::io::Result<OnTerminal> {
    let (pty, pts) = crate::identity::opening_terminal(pty_process::open).map_err(io_error)?;
    pty.resize(Size::new(ROWS, COLUMNS)).map_err(io_error)?;
    let mut cmd = pty_process::Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .current_dir(workdir)
        .env("TERM", "xterm-256color")
        .envs(env)
        .kill_on_drop(false);
    cmd = crate::identity::apply_pty(cmd);
    // `pts` goes with the command: once the program's copies close, reading the master ends.
    let child = crate::identity::starting(|| cmd.spawn(pts)).map_err(io_error)?;
    let (output, input) = pty.into_split();
    Ok(OnTerminal { child, output, input })
}

/// After its leader ends, how long a terminal's output is still read (what it printed last)
/// before the terminal is closed on whatever of its session lives on.
pub const DRAIN_AFTER_LEADER: std::time::Duration = std::time::Duration::from_millis(500);

/// Ends the session `leader` led, as a terminal closing does: every process still in it is
/// killed (a shell on a terminal gives each job a process group of its own, so killing the
/// leader's group alone would leave them, holding the terminal open). Repeats while some
/// remain (one may be forking), for at most 100 ms.
pub fn hang_up(leader: u32) {
    for _ in 0..20 {
        let members = session_members(leader);
        if members.is_empty() {
            return;
        }
        for pid in members {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The live processes of session `sid`, its leader left out (its own group is killed with it).
fn session_members(sid: u32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| u32::try_from(*pid).is_ok_and(|p| p != sid) && live_in_session(*pid) == Some(sid))
        .collect()
}

/// The session of `pid`, unless it is a zombie (nothing left to kill).
fn live_in_session(pid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's name, in parentheses that may hold anything: state, ppid, pgrp, session.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?;
    let session = fields.nth(2)?.parse().ok()?;
    (state != "Z").then_some(session)
}
