//! How long a tenant's data is kept when the tenant sets nothing else (issue 42). Each period
//! is in days, 0 keeping forever; a tenant's own period (`hermesctl tenant retention`) wins.
//! The scheduler deletes what is past it every `scheduler.prune_interval_seconds`, in small
//! batches.

use serde::{Deserialize, Serialize};

use hermes_core::retention::{MAX_DAYS, USAGE_DETAIL_MIN_DAYS};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Sessions this many days after their last activity, with their messages (a chat's whole
    /// conversation, never part of one).
    pub sessions_days: u32,
    /// Finished turns (completed, failed, cancelled) this many days after they ended, with
    /// their streams, questions, stored Responses API objects and files.
    pub turns_days: u32,
    /// The files turns were given (images, documents) this many days after they arrived.
    pub files_days: u32,
    /// Usage detail (one row per model call) this many days after the call, at least
    /// `hermes_core::retention::USAGE_DETAIL_MIN_DAYS` (35); the daily totals stay.
    pub usage_detail_days: u32,
}

impl RetentionConfig {
    /// `Err` naming the setting when a period is out of range.
    pub fn check(&self) -> Result<(), String> {
        let periods = [
            ("sessions_days", self.sessions_days),
            ("turns_days", self.turns_days),
            ("files_days", self.files_days),
            ("usage_detail_days", self.usage_detail_days),
        ];
        if let Some((name, _)) = periods.iter().find(|(_, d)| *d > MAX_DAYS) {
            return Err(format!("retention.{name} is over {MAX_DAYS} days"));
        }
        if self.usage_detail_days != 0 && self.usage_detail_days < USAGE_DETAIL_MIN_DAYS {
            return Err(format!("retention.usage_detail_days must be 0 (keep) or at least {USAGE_DETAIL_MIN_DAYS}"));
        }
        Ok(())
    }
}
