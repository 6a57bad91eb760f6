//! The one error of taking a chat message in, shared by the gateway commands that answer
//! one: storage failed for a moment, and the platform should deliver the message again.

/// Why a message could not be taken in now (the platform should deliver it again).
#[derive(Debug, thiserror::Error)]
#[error("cannot take the message in: {0}")]
pub struct IngestError(String);

impl IngestError {
    pub(crate) fn new(why: String) -> Self {
        Self(why)
    }
}
