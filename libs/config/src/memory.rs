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
