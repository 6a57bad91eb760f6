//! A tenant's whole data: its export as one `.tar.gz` archive, and its deletion.
//!
//! The archive holds:
//! - `rows/<table>/<nnnn>.jsonl`: every row the tenant owns in every table (the tables read
//!   from the schema, so a new one is exported without anyone remembering to), one JSON object
//!   a line, in parts of at most [`PART_BYTES`]; sealed secrets and credential hashes are
//!   withheld (`hermes_store::tenant_tables::WITHHELD`);
//! - `skills/<agent>/<skill>/SKILL.md` and the skill's other files (`_tenant` for the
//!   tenant's own skills), as the agent wrote them;
//! - `memory/<agent>/MEMORY.md` and `memory/<agent>/users/<user>.md`, entries separated as
//!   the agent's memory files separate them;
//! - `manifest.json`, the last entry (an archive without it was cut short): the tenant, when,
//!   the schema's version, every table's row count and what was withheld.
//!
//! Deletion is `hermes_store`'s three steps (`system::tenant_deletion`); each caller then
//! deletes the tenant's keys in Redis. Sandboxes and their volumes go when each worker's reaper next finds their
//! tenant gone.

use std::collections::BTreeMap;

use chrono::Utc;
use flate2::Compression;
use flate2::write::GzEncoder;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use hermes_core::TenantId;
use hermes_store::admin::Audit;
use hermes_store::system::tenant_deletion::Removed;
use hermes_store::{Store, StoreError, Tenant};

use crate::{OpsError, Result};

/// A part of a table's rows is cut after this many bytes.
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// Rows read from the database at a time (a table whose rows hold files: one).
const FETCH_ROWS: u32 = 1_000;
/// A reader that takes no bytes for this long ends the export (its cursors hold a
/// transaction open).
const STALLED_READER: std::time::Duration = std::time::Duration::from_secs(60);
/// Rows deleted by one statement.
const DELETE_BATCH: i64 = 1_000;
/// What the archive's manifest calls its format.
pub const FORMAT: &str = "hermes-tenant-export/1";

/// What an export wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exported {
    /// Rows per table (every table holding a tenant's rows, 0 included).
    pub tables: BTreeMap<String, u64>,
    pub skill_files: usize,
    pub memory_stores: usize,
    /// Bytes of the archive.
    pub bytes: u64,
}

/// The archive being written: a tar stream compressed as it goes, its bytes handed to the
/// writer after each entry, so memory holds one part at most.
struct Archive<'w, W: AsyncWrite + Unpin + ?Sized> {
    tar: tar::Builder<GzEncoder<Vec<u8>>>,
    out: &'w mut W,
    bytes: u64,
    at: u64,
    /// Paths written so far: names made safe can meet (`a b` and `a_b`), and the second is
    /// written as `~2` rather than over the first when unpacked.
    paths: std::collections::HashSet<String>,
}

