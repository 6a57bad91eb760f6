//! A cron job's timing as it is stored (read and checked by `hermes-schedule`, kept by the
//! store): here so both can name it without depending on each other.

use chrono::{DateTime, Utc};

/// When a job runs: its schedule as stored (reading it again gives the same schedule), its
/// kind (`interval`, `cron`, `once`), how people see it, its time zone, how many runs it makes
/// (`None`: forever), and its first run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTiming {
    pub schedule: String,
    pub schedule_kind: String,
    pub schedule_display: String,
    pub timezone: String,
    pub repeat_times: Option<i32>,
    pub next_run_at: DateTime<Utc>,
}
