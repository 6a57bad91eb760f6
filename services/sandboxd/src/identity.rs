//! Who sandboxd acts as, and who the programs it starts are.
//!
//! In a container sandboxd starts as root with only `CAP_SETUID`, `CAP_SETGID` and `CAP_KILL`
//! and is told `--run-as UID:GID` (the sandbox user). It keeps root's process identity, so the
//! programs it starts as the sandbox user can neither signal it nor read its memory or
//! environment, nor replace its socket (root's, in a sticky directory). Every file it touches
//! it touches as the sandbox user (the per-thread filesystem ids of every runtime thread), so
//! what it writes belongs to that user and it can read nothing that user could not.
//!
//! Without `--run-as` (the local backend, tests) everything runs as whoever started it.

use std::sync::OnceLock;

use nix::unistd::{Gid, Uid, setfsgid, setfsuid};

/// The sandbox user's ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
}

impl RunAs {
    /// `UID:GID`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (uid, gid) = text.split_once(':').ok_or_else(|| format!("{text:?} is not UID:GID"))?;
        let id = |s: &str| s.parse::<u32>().map_err(|_| format!("{s:?} is not a numeric id"));
        let run_as = Self { uid: id(uid)?, gid: id(gid)? };
        if run_as.uid == 0 {
            return Err("the sandbox user cannot be root".into());
        }
        Ok(run_as)
    }

    /// Takes the sandbox user's identity for file access on the calling thread.
    pub fn on_this_thread(self) {
        setfsgid(Gid::from_raw(self.gid));
        setfsuid(Uid::from_raw(self.uid));
    }
}

/// How every program sandboxd starts is started.
#[derive(Debug, Clone, Default)]
pub struct Launch {
    /// The user programs run as (`None`: sandboxd's own).
    pub run_as: Option<RunAs>,
    /// Variables of sandboxd's environment programs never see (its token).
    pub hidden_env: Vec<String>,
}

static LAUNCH: OnceLock<Launch> = OnceLock::new();

/// Fixes how programs are started, once, at startup.
pub fn set(launch: Launch) {
    let _ = LAUNCH.set(launch);
}

/// Applies the launch rules to a program about to start.
pub fn apply(cmd: &mut tokio::process::Command) {
    let Some(launch) = LAUNCH.get() else { return };
    for name in &launch.hidden_env {
        cmd.env_remove(name);
    }
    if let Some(run_as) = launch.run_as {
        // std drops the supplementary groups too when it changes ids as root.
        cmd.uid(run_as.uid).gid(run_as.gid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_user_is_numeric_and_never_root() {
        assert_eq!(RunAs::parse("1000:1000"), Ok(RunAs { uid: 1000, gid: 1000 }));
        assert!(RunAs::parse("0:0").is_err());
        assert!(RunAs::parse("sandbox").is_err());
        assert!(RunAs::parse("1000:x").is_err());
    }
}
