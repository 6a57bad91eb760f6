//! A user's ids (`UID:GID`, never root's), and borrowing them as the calling thread's
//! identity for file access: how sandboxd touches files as the sandbox user while it keeps
//! root's process identity (see [`crate::identity`]).

use nix::unistd::{Gid, Uid, setfsgid, setfsuid};

/// A user's ids.
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

    /// Takes this user's identity for file access on the calling thread.
    pub fn on_this_thread(self) {
        setfsgid(Gid::from_raw(self.gid));
        setfsuid(Uid::from_raw(self.uid));
    }

    /// The calling thread's identity for file access.
    fn of_this_thread() -> Self {
        // Setting an invalid id (-1) changes nothing and answers the current one.
        let uid = setfsuid(Uid::from_raw(u32::MAX)).as_raw();
        let gid = setfsgid(Gid::from_raw(u32::MAX)).as_raw();
        Self { uid, gid }
    }

    /// Runs `f` with this user's identity for file access, then gives the thread's back.
    pub fn for_files<T>(self, f: impl FnOnce() -> T) -> T {
        let before = Self::of_this_thread();
        self.on_this_thread();
        let result = f();
        before.on_this_thread();
        result
    }
}

#[cfg(test)]
mod tests {
    use nix::unistd::geteuid;

    use super::*;

    #[test]
    fn the_sandbox_user_is_numeric_and_never_root() {
        assert_eq!(RunAs::parse("1000:1000"), Ok(RunAs { uid: 1000, gid: 1000 }));
        assert!(RunAs::parse("0:0").is_err());
        assert!(RunAs::parse("sandbox").is_err());
        assert!(RunAs::parse("1000:x").is_err());
    }

    #[test]
    fn file_identity_comes_back_after_a_borrowed_one() {
        let before = RunAs::of_this_thread();
        let seen = RunAs { uid: 4242, gid: 4343 }.for_files(RunAs::of_this_thread);
        if geteuid().is_root() {
            assert_eq!(seen, RunAs { uid: 4242, gid: 4343 });
        }
        assert_eq!(RunAs::of_this_thread(), before);
    }
}
