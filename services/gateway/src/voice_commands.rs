//! `/voice`: whether this chat's answers are spoken too (upstream's modes, kept per chat):
//! `/voice on` speaks answers to voice messages, `/voice tts` speaks every answer, `/voice off`
//! is text only (the default), `/voice status` says which, and `/voice` alone turns it on or
//! off. A message that comes while the chat asks for speech marks its turn's reply
//! ([`hermes_core::outbox::Destination::voice_reply`]); the worker speaks the answer.

use hermes_core::VoiceMode;
use hermes_store::{Channel, Route};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::Incoming;
use crate::route::route_for;

const USAGE: &str = "Use /voice on (I answer voice messages with voice), /voice tts (I speak every answer), \
                     /voice off (text only) or /voice status.";

/// The mode `/voice <arg>` asks for, given the chat's mode now; `None`: just tell the mode.
fn asked(arg: &str, now: VoiceMode) -> Result<Option<VoiceMode>, ()> {
    match arg.to_ascii_lowercase().as_str() {
        "" => Ok(Some(if now == VoiceMode::Off { VoiceMode::VoiceOnly } else { VoiceMode::Off })),
        "on" => Ok(Some(VoiceMode::VoiceOnly)),
        "tts" | "all" => Ok(Some(VoiceMode::All)),
        "off" => Ok(Some(VoiceMode::Off)),
        "status" => Ok(None),
        _ => Err(()),
    }
}

fn described(mode: VoiceMode) -> &'static str {
    match mode {
        VoiceMode::Off => "Voice replies are off: I answer in text.",
        VoiceMode::VoiceOnly => "Voice replies are on: I answer your voice messages with a voice message too.",
        VoiceMode::All => "Voice replies are on for everything: I speak every answer.",
    }
}

/// Whether a message in a chat of `mode` gets a spoken answer.
pub(crate) fn wants_voice(mode: VoiceMode, msg: &Incoming) -> bool {
    match mode {
        VoiceMode::Off => false,
        VoiceMode::VoiceOnly => msg.files.iter().any(|f| f.mime.starts_with("audio/")),
        VoiceMode::All => true,
    }
}

impl Gateway {
    /// `/voice ...`.
    pub(crate) async fn voice_command(
        &self,
        channel: &Channel,
        msg: &Incoming,
        arg: &str,
    ) -> Result<String, IngestError> {
        let route = route_for(channel, msg);
        let now = self.voice_mode(channel, &route).await;
        let Ok(asked) = asked(arg.trim(), now) else { return Ok(USAGE.to_owned()) };
        let mode = match asked {
            Some(mode) => {
                self.store
                    .conversations()
                    .set_voice_mode(channel.tenant_id, channel.agent_id, &route.key, mode)
                    .await
                    .map_err(|e| IngestError::new(e.to_string()))?;
                mode
            }
            None => now,
        };
        let cfg = &self.config;
        let unusable = cfg.tts.unusable(cfg.stt.openai_api_key.as_deref());
        Ok(match (mode, unusable) {
            (VoiceMode::Off, _) | (_, None) => described(mode).to_owned(),
            (_, Some(why)) => {
                format!("{} But speech is not available on this installation yet ({why}).", described(mode))
            }
        })
    }

    /// The chat's mode; `Off` when it cannot be read (the answer is still given, in text).
    pub(crate) async fn voice_mode(&self, channel: &Channel, route: &Route) -> VoiceMode {
        self.store.conversations().voice_mode(channel.tenant_id, channel.agent_id, &route.key).await.unwrap_or_else(
            |e| {
                tracing::warn!(error = %e, "cannot read the chat's voice mode; answering in text");
                VoiceMode::Off
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voice_alone_toggles_and_words_choose_the_mode() {
        assert_eq!(asked("", VoiceMode::Off), Ok(Some(VoiceMode::VoiceOnly)));
        assert_eq!(asked("", VoiceMode::All), Ok(Some(VoiceMode::Off)));
        assert_eq!(asked("TTS", VoiceMode::Off), Ok(Some(VoiceMode::All)));
        assert_eq!(asked("status", VoiceMode::All), Ok(None));
        assert_eq!(asked("loud", VoiceMode::Off), Err(()));
    }
}
