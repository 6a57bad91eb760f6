//! What workers report about the sandboxes they see, for the operators' view of the cluster:
//! written by each worker's sandbox reaper, kept in Redis for a few reaper rounds, read by the
//! admin plane. A report is a picture for people, never an input to a decision.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A live sandbox as a reaper last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveSandbox {
    pub tenant_id: Uuid,
    pub agent_id: Uuid,
    /// `docker`, `local` or `kubernetes` (a label for people).
    pub backend: String,
    /// The container, process or pod name.
    pub name: String,
    pub running_execs: u32,
    pub running_processes: u32,
    /// Seconds since its last request or running command.
    pub idle_secs: u64,
}

/// One worker's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxReport {
    pub worker: String,
    pub at: chrono::DateTime<chrono::Utc>,
    pub sandboxes: Vec<LiveSandbox>,
}
