//! Before a program starts as the MCP server user, with the tenant's secrets, sandboxd makes
//! sure the sandbox user (the agent's shell, code and browser) cannot change what it runs:
//! the program (found on the PATH), its script interpreter, and any file its arguments or
//! environment name. Otherwise the agent could edit the code and have it restarted with the
//! secrets (`/reload_mcp`).
//!
//! A path is in the sandbox user's reach when it, or any directory on the way to it (symbolic
//! links followed), belongs to that user, or is writable by its group or by everyone (a sticky
//! directory protects the entries of others), or when it is in the workspace or a scratch
//! directory such as `/tmp`. For an interpreter (`python`, `node`, `sh`, `npx`, ...) every path
//! an argument names is code, directories and paths that do not exist yet included; for other
//! programs only existing files are (a directory is a data root, such as a filesystem server's).
//!
//! The checks run as the sandbox user (sandboxd's threads take its file identity), so a
//! directory it cannot search hides nothing it could change.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::Metadata;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use crate::run_as::RunAs;

/// Symbolic links followed before giving up (the kernel's own limit).
const MAX_LINKS: u32 = 40;
/// Programs that run code named by their arguments.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "ash", "zsh", "ksh", "busybox", "env", "python", "pypy", "node", "nodejs", "bun", "bunx",
    "deno", "npx", "npm", "uv", "uvx", "pipx", "perl", "ruby", "php", "lua", "java", "tclsh",
];
/// Variables naming where code is loaded from: a directory they name is code too.
const CODE_VARIABLE_PREFIXES: &[&str] =
    &["PYTHON", "NODE", "NPM_", "LD_", "XDG_", "PERL", "RUBY", "JAVA", "BUN", "DENO", "UV_"];

/// How the sandbox user could change a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reach {
    #[error("{path} is in {dir}, where the sandbox user writes")]
    Scratch { path: PathBuf, dir: PathBuf },
    #[error("{0} belongs to the sandbox user")]
    Owned(PathBuf),
    #[error("{0} is writable by the sandbox user")]
    Writable(PathBuf),
    #[error("the sandbox user can replace {entry} (its directory {dir} is writable)")]
    Replaceable { entry: PathBuf, dir: PathBuf },
    #[error("{path} does not exist, and the sandbox user can create it in {dir}")]
    Creatable { path: PathBuf, dir: PathBuf },
    #[error("{0} has too many symbolic links")]
    Loop(PathBuf),
}

/// Why a program is not started.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("cannot start the command: {command:?} is not on the PATH ({path})")]
    NotOnPath { command: String, path: String },
    #[error("cannot start the command: no command given")]
    NoCommand,
    #[error(
        "refusing to start {command}: {reach}, so the agent could change what runs with the server's secrets; \
         install the server where the sandbox user cannot write (in the sandbox image, or through a package \
         runner such as `npx -y` or `uvx`, whose cache is in the server's own home)"
    )]
    Reachable { command: String, reach: Reach },
}

/// What a walk found at the end of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    /// A device, socket or pipe: no code.
    Other,
    Missing,
    /// Past a directory the sandbox user cannot search.
    OutOfReach,
}

/// A walk to the end of a path: what is there, and the first way the sandbox user could
/// change it.
#[derive(Debug)]
struct Walked {
    kind: Kind,
    reach: Option<Reach>,
}

/// How a path a program is given is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Code: whatever it names (or will name) must be out of reach.
    Code,
    /// Perhaps data: only an existing file must be out of reach.
    Data,
}

/// The sandbox user, where programs start, and where the sandbox user writes anyway.
#[derive(Debug, Clone)]
pub struct Guard {
    pub sandbox: RunAs,
    /// Where relative paths start (the program's working directory).
    pub cwd: PathBuf,
    /// The workspace and the scratch directories.
    pub scratch: Vec<PathBuf>,
}

impl Guard {
    /// Refuses `path` as a program when the sandbox user could change what it names.
    pub fn program(&self, path: &Path) -> Result<(), Reach> {
        let walked = self.walk(path);
        match walked.reach {
            Some(reach) if walked.kind != Kind::Other => Err(reach),
            _ => Ok(()),
        }
    }

    /// Resolves `command` on `path_var` and checks it, its interpreter, and every path its
    /// arguments and environment name; answers the program to run.
    pub fn check_start(
        &self,
        command: &str,
        args: &[String],
        env: &HashMap<String, String>,
        path_var: &str,
    ) -> Result<PathBuf, Refusal> {
        let program = self.resolve(command, path_var)?;
        let refuse = |reach| Refusal::Reachable { command: command.to_owned(), reach };
        self.program(&program).map_err(refuse)?;
        if let Some(interpreter) = shebang(&program) {
            self.program(&interpreter).map_err(refuse)?;
        }
        let role =
            if is_interpreter(command) || is_interpreter(&program.to_string_lossy()) { Role::Code } else { Role::Data };
        for arg in args {
            self.paths_in(arg, role).map_err(refuse)?;
        }
        for (name, value) in env {
            let role = if is_code_variable(name) { Role::Code } else { role };
            self.paths_in(value, role).map_err(refuse)?;
        }
        Ok(program)
    }

