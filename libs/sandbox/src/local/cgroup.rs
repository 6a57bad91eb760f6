//! Per-sandbox cgroups for the local backend: a process and memory ceiling that holds for
//! everything a sandbox starts, whatever user it runs as. cgroup v2 when the unified
//! hierarchy has the controllers, else v1's `pids` and `memory` hierarchies.

use std::path::{Path, PathBuf};

use crate::{Result, SandboxError};

/// Where this worker's sandbox cgroups go.
#[derive(Debug, Clone)]
pub(crate) enum CgroupParent {
    V2(PathBuf),
    V1 { pids: PathBuf, memory: Option<PathBuf> },
}

/// One sandbox's cgroup directories.
#[derive(Debug)]
pub(crate) struct SandboxCgroup {
    dirs: Vec<PathBuf>,
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

fn backend(path: &Path, e: std::io::Error) -> SandboxError {
    SandboxError::Backend(format!("cgroup {}: {e}", path.display()))
}

impl CgroupParent {
    /// Finds a usable hierarchy for `setting` (`auto`, `off` or a delegated v2 directory),
    /// creating `<root>/<group>`; `None` when there is none this process may write.
    pub fn detect(setting: &str, group: &str) -> Option<Self> {
        let found = match setting {
            "off" => return None,
            "auto" => Self::auto(group),
            path => {
                let parent = PathBuf::from(path);
                Self::enable_v2(&parent).map(|()| Self::V2(parent))
            }
        };
        match found {
            Ok(parent) => Some(parent),
            Err(e) => {
                tracing::warn!(error = %e, "no writable cgroup for local sandboxes; only RLIMIT_NPROC bounds them");
                None
            }
        }
    }

    fn auto(group: &str) -> std::io::Result<Self> {
        let root = Path::new("/sys/fs/cgroup");
        let controllers = std::fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
        if controllers.split_whitespace().any(|c| c == "pids") {
            write(&root.join("cgroup.subtree_control"), "+pids +memory")?;
            let parent = root.join(group);
            std::fs::create_dir_all(&parent)?;
            Self::enable_v2(&parent)?;
            return Ok(Self::V2(parent));
        }
        let pids = root.join("pids").join(group);
        std::fs::create_dir_all(&pids)?;
        let memory = root.join("memory").join(group);
        let memory = std::fs::create_dir_all(&memory).ok().map(|()| memory);
        Ok(Self::V1 { pids, memory })
    }

    fn enable_v2(parent: &Path) -> std::io::Result<()> {
        write(&parent.join("cgroup.subtree_control"), "+pids +memory")
    }

    /// Creates `name`'s cgroup with its limits.
    pub fn create(&self, name: &str, pids_max: i64, memory_bytes: u64) -> Result<SandboxCgroup> {
        let mut dirs = Vec::new();
        let mut make = |dir: PathBuf, limits: &[(&str, String)], required: bool| -> Result<()> {
            std::fs::create_dir_all(&dir).map_err(|e| backend(&dir, e))?;
            for (file, value) in limits {
                let path = dir.join(file);
                if let Err(e) = write(&path, value)
                    && required
                {
                    return Err(backend(&path, e));
                }
            }
            dirs.push(dir);
            Ok(())
        };
        match self {
            Self::V2(parent) => make(
                parent.join(name),
                &[
                    ("pids.max", pids_max.to_string()),
                    ("memory.max", memory_bytes.to_string()),
                    ("memory.swap.max", "0".into()),
                ],
                true,
            )?,
            Self::V1 { pids, memory } => {
                make(pids.join(name), &[("pids.max", pids_max.to_string())], true)?;
                if let Some(memory) = memory {
                    // memsw exists only with swap accounting; the plain limit is what matters.
                    make(
                        memory.join(name),
                        &[
                            ("memory.limit_in_bytes", memory_bytes.to_string()),
                            ("memory.memsw.limit_in_bytes", memory_bytes.to_string()),
                        ],
                        false,
                    )?;
                }
            }
        }
        Ok(SandboxCgroup { dirs })
    }
}

impl SandboxCgroup {
    /// Moves process `pid` (and so everything it starts afterwards) into the cgroup.
    pub fn attach(&self, pid: u32) -> Result<()> {
        for dir in &self.dirs {
            let procs = dir.join("cgroup.procs");
            write(&procs, &pid.to_string()).map_err(|e| backend(&procs, e))?;
        }
        Ok(())
    }

    /// Removes the directories once their processes are gone (retrying briefly, since a
    /// killed process leaves its cgroup a moment after it dies).
    pub async fn remove(self) {
        for dir in self.dirs {
            for _ in 0..20 {
                if std::fs::remove_dir(&dir).is_ok() || !dir.exists() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
