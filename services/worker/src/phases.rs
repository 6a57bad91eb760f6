//! Where a turn's time goes, as one histogram, `hermes_turn_phase_seconds{phase}`: the queue
//! pickup (publish to the worker's start, on the publisher's clock), the claim (session lock
//! and claim), the prompt (the plan: reads, tools, prompt, the user message stored), each model
//! call (timed in `budget.rs`, which every call passes: a review's calls count too), each tool
//! call, and the finish (outcome stored and announced). The load test divides each phase's sum
//! by the turns to print the worker's split (docs/PERFORMANCE.md).

use std::time::{Duration, SystemTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Pickup,
    Claim,
    Prompt,
    Model,
    Tools,
    Finish,
}

impl Phase {
    fn label(self) -> &'static str {
        match self {
            Phase::Pickup => "pickup",
            Phase::Claim => "claim",
            Phase::Prompt => "prompt",
            Phase::Model => "model",
            Phase::Tools => "tools",
            Phase::Finish => "finish",
        }
    }

    pub(crate) fn record(self, took: Duration) {
        metrics::histogram!("hermes_turn_phase_seconds", "phase" => self.label()).record(took.as_secs_f64());
    }

    /// Records the time since `since` (another process's clock: a skewed clock records nothing).
    pub(crate) fn record_since(self, since: SystemTime) {
        if let Ok(took) = SystemTime::now().duration_since(since) {
            self.record(took);
        }
    }
}
