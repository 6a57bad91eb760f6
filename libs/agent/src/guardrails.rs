//! Per-turn guardrails against tool loops (thresholds from Hermes):
//! - the same tool with the same arguments failing: warn at 2, block at 5;
//! - the same tool failing with any arguments, in a row: warn at 3, halt the turn at 8;
//! - a read-only tool returning the same result for the same arguments: warn at 2, block at 5.
//!
//! [`Guardrails::before`] decides whether a call may run; [`Guardrails::after`] records what it
//! did and may add guidance for the model or halt the turn.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

/// Thresholds; the defaults are upstream's.
#[derive(Debug, Clone, Copy)]
pub struct GuardrailLimits {
    pub exact_failure_warn: u32,
    pub exact_failure_block: u32,
    pub tool_failure_warn: u32,
    pub tool_failure_halt: u32,
    pub no_progress_warn: u32,
    pub no_progress_block: u32,
    /// Whether BLOCK and HALT are enforced (a tenant may keep only the warnings).
    pub hard_stop: bool,
}

impl Default for GuardrailLimits {
    fn default() -> Self {
        Self {
            exact_failure_warn: 2,
            exact_failure_block: 5,
            tool_failure_warn: 3,
            tool_failure_halt: 8,
            no_progress_warn: 2,
            no_progress_block: 5,
            hard_stop: true,
        }
    }
}

/// What to do about a tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it / keep its result as is.
    Allow,
    /// Keep the result and append this guidance for the model.
    Warn(String),
    /// Do not run it; tell the model this instead.
    Block(String),
    /// End the turn; tell the user this.
    Halt(String),
}

fn fingerprint(parts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    for p in parts {
        p.hash(&mut h);
    }
    h.finish()
}

/// Arguments compared by meaning, not spelling: `{"a":1, "b":2}` equals `{"b":2,"a":1}`.
fn canonical_args(raw: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(v) => v.to_string(),
        Err(_) => raw.trim().to_owned(),
    }
}

/// The counters of one turn.
#[derive(Debug, Default)]
pub struct Guardrails {
    limits: GuardrailLimits,
    /// (tool, args) -> failures since its last success.
    exact_failures: HashMap<u64, u32>,
    /// tool -> failures in a row.
    tool_failures: HashMap<String, u32>,
    /// (tool, args) of a read-only tool -> (hash of the last result, times seen in a row).
    same_results: HashMap<u64, (u64, u32)>,
}

impl Guardrails {
    pub fn new(limits: GuardrailLimits) -> Self {
        Self { limits, ..Default::default() }
    }

    /// Before running `tool` with `args`: `Allow` or `Block`.
    pub fn before(&self, tool: &str, args: &str) -> Decision {
        if !self.limits.hard_stop {
            return Decision::Allow;
        }
        let key = fingerprint(&[tool, &canonical_args(args)]);
        let failures = self.exact_failures.get(&key).copied().unwrap_or(0);
        if failures + 1 >= self.limits.exact_failure_block {
            return Decision::Block(format!(
                "Blocked: `{tool}` with these exact arguments has already failed {failures} times in this turn. \
                 Do not repeat it; change the arguments, try another tool, or tell the user what is wrong."
            ));
        }
        if let Some((_, seen)) = self.same_results.get(&key)
            && seen + 1 >= self.limits.no_progress_block
        {
            return Decision::Block(format!(
                "Blocked: `{tool}` with these arguments has returned the same result {seen} times. \
                 Calling it again will not change anything; use the result you have."
            ));
        }
        Decision::Allow
    }

    /// After running `tool`: records whether it failed and what it returned.
    pub fn after(&mut self, tool: &str, args: &str, read_only: bool, ok: bool, result: &str) -> Decision {
        let key = fingerprint(&[tool, &canonical_args(args)]);
        if !ok {
            self.same_results.remove(&key);
            let exact = self.exact_failures.entry(key).or_insert(0);
            *exact += 1;
            let exact = *exact;
            let in_a_row = self.tool_failures.entry(tool.to_owned()).or_insert(0);
            *in_a_row += 1;
            let in_a_row = *in_a_row;
            if self.limits.hard_stop && in_a_row >= self.limits.tool_failure_halt {
                return Decision::Halt(format!(
                    "I stopped because the `{tool}` tool failed {in_a_row} times in a row in this turn."
                ));
            }
            if exact == self.limits.exact_failure_warn {
                return Decision::Warn(format!(
                    "[Guidance: this exact `{tool}` call has now failed {exact} times. Repeating it will fail again; \
                     read the error and change your approach.]"
                ));
            }
            if in_a_row == self.limits.tool_failure_warn {
                return Decision::Warn(format!(
                    "[Guidance: `{tool}` has failed {in_a_row} times in a row. Step back and check your assumptions \
                     before calling it again.]"
                ));
            }
            return Decision::Allow;
        }
        self.exact_failures.remove(&key);
        self.tool_failures.remove(tool);
        if read_only {
            let result_hash = fingerprint(&[result]);
            let entry = self.same_results.entry(key).or_insert((result_hash, 0));
            if entry.0 == result_hash {
                entry.1 += 1;
            } else {
                *entry = (result_hash, 1);
            }
            if entry.1 == self.limits.no_progress_warn {
                return Decision::Warn(format!(
                    "[Guidance: you already saw this exact result of `{tool}`; it will not change if you ask again.]"
                ));
            }
        }
        Decision::Allow
    }
}

#[cfg(test)]
#[path = "guardrails_tests.rs"]
mod tests;
