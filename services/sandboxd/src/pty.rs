//! Programs on a terminal (`terminal(pty=true)`): a pseudo-terminal of 30 rows by 120 columns
//! (upstream's size) as the controlling terminal of a new session, for programs that are
//! interactive only on one (REPLs, CLIs that prompt, password questions). The session leader
//! leads its process group too, so a kill reaches everything it started, as with a pipe.
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
    let (pty, pts) = pty_process::open().map_err(io_error)?;
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
    let child = cmd.spawn(pts).map_err(io_error)?;
    let (output, input) = pty.into_split();
    Ok(OnTerminal { child, output, input })
}
