//! Workspace checkpoints: a snapshot of every file under the workspace (hidden and ignored
//! ones too, the daemon's state excepted), stored content-addressed in the state directory so
//! unchanged files cost nothing; restoring writes the snapshot back and removes what was
//! created since. The newest 20 are kept.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use hermes_sandbox_proto::v1::{CheckpointInfo, RestoreResponse};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tonic::Status;

use crate::now_ms;

/// Checkpoints kept.
pub const KEEP: usize = 20;
/// A workspace with more files than this, or more bytes, is not snapshotted.
const MAX_FILES: usize = 100_000;
const MAX_BYTES: u64 = 2 * 1024 * 1024 * 1024;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item {
    File { hash: String, mode: u32, size: u64 },
    Symlink { target: String },
    Dir { mode: u32 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    id: String,
    reason: String,
    created_at_ms: i64,
    items: BTreeMap<String, Item>,
}

impl Manifest {
    fn info(&self) -> CheckpointInfo {
        let (files, bytes) = self.items.values().fold((0u32, 0u64), |(n, b), item| match item {
            Item::File { size, .. } => (n + 1, b + size),
            _ => (n, b),
        });
        CheckpointInfo {
            id: self.id.clone(),
            reason: self.reason.clone(),
            created_at_ms: self.created_at_ms,
            files,
            bytes,
        }
    }
}

/// The workspace's checkpoints.
pub struct Checkpoints {
    workspace: PathBuf,
    state_dir: PathBuf,
    dir: PathBuf,
}

fn fail(what: &str, e: impl std::fmt::Display) -> Status {
    Status::internal(format!("{what}: {e}"))
}

impl Checkpoints {
    pub fn new(workspace: &Path, state_dir: &Path) -> Self {
        Self {
            workspace: workspace.to_path_buf(),
            state_dir: state_dir.to_path_buf(),
            dir: state_dir.join("checkpoints"),
        }
    }

    fn object(&self, hash: &str) -> PathBuf {
        self.dir.join("objects").join(&hash[..2]).join(&hash[2..])
    }

    /// Everything under the workspace, by relative path (the state directory left out).
    fn walk(&self) -> Result<Vec<(String, PathBuf, std::fs::Metadata)>, Status> {
        let mut out = Vec::new();
        let walker = ignore::WalkBuilder::new(&self.workspace)
            .standard_filters(false)
            .follow_links(false)
            .filter_entry({
                let state = self.state_dir.clone();
                move |e| !e.path().starts_with(&state)
            })
            .build();
        for entry in walker.flatten() {
            let path = entry.path().to_path_buf();
            let Ok(rel) = path.strip_prefix(&self.workspace) else { continue };
            if rel.as_os_str().is_empty() {
                continue;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            out.push((rel.display().to_string(), path, meta));
            if out.len() > MAX_FILES {
                return Err(Status::resource_exhausted(format!("the workspace has over {MAX_FILES} files")));
            }
        }
        Ok(out)
    }

    /// Snapshots the workspace now.
    pub fn create(&self, reason: &str) -> Result<CheckpointInfo, Status> {
        let mut items = BTreeMap::new();
        let mut total = 0u64;
        for (rel, path, meta) in self.walk()? {
            let mode = meta.permissions().mode() & 0o7777;
            let item = if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).map_err(|e| fail("cannot read a link", e))?;
                Item::Symlink { target: target.display().to_string() }
            } else if meta.is_dir() {
                Item::Dir { mode }
            } else if meta.is_file() {
                total += meta.len();
                if total > MAX_BYTES {
                    return Err(Status::resource_exhausted("the workspace is over 2 GiB"));
                }
                let Ok(bytes) = std::fs::read(&path) else { continue };
                let hash = format!("{:x}", Sha256::digest(&bytes));
                let object = self.object(&hash);
                if !object.exists() {
                    if let Some(parent) = object.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| fail("cannot store a checkpoint", e))?;
                    }
                    let tmp = object.with_extension("tmp");
                    std::fs::write(&tmp, &bytes).map_err(|e| fail("cannot store a checkpoint", e))?;
                    std::fs::rename(&tmp, &object).map_err(|e| fail("cannot store a checkpoint", e))?;
                }
                Item::File { hash, mode, size: meta.len() }
            } else {
                continue;
            };
            items.insert(rel, item);
        }
        let created_at_ms = now_ms();
        let manifest =
            Manifest { id: format!("cp_{created_at_ms:x}"), reason: reason.to_owned(), created_at_ms, items };
        let manifests = self.dir.join("manifests");
        std::fs::create_dir_all(&manifests).map_err(|e| fail("cannot store a checkpoint", e))?;
        let json = serde_json::to_vec(&manifest).map_err(|e| fail("cannot store a checkpoint", e))?;
        std::fs::write(manifests.join(format!("{}.json", manifest.id)), json)
            .map_err(|e| fail("cannot store a checkpoint", e))?;
        self.prune();
        Ok(manifest.info())
    }

    fn manifests(&self) -> Vec<Manifest> {
        let mut all: Vec<Manifest> = std::fs::read_dir(self.dir.join("manifests"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| std::fs::read(e.path()).ok())
                    .filter_map(|b| serde_json::from_slice(&b).ok())
                    .collect()
            })
            .unwrap_or_default();
        all.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then_with(|| b.id.cmp(&a.id)));
        all
    }

    /// Newest first.
    pub fn list(&self) -> Vec<CheckpointInfo> {
        self.manifests().iter().map(Manifest::info).collect()
    }

    /// Drops all but the newest [`KEEP`] and the objects nothing refers to any more.
    fn prune(&self) {
        let all = self.manifests();
        for old in all.iter().skip(KEEP) {
            let _ = std::fs::remove_file(self.dir.join("manifests").join(format!("{}.json", old.id)));
        }
        let live: HashSet<&str> = all
            .iter()
            .take(KEEP)
            .flat_map(|m| m.items.values())
            .filter_map(|i| match i {
                Item::File { hash, .. } => Some(hash.as_str()),
                _ => None,
            })
            .collect();
        let Ok(buckets) = std::fs::read_dir(self.dir.join("objects")) else { return };
        for bucket in buckets.flatten() {
            let prefix = bucket.file_name().to_string_lossy().into_owned();
            let Ok(objects) = std::fs::read_dir(bucket.path()) else { continue };
            for object in objects.flatten() {
                let hash = format!("{prefix}{}", object.file_name().to_string_lossy());
                if !live.contains(hash.as_str()) {
                    let _ = std::fs::remove_file(object.path());
                }
            }
        }
    }

    /// Puts the workspace back as checkpoint `id` (the newest when empty) left it.
    pub fn restore(&self, id: &str) -> Result<RestoreResponse, Status> {
        let all = self.manifests();
        let manifest = if id.is_empty() { all.first() } else { all.iter().find(|m| m.id == id) }.ok_or_else(|| {
            Status::not_found(if id.is_empty() { "no checkpoint yet".into() } else { format!("no checkpoint {id}") })
        })?;
        // Remove what the checkpoint does not have, deepest first.
        let mut current = self.walk()?;
        current.sort_by(|a, b| b.0.cmp(&a.0));
        let mut removed = 0;
        for (rel, path, meta) in &current {
            let keep = matches!(
                (manifest.items.get(rel), meta.is_dir() && !meta.file_type().is_symlink()),
                (Some(Item::Dir { .. }), true) | (Some(Item::File { .. } | Item::Symlink { .. }), false)
            );
            if !keep {
                let gone = if meta.is_dir() && !meta.file_type().is_symlink() {
                    std::fs::remove_dir_all(path)
                } else {
                    std::fs::remove_file(path)
                };
                if gone.is_ok() {
                    removed += 1;
                }
            }
        }
        let mut restored = 0;
        for (rel, item) in &manifest.items {
            let path = self.workspace.join(rel);
            match item {
                Item::Dir { mode } => {
                    std::fs::create_dir_all(&path).map_err(|e| fail("cannot restore", e))?;
                    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode));
                }
                Item::Symlink { target } => {
                    if std::fs::read_link(&path).map(|t| t.display().to_string() != *target).unwrap_or(true) {
                        let _ = std::fs::remove_file(&path);
                        std::os::unix::fs::symlink(target, &path).map_err(|e| fail("cannot restore", e))?;
                        restored += 1;
                    }
                }
                Item::File { hash, mode, .. } => {
                    let same =
                        std::fs::read(&path).map(|b| format!("{:x}", Sha256::digest(&b)) == *hash).unwrap_or(false);
                    if !same {
                        if let Some(parent) = path.parent() {
                            std::fs::create_dir_all(parent).map_err(|e| fail("cannot restore", e))?;
                        }
                        let bytes =
                            std::fs::read(self.object(hash)).map_err(|e| fail("a checkpoint object is missing", e))?;
                        let tmp = path.with_file_name(format!(
                            ".{}.hermes-restore",
                            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                        ));
                        std::fs::write(&tmp, bytes).map_err(|e| fail("cannot restore", e))?;
                        std::fs::rename(&tmp, &path).map_err(|e| fail("cannot restore", e))?;
                        restored += 1;
                    }
                    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode));
                }
            }
        }
        Ok(RestoreResponse { checkpoint: Some(manifest.info()), restored, removed })
    }
}
