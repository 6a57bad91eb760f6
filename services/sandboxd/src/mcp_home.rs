//! The MCP server user's home: `<mount>/home`, the user's own, mode 0700, and the directory
//! every stdio MCP server starts in. Not the workspace: what the agent can write there (an
//! `npx` cache, a script) the server would run with its secrets.
//!
//! Every backend mounts a fresh directory at the mount point, writable by all (tmpfs or
//! emptyDir). sandboxd makes the home in it at its start, before any program runs, and then
//! closes the mount point to everyone but root: so the sandbox user can never have made the
//! home first, nor replace it later. It is checked again before each server starts.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::code_guard::{Guard, Reach};
use crate::run_as::RunAs;

/// Why the home cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("{0} is not a directory")]
    NotADirectory(PathBuf),
    #[error("cannot prepare {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not the MCP server user's private directory (owner {uid}, mode {mode:o})")]
    NotPrivate { path: PathBuf, uid: u32, mode: u32 },
    #[error("{0}")]
    Reachable(Reach),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HomeError + '_ {
    move |source| HomeError::Io { path: path.to_owned(), source }
}

/// Makes `mount/home` for `mcp` and closes `mount`; answers the home. Runs at startup, with
/// sandboxd's own identity for files.
pub fn prepare(mount: &Path, mcp: RunAs, sandbox: RunAs) -> Result<PathBuf, HomeError> {
    let meta = std::fs::symlink_metadata(mount).map_err(io(mount))?;
    if !meta.is_dir() {
        return Err(HomeError::NotADirectory(mount.to_owned()));
    }
    let home = mount.join("home");
    match std::fs::symlink_metadata(&home) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::NotFound => mcp.for_files(|| make_private(&home, mcp))?,
        Err(e) => return Err(io(&home)(e)),
    }
    // Nobody but root adds, removes or renames anything in the mount point from now on. An
    // emptyDir kept over a restart was closed the first time (and may not be ours to close).
    if meta.uid() == nix::unistd::geteuid().as_raw() {
        std::fs::set_permissions(mount, std::fs::Permissions::from_mode(0o755)).map_err(io(mount))?;
    }
    check(&home, mcp, sandbox)?;
    Ok(home)
}

/// Creates `home` as `mcp` (the calling thread's file identity), private.
fn make_private(home: &Path, mcp: RunAs) -> Result<(), HomeError> {
    std::fs::DirBuilder::new().mode(0o700).create(home).map_err(io(home))?;
    // A group-sticky mount (an emptyDir with fsGroup) gives it the sandbox group: take ours
    // back (an owner may give its file any group it is in), and drop the set-group-id bit.
    std::os::unix::fs::chown(home, None, Some(mcp.gid)).map_err(io(home))?;
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700)).map_err(io(home))
}

/// Whether `home` is still `mcp`'s own, private, and out of the sandbox user's reach.
pub fn check(home: &Path, mcp: RunAs, sandbox: RunAs) -> Result<(), HomeError> {
    let meta = std::fs::symlink_metadata(home).map_err(io(home))?;
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() || meta.uid() != mcp.uid || mode & 0o077 != 0 {
        return Err(HomeError::NotPrivate { path: home.to_owned(), uid: meta.uid(), mode });
    }
    // Its parents: nothing on the way may be the sandbox user's to replace.
    Guard { sandbox, cwd: home.to_owned(), scratch: Vec::new() }.program(home).map_err(HomeError::Reachable)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> RunAs {
        RunAs { uid: nix::unistd::geteuid().as_raw(), gid: nix::unistd::getegid().as_raw() }
    }

    /// Run as root (as in a sandbox), the home is the MCP user's and the mount is closed.
    #[test]
    fn the_home_is_made_private_and_its_mount_closed() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("mcp");
        std::fs::create_dir(&mount).unwrap();
        std::fs::set_permissions(&mount, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let mcp = RunAs { uid: 4001, gid: 4001 };
        let sandbox = RunAs { uid: 4000, gid: 4000 };
        let home = prepare(&mount, mcp, sandbox).unwrap();
        let meta = std::fs::metadata(&home).unwrap();
        assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (4001, 4001, 0o700));
        assert_eq!(std::fs::metadata(&mount).unwrap().mode() & 0o7777, 0o755);
        // Prepared again (a restarted sandboxd, the same emptyDir): the same home.
        assert_eq!(prepare(&mount, mcp, sandbox).unwrap(), home);
    }

    /// A home somebody else made first is refused, never adopted.
    #[test]
    fn a_squatted_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("mcp");
        std::fs::create_dir_all(mount.join("home")).unwrap();
        let squatter = me();
        let mcp = RunAs { uid: squatter.uid.wrapping_add(1), gid: squatter.gid.wrapping_add(1) };
        let err = prepare(&mount, mcp, squatter).unwrap_err();
        assert!(matches!(err, HomeError::NotPrivate { .. }), "{err}");
        // A symbolic link in its place is no home either.
        std::fs::remove_dir(mount.join("home")).unwrap();
        std::os::unix::fs::symlink("/", mount.join("home")).unwrap();
        assert!(matches!(prepare(&mount, mcp, squatter), Err(HomeError::NotPrivate { .. })));
    }
}
