//! [`TurnStatus`], a turn's state as stored and shown. Its own file because the turn
//! lifecycle (`turns.rs`) and the views that read a turn's state back (`responses.rs`, the
//! Runs API's overview) both need it, and `turns.rs` records a response with the turn.

use crate::{Result, StoreError};

/// A turn's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    Queued,
    Running,
    /// Parked until the user answers an interaction (or it expires).
    Waiting,
    Completed,
    Failed,
    Cancelled,
}

impl TurnStatus {
    pub(crate) fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "queued" => Self::Queued,
            "running" => Self::Running,
            "waiting" => Self::Waiting,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => {
                return Err(StoreError::Corrupt(format!("unknown turn status {other:?}")));
            }
        })
    }

    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the turn has ended.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}
