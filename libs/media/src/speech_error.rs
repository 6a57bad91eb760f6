//! [`SpeechError`], why no speech came. Its own file because both the speaker
//! (`speech.rs`) and the providers it calls (`edge.rs`) return it: the providers import it
//! from here, not from the speaker that calls them.

/// Why no speech came.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpeechError {
    /// Turned off, or the chosen provider lacks its key.
    #[error("{0}")]
    NotConfigured(String),
    /// Nothing to say once Markdown and code are out.
    #[error("there is no text to speak")]
    Empty,
    #[error("the speech service failed: {0}")]
    Failed(String),
}
