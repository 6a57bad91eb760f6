//! `Speaker` against the scripted speech services (`hermes_testkit::tts`): each provider gets
//! its own request shape and key, text is made speakable and cut first, and failures say why.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

use hermes_config::{TtsConfig, TtsProvider};
use hermes_media::{Speaker, SpeechError};
use hermes_testkit::tts::SpeechApi;

fn speaker(config: TtsConfig, voice_key: Option<&str>) -> Speaker {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Speaker::new(&config, voice_key, &[]).expect("client")
}

/// `provider` speaking through `api` (every provider's address is the scripted one).
fn through(api: &SpeechApi, provider: TtsProvider) -> TtsConfig {
    TtsConfig {
        provider,
        edge_url: api.edge_url(),
        openai_base_url: api.openai_base_url(),
        elevenlabs_base_url: api.elevenlabs_base_url(),
        ..TtsConfig::default()
    }
}

#[tokio::test]
async fn edge_speaks_the_words_in_its_voice_with_the_browsers_token_and_needs_no_key() {
    let api = SpeechApi::start().await.unwrap();
    let config = TtsConfig { edge_url: api.edge_url(), speed: 1.25, ..TtsConfig::default() };
    let speech = speaker(config, None)
        .speak("**Done**: the report is in [the folder](https://x.example/f) & sent.")
        .await
        .unwrap();
    assert_eq!((speech.mime, speech.is_voice()), ("audio/mpeg", false), "Edge's default MP3 is an audio file");
    assert!(speech.bytes.ends_with(b"Done: the report is in the folder &amp; sent."), "the words, XML-escaped");
    let seen = &api.requests()[0];
    assert_eq!(seen.service, "edge");
    assert_eq!(seen.detail["voice"], "Microsoft Server Speech Text to Speech Voice (en-US, AriaNeural)");
    assert_eq!(
        (seen.detail["rate"].as_str(), seen.detail["format"].as_str()),
        (Some("+25%"), Some("audio-24khz-48kbitrate-mono-mp3"))
    );
    let query = seen.detail["query"].as_str().unwrap();
    assert!(query.contains("TrustedClientToken=TESTTOKEN&ConnectionId=") && query.contains("&Sec-MS-GEC="), "{query}");

    // An Opus format makes a voice bubble.
    let opus =
        TtsConfig { edge_url: api.edge_url(), edge_format: "ogg-24khz-16bit-mono-opus".into(), ..TtsConfig::default() };
    assert!(speaker(opus, None).speak("Hello.").await.unwrap().is_voice());
    let broken = TtsConfig { edge_url: api.edge_url(), ..TtsConfig::default() };
    assert!(
        matches!(speaker(broken, None).speak("CRASH now").await, Err(SpeechError::Failed(m)) if m.contains("no audio"))
    );
}

#[tokio::test]
async fn openai_takes_upstreams_shared_voice_key_and_answers_opus_for_a_voice_bubble() {
    let api = SpeechApi::start().await.unwrap();
    let config = TtsConfig { max_text_length: Some(20), ..through(&api, TtsProvider::Openai) };
    let unset = speaker(config.clone(), None).speak("hi").await.unwrap_err();
    assert!(matches!(unset, SpeechError::NotConfigured(m) if m.contains("VOICE_TOOLS_OPENAI_KEY")));
    let speech =
        speaker(config.clone(), Some("sk-voice")).speak("First sentence here. Second one is long.").await.unwrap();
    assert!(speech.is_voice());
    assert_eq!(speech.chars, "First sentence here.".len(), "cut to the limit at a sentence end, before the call");
    let seen = &api.requests()[0];
    assert_eq!(seen.key.as_deref(), Some("Bearer sk-voice"));
    assert_eq!(
        (seen.detail["model"].as_str(), seen.detail["voice"].as_str()),
        (Some("gpt-4o-mini-tts"), Some("alloy"))
    );
    assert_eq!(seen.detail["response_format"], "opus");
    let failed = speaker(config, Some("sk-voice")).speak("CRASH").await.unwrap_err();
    assert_eq!(failed, SpeechError::Failed("HTTP 500: boom".into()));
    assert_eq!(speaker(TtsConfig::default(), None).speak("```\ncode only\n```").await.unwrap_err(), SpeechError::Empty);
}

#[tokio::test]
async fn elevenlabs_gets_its_voice_model_and_key() {
    let api = SpeechApi::start().await.unwrap();
    let config = TtsConfig { elevenlabs_api_key: Some("xi-secret".into()), ..through(&api, TtsProvider::Elevenlabs) };
    let operator = speaker(config, None);
    let speech = operator.speak("Bonjour.").await.unwrap();
    assert!(speech.is_voice());
    assert_eq!((speech.model.as_str(), speech.chars), ("eleven_multilingual_v2", 8), "what its price is found by");
    let seen = &api.requests()[0];
    assert_eq!(seen.key.as_deref(), Some("xi-secret"));
    assert_eq!(seen.detail["voice_id"], "pNInz6obpgDQGcFmaJgB");
    assert_eq!(seen.detail["body"]["model_id"], "eleven_multilingual_v2");
    // A team's own key replaces the operator's for its calls only.
    operator.with_keys(None, Some("xi-team".into())).speak("Salut.").await.unwrap();
    operator.speak("Encore.").await.unwrap();
    let keys: Vec<Option<String>> = api.requests().into_iter().map(|r| r.key).collect();
    assert_eq!(keys, [Some("xi-secret".into()), Some("xi-team".into()), Some("xi-secret".into())]);
}