impl<W: AsyncWrite + Unpin + ?Sized> Archive<'_, W> {
    async fn add(&mut self, path: &str, data: &[u8]) -> Result<()> {
        let mut path = path.to_owned();
        let mut n = 1;
        while !self.paths.insert(path.clone()) {
            n += 1;
            path = format!("{path}~{n}");
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(self.at);
        header.set_entry_type(tar::EntryType::Regular);
        self.tar.append_data(&mut header, &path, data).map_err(io_error)?;
        let ready = std::mem::take(self.tar.get_mut().get_mut());
        self.send(&ready).await
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<()> {
        let stalled = || std::io::Error::new(std::io::ErrorKind::TimedOut, "the reader took nothing for a minute");
        tokio::time::timeout(STALLED_READER, self.out.write_all(bytes))
            .await
            .map_err(|_| io_error(stalled()))?
            .map_err(io_error)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    async fn finish(self) -> Result<u64> {
        let gz = self.tar.into_inner().map_err(io_error)?;
        let rest = gz.finish().map_err(io_error)?;
        self.out.write_all(&rest).await.map_err(io_error)?;
        self.out.flush().await.map_err(io_error)?;
        Ok(self.bytes + rest.len() as u64)
    }
}

fn io_error(e: std::io::Error) -> OpsError {
    OpsError::Store(StoreError::Invalid(format!("cannot write the archive: {e}")))
}

/// Writes `tenant`'s archive to `out`.
pub async fn export<W: AsyncWrite + Unpin + ?Sized>(store: &Store, tenant: &Tenant, out: &mut W) -> Result<Exported> {
    let at = u64::try_from(Utc::now().timestamp()).unwrap_or_default();
    let tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    let mut archive = Archive { tar, out, bytes: 0, at, paths: Default::default() };
    let tables = export_rows(store, tenant.id, &mut archive).await?;
    let skills = store.tenancy().export_skill_files(tenant.id).await?;
    for file in &skills {
        let agent = file.agent.as_deref().unwrap_or("_tenant");
        let path = format!("skills/{}/{}/{}", component(agent), component(&file.skill), relative_path(&file.path));
        archive.add(&path, file.content.as_bytes()).await?;
    }
    let memory = store.tenancy().export_memory(tenant.id).await?;
    for stored in &memory {
        let path = match stored.target.as_str() {
            "user" => format!("memory/{}/users/{}.md", component(&stored.agent), component(&stored.user_key)),
            _ => format!("memory/{}/MEMORY.md", component(&stored.agent)),
        };
        archive.add(&path, stored.entries.join(ENTRY_DELIMITER).as_bytes()).await?;
    }
    let withheld: Vec<String> =
        hermes_store::tenant_tables::WITHHELD.iter().map(|(table, column)| format!("{table}.{column}")).collect();
    let manifest = serde_json::json!({
        "format": FORMAT,
        "tenant": { "id": tenant.id, "name": tenant.name, "created_at": tenant.created_at },
        "exported_at": Utc::now(),
        "schema_version": hermes_store::MIGRATOR.iter().map(|m| m.version).max(),
        "tables": tables,
        "withheld_columns": withheld,
        "skill_files": skills.len(),
        "memory_stores": memory.len(),
        "not_included": "the files in the agents' sandbox workspaces",
    });
    let manifest = serde_json::to_vec_pretty(&manifest).unwrap_or_default();
    archive.add("manifest.json", &manifest).await?;
    let bytes = archive.finish().await?;
    Ok(Exported { tables, skill_files: skills.len(), memory_stores: memory.len(), bytes })
}

/// The separator of entries in an agent's memory files (upstream's `§` line).
const ENTRY_DELIMITER: &str = "\n§\n";

async fn export_rows<W: AsyncWrite + Unpin + ?Sized>(
    store: &Store,
    tenant: TenantId,
    archive: &mut Archive<'_, W>,
) -> Result<BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for table in store.tenancy().export_tables(tenant).await? {
        let mut cursor = store.tenancy().export_rows(tenant, &table).await?;
        let fetch = if table.large_rows { 1 } else { FETCH_ROWS };
        let (mut part, mut buffer, mut rows) = (0u32, Vec::new(), 0u64);
        loop {
            let batch = cursor.next_batch(fetch).await?;
            let done = batch.is_empty();
            for row in batch {
                rows += 1;
                buffer.extend_from_slice(row.as_bytes());
                buffer.push(b'\n');
                if buffer.len() >= PART_BYTES {
                    part += 1;
                    archive.add(&format!("rows/{}/{part:04}.jsonl", table.name), &buffer).await?;
                    buffer.clear();
                }
            }
            if done {
                if !buffer.is_empty() {
                    part += 1;
                    archive.add(&format!("rows/{}/{part:04}.jsonl", table.name), &buffer).await?;
                }
                break;
            }
        }
        counts.insert(table.name.clone(), rows);
    }
    Ok(counts)
}

/// A name made safe as one component of an archive's path.
fn component(name: &str) -> String {
    let safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    match safe.as_str() {
        "" | "." | ".." => "_".to_owned(),
        _ => safe,
    }
}

/// A path inside a skill's folder made safe component by component.
fn relative_path(path: &str) -> String {
    let parts: Vec<String> = path.split('/').filter(|p| !p.is_empty()).map(component).collect();
    if parts.is_empty() { "_".to_owned() } else { parts.join("/") }
}

/// What a deletion removed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Deleted {
    pub tenant: TenantId,
    pub name: String,
    /// Rows per table.
    pub removed: Removed,
}

/// Step 1 of a deletion (every way into the tenant removed, the tenant marked); what the
/// admin API answers before the rest runs in the background.
pub async fn begin_delete(store: &Store, by: &Audit, tenant: TenantId) -> Result<(String, Removed)> {
    store
        .system()
        .begin_tenant_deletion(tenant, by)
        .await
        .map_err(|e| OpsError::missing(e, hermes_core::ErrorCode::TenantNotFound, "tenant"))
}

/// Deletes `tenant` entirely (all three steps); safe to run again on a deletion that stopped
/// half way, and at the same time as another run of it. The caller then forgets the tenant's
/// keys in Redis (`hermes_cache::Cache::forget_tenant`).
pub async fn delete(store: &Store, by: &Audit, tenant: TenantId) -> Result<Deleted> {
    let (name, mut removed) = begin_delete(store, by, tenant).await?;
    let mut attempts = 0;
    loop {
        for (table, n) in store.system().purge_tenant_rows(tenant, DELETE_BATCH).await? {
            *removed.entry(table).or_default() += n;
        }
        match store.system().finish_tenant_deletion(tenant, by, &removed).await {
            Ok(()) => break,
            // A turn that was already running wrote a row after its table was emptied: it
            // was asked to stop, and gets a moment to.
            Err(StoreError::Busy(_)) if attempts < 5 => {
                attempts += 1;
                tokio::time::sleep(std::time::Duration::from_secs(attempts)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Deleted { tenant, name, removed })
}
