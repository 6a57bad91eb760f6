//! Curated memory's settings (`[memory]`), as Hermes's `memory.*`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Cap of an agent's MEMORY document, in characters.
    pub memory_char_limit: usize,
    /// Cap of each user's USER profile, in characters.
    pub user_char_limit: usize,
    /// Every this many user turns of a session, the model is reminded (for that call only) to
    /// save what is worth keeping; 0 never.
    pub nudge_interval: usize,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self { memory_char_limit: 2_200, user_char_limit: 1_375, nudge_interval: 10 }
    }
}

/// Skills' settings (`[skills]`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Every this many user turns, the model is reminded (for that call only) to save a
    /// workflow that worked as a skill; 0 never.
    pub nudge_interval: usize,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self { nudge_interval: 10 }
    }
}

/// The learning loop (`[learning]`): background reviews after turns, and the curator.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LearningConfig {
    /// Review turns in the background (memory and skills updates by a restricted agent).
    pub review_enabled: bool,
    /// A turn with at least this many tool calls is reviewed.
    pub review_min_tool_calls: usize,
    /// Reviews started per tenant per hour, at most.
    pub reviews_per_tenant_per_hour: u32,
    /// Steps a review may take.
    pub review_max_iterations: u32,
    /// The curator visits agents idle this long...
    pub curator_idle_minutes: u64,
    /// ...whose last visit is this old.
    pub curator_every_days: u64,
    /// Unused skills become stale after this many days, and are archived after...
    pub stale_after_days: u64,
    pub archive_after_days: u64,
}

impl Default for LearningConfig {
    fn default() -> Self {
        Self {
            review_enabled: true,
            review_min_tool_calls: 5,
            reviews_per_tenant_per_hour: 30,
            review_max_iterations: 16,
            curator_idle_minutes: 120,
            curator_every_days: 7,
            stale_after_days: 30,
            archive_after_days: 90,
        }
    }
}
