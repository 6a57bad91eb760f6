//! Metering: every answered model call is reported with the endpoint that answered it (after
//! any fallback), the key it used and its token counts, so usage is recorded per call.

use std::sync::Mutex;

use hermes_core::Usage;

/// One answered model call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRecord {
    /// Why the call was made: `main`, `auxiliary` (summaries), `subagent`.
    pub purpose: hermes_core::CallPurpose,
    pub provider: String,
    pub model: String,
    /// The pooled key's id, when a key was used.
    pub key_id: Option<String>,
    pub usage: Usage,
    /// From the request to the answer's last byte, retries of this endpoint included.
    pub latency_ms: u64,
}

/// Receives each answered call. Never blocks (the call is on the turn's path).
pub trait CallMeter: Send + Sync {
    fn record(&self, call: CallRecord);
}

/// Keeps calls in memory until the owner stores them.
#[derive(Debug, Default)]
pub struct CallBuffer {
    calls: Mutex<Vec<CallRecord>>,
}

impl CallBuffer {
    /// Takes the calls recorded so far.
    pub fn drain(&self) -> Vec<CallRecord> {
        self.calls.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default()
    }
}

impl CallMeter for CallBuffer {
    fn record(&self, call: CallRecord) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }
}