    /// `command` itself when it is a path, else the first executable file of that name on
    /// `path_var`; absolute either way.
    fn resolve(&self, command: &str, path_var: &str) -> Result<PathBuf, Refusal> {
        if command.is_empty() {
            return Err(Refusal::NoCommand);
        }
        if command.contains('/') {
            return Ok(self.cwd.join(command));
        }
        use std::os::unix::fs::PermissionsExt;
        path_var
            .split(':')
            .map(|dir| self.cwd.join(dir).join(command))
            .find(|candidate| {
                std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .ok_or_else(|| Refusal::NotOnPath { command: command.to_owned(), path: path_var.to_owned() })
    }

    /// Checks every path named in `text` (an argument, or a variable's value).
    fn paths_in(&self, text: &str, role: Role) -> Result<(), Reach> {
        for token in path_tokens(text) {
            let walked = self.walk(Path::new(token));
            let counts = match role {
                Role::Code => walked.kind != Kind::Other,
                Role::Data => walked.kind == Kind::File,
            };
            if let (true, Some(reach)) = (counts, walked.reach) {
                return Err(reach);
            }
        }
        Ok(())
    }

    fn writable(&self, meta: &Metadata) -> bool {
        meta.uid() == self.sandbox.uid
            || meta.mode() & 0o002 != 0
            || (meta.mode() & 0o020 != 0 && meta.gid() == self.sandbox.gid)
    }

    /// Whether the sandbox user may replace `entry` (its metadata) in a directory (`dir`'s).
    fn replaceable(&self, dir: &Metadata, entry: &Metadata) -> bool {
        const STICKY: u32 = 0o1000;
        self.writable(dir) && (dir.mode() & STICKY == 0 || entry.uid() == self.sandbox.uid)
    }

    /// Follows `path` from `/` (a relative one from the working directory), one entry at a
    /// time, symbolic links included.
    fn walk(&self, path: &Path) -> Walked {
        let full = self.cwd.join(path);
        let mut todo: Vec<OsString> = Vec::new();
        push_components(&mut todo, &full);
        let root = Path::new("/");
        let Ok(mut at_meta) = std::fs::symlink_metadata(root) else {
            return Walked { kind: Kind::OutOfReach, reach: None };
        };
        let mut at = root.to_path_buf();
        let mut reach = self.writable(&at_meta).then(|| Reach::Writable(at.clone()));
        let mut links = 0;
        while let Some(part) = todo.pop() {
            if part == ".." {
                at.pop();
                match std::fs::symlink_metadata(&at) {
                    Ok(meta) => at_meta = meta,
                    Err(_) => return Walked { kind: Kind::OutOfReach, reach },
                }
                continue;
            }
            let next = at.join(&part);
            let meta = match std::fs::symlink_metadata(&next) {
                Ok(meta) => meta,
                Err(e) if e.kind() == ErrorKind::PermissionDenied => return Walked { kind: Kind::OutOfReach, reach },
                Err(_) => {
                    if self.writable(&at_meta) {
                        reach.get_or_insert(Reach::Creatable { path: full.clone(), dir: at });
                    }
                    return Walked { kind: Kind::Missing, reach };
                }
            };
            if meta.uid() == self.sandbox.uid {
                reach.get_or_insert(Reach::Owned(next.clone()));
            } else if self.replaceable(&at_meta, &meta) {
                reach.get_or_insert(Reach::Replaceable { entry: next.clone(), dir: at.clone() });
            }
            if meta.file_type().is_symlink() {
                links += 1;
                let target = match std::fs::read_link(&next) {
                    Ok(target) if links <= MAX_LINKS => target,
                    Ok(_) => return Walked { kind: Kind::Missing, reach: Some(Reach::Loop(full)) },
                    Err(_) => return Walked { kind: Kind::OutOfReach, reach },
                };
                if target.is_absolute() {
                    at = root.to_path_buf();
                    at_meta = match std::fs::symlink_metadata(root) {
                        Ok(meta) => meta,
                        Err(_) => return Walked { kind: Kind::OutOfReach, reach },
                    };
                }
                push_components(&mut todo, &target);
                continue;
            }
            at = next;
            at_meta = meta;
        }
        if let Some(dir) = self.scratch.iter().find(|dir| at.starts_with(dir)) {
            reach = Some(Reach::Scratch { path: at.clone(), dir: dir.clone() });
        } else if self.writable(&at_meta) {
            reach.get_or_insert(Reach::Writable(at.clone()));
        }
        let kind = if at_meta.is_file() {
            Kind::File
        } else if at_meta.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        };
        Walked { kind, reach }
    }
}

/// Pushes `path`'s entries on `todo` so that the first pops first (`/` and `.` dropped).
fn push_components(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_owned()),
            Component::ParentDir => Some("..".into()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// The words of `text` that name a path: split where a shell or an option would split, and
/// kept when absolute or explicitly relative (`./x`, `../x`, `.x`). A bare `a/b` is a package
/// (`npx -y @scope/pkg`) as often as a path, and as a path it is in the server's own home.
fn path_tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || "=:;,&|'\"()<>`$".contains(c))
        .filter(|t| t.starts_with('/') || t.starts_with('.'))
}

/// Whether `program` (a name or a path) runs code its arguments name.
fn is_interpreter(program: &str) -> bool {
    let name = program.rsplit('/').next().unwrap_or(program);
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    INTERPRETERS.contains(&stem)
}

fn is_code_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper == "HOME" || upper.ends_with("PATH") || CODE_VARIABLE_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// The interpreter a script names on its `#!` line.
fn shebang(program: &Path) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let interpreter = std::str::from_utf8(line).ok()?.split_whitespace().next()?;
    Some(PathBuf::from(interpreter))
}

#[cfg(test)]
#[path = "code_guard_tests.rs"]
mod tests;
