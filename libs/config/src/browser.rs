//! The `browser` toolset (`[browser]`): a headless Chromium in the agent's sandbox.

use serde::{Deserialize, Serialize};

/// `[browser]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BrowserConfig {
    /// Whether the sandbox image has the browser (the `browser` target of
    /// `deploy/sandbox/Dockerfile`). The installation cannot tell from here, so the operator
    /// says so; new agents get the `browser` toolset by default only then.
    pub in_sandbox_image: bool,
    /// The browser in the sandbox image (a Chromium-family program on its PATH, or a path).
    pub command: String,
    /// Added to the browser's flags (upstream's `AGENT_BROWSER_ARGS`).
    pub extra_args: Vec<String>,
    /// A browser not used for this long is closed (upstream's `BROWSER_INACTIVITY_TIMEOUT`).
    pub inactivity_seconds: u64,
    /// Snapshots longer than this are cut (upstream's 15,000 characters).
    pub snapshot_chars: usize,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        Self {
            in_sandbox_image: false,
            command: "chromium".into(),
            extra_args: Vec::new(),
            inactivity_seconds: 120,
            snapshot_chars: 15_000,
        }
    }
}
