//! Metering: every answered model call is reported with the endpoint that answered it (after
//! any fallback), the key it used and its token counts, so usage is recorded per call.

use std::sync::Mutex;

use hermes_core::ModelCall;

/// Receives each answered call. Never blocks (the call is on the turn's path).
pub trait CallMeter: Send + Sync {
    fn record(&self, call: ModelCall);
}

/// Keeps calls in memory until the owner stores them.
#[derive(Debug, Default)]
pub struct CallBuffer {
    calls: Mutex<Vec<ModelCall>>,
}

impl CallBuffer {
    /// Takes the calls recorded so far.
    pub fn drain(&self) -> Vec<ModelCall> {
        self.calls.lock().map(|mut c| std::mem::take(&mut *c)).unwrap_or_default()
    }
}

impl CallMeter for CallBuffer {
    fn record(&self, call: ModelCall) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.push(call);
        }
    }
}
