//! Media the agent makes through the operator's services: [`ImageGenerator`] (the
//! `image_generate` tool's FAL.ai or OpenAI-compatible images API) and [`Speaker`]
//! (`text_to_speech` and voice replies: Edge TTS, OpenAI, ElevenLabs).
//!
//! Two clients, two trust rules, as in `hermes-web`: the configured service is reached by a
//! client that trusts its host (an operator may run one inside the cluster); anything the
//! service answers with a URL to (FAL's result files) is downloaded by a client that reaches
//! public addresses only, unless the file lives on the service's own host. Every body is read
//! with a byte cap.

mod edge;
mod image_gen;
mod speech;
mod speech_error;

pub use image_gen::{AspectRatio, GeneratedImage, ImageGenError, ImageGenerator, MAX_IMAGE_BYTES};
pub use speech::{Speaker, Speech, cut, sniff_audio, speakable};
pub use speech_error::SpeechError;

/// The `host:port` of a URL, as the outbound policy lists trusted hosts.
fn authority(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    Some(format!("{}:{}", parsed.host_str()?, parsed.port_or_known_default()?))
}

/// A service's error body said briefly: OpenAI's `error.message`, FAL's `detail` (a string or
/// a list of `{msg}`), else the start of the body.
fn service_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let message = parsed["error"]["message"]
        .as_str()
        .or_else(|| parsed["error"].as_str())
        .or_else(|| parsed["detail"].as_str())
        .or_else(|| parsed["detail"][0]["msg"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| text.trim().to_owned());
    message.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn service_errors_are_said_in_the_services_own_words() {
        assert_eq!(
            super::service_message(br#"{"error":{"message":"Billing hard limit reached"}}"#),
            "Billing hard limit reached"
        );
        assert_eq!(
            super::service_message(br#"{"detail":[{"msg":"prompt is too long","loc":["body"]}]}"#),
            "prompt is too long"
        );
        assert_eq!(super::service_message(b"Bad Gateway"), "Bad Gateway");
    }
}
