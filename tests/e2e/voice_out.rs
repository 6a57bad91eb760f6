//! Voice out end to end. `/voice on` in a Telegram chat: a voice note is transcribed,
//! answered in text and spoken back as a voice bubble (OpenAI speech, Opus); a typed message
//! gets text only; `/voice status` and `/voice off` say and change the mode, kept per chat. `text_to_speech` through Edge TTS (no key) reaches the chat as an audio file.

use serde_json::{Value, json};

use hermes_config::TtsProvider;
use hermes_testkit::ScriptedReply;
use hermes_testkit::speech::SpeechToText;
use hermes_testkit::tts::{SpeechApi, fake_audio};

use crate::harness::{Roles, TestEnv, wait_until};
use crate::telegram::{Pod, TOKEN, exchange, open_bot, open_bot_with_tools, sent};

#[tokio::test]
async fn with_voice_on_a_voice_note_is_answered_with_a_voice_bubble_and_text_only_gets_text() {
    let stt = SpeechToText::start().await.unwrap();
    let tts = SpeechApi::start().await.unwrap();
    let (stt_base, tts_base) = (stt.base_url(), tts.openai_base_url());
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.stt.base_url = Some(stt_base);
        c.stt.openai_api_key = Some("sk-voice".into());
        c.tts.provider = TtsProvider::Openai;
        c.tts.openai_base_url = tts_base;
    })
    .await;
    let (tg, _) = open_bot(&env).await;
    let pod = Pod::start(&env).await;

    tg.user_says(TOKEN, 42, "/voice on");
    assert_eq!(
        sent(&tg, 1).await[0].text,
        "Voice replies are on: I answer your voice messages with a voice message too."
    );
    env.llm.push(ScriptedReply::text("**Booked**: room 4, Tuesday at ten."));
    tg.user_sends_voice(TOKEN, 42, "voice-1", b"SPEECH:book a room for Tuesday");
    assert_eq!(sent(&tg, 2).await[1].text, "<b>Booked</b>: room 4, Tuesday at ten.");
    let bubble = wait_until("the voice bubble", async || tg.uploads(TOKEN).into_iter().next()).await;
    assert_eq!((bubble.method.as_str(), bubble.mime.as_str()), ("sendVoice", "audio/ogg"));
    assert_eq!(bubble.data, fake_audio(true, "Booked: room 4, Tuesday at ten."), "the answer, spoken without Markdown");
    let spoken = &tts.requests()[0];
    assert_eq!(
        (spoken.key.as_deref(), spoken.detail["response_format"].as_str()),
        (Some("Bearer sk-voice"), Some("opus"))
    );
    // Metered like a model call: per character spoken (unpriced here: no price was set).
    let metered: (String, String, i64, Option<f64>) = sqlx::query_as(
        "SELECT purpose, model, speech_chars, cost_usd::float8 FROM model_calls WHERE purpose = 'speech'",
    )
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!(metered, ("speech".into(), "gpt-4o-mini-tts".into(), 31, None));

    // A typed message in the same chat: text only.
    assert_eq!(exchange(&env, &tg, (42, "weather?"), "It is sunny.", 3).await[2].text, "It is sunny.");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!((tg.uploads(TOKEN).len(), tts.requests().len()), (1, 1));

    // The mode is kept with the chat (in Postgres, so any pod reads it); off is off.
    tg.user_says(TOKEN, 42, "/voice status");
    assert!(sent(&tg, 4).await[3].text.starts_with("Voice replies are on"));
    tg.user_says(TOKEN, 42, "/voice off");
    assert_eq!(sent(&tg, 5).await[4].text, "Voice replies are off: I answer in text.");
    env.llm.push(ScriptedReply::text("Done."));
    tg.user_sends_voice(TOKEN, 42, "voice-2", b"SPEECH:cancel it");
    assert_eq!(sent(&tg, 6).await[5].text, "Done.");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(tts.requests().len(), 1, "voice off: nothing spoken");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn text_to_speech_through_edge_reaches_the_chat_as_audio() {
    let tts = SpeechApi::start().await.unwrap();
    let edge = tts.edge_url();
    let env = TestEnv::start_with(Roles::default(), move |c| c.tts.edge_url = edge).await;
    let (tg, pod) = open_bot_with_tools(&env, &["tts"]).await;

    env.llm
        .push(ScriptedReply::tool_call("text_to_speech", json!({"text": "Good morning, team. Stand-up is at nine."})));
    assert_eq!(
        exchange(&env, &tg, (42, "record the stand-up announcement"), "Here is the announcement.", 1).await[0].text,
        "Here is the announcement."
    );
    let audio = wait_until("the audio", async || tg.uploads(TOKEN).into_iter().next()).await;
    assert_eq!((audio.method.as_str(), audio.mime.as_str()), ("sendAudio", "audio/mpeg"));
    assert_eq!(audio.data, fake_audio(false, "Good morning, team. Stand-up is at nine."));
    let result: Value =
        serde_json::from_str(env.llm.requests()[1].messages().last().unwrap()["content"].as_str().unwrap()).unwrap();
    assert_eq!((result["success"].clone(), result["provider"].clone()), (json!(true), json!("edge")));
    assert_eq!(result["media_tag"], format!("MEDIA:{}", result["file_path"].as_str().unwrap()));
    assert_eq!(tts.requests()[0].detail["voice"], "Microsoft Server Speech Text to Speech Voice (en-US, AriaNeural)");
    let metered: (String, i64, Option<f64>) =
        sqlx::query_as("SELECT model, speech_chars, cost_usd::float8 FROM model_calls WHERE purpose = 'speech'")
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert_eq!(metered, ("edge-tts".into(), 40, Some(0.0)), "Edge speech is metered, and free");
    pod.stop_with(env).await;
}
