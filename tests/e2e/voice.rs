//! Voice notes end to end: a Telegram voice note is downloaded, transcribed by the operator's
//! OpenAI-compatible speech-to-text server and answered; one that is silent (Whisper's "Thank
//! you."), one the server fails on, and one sent where no service is configured are answered
//! too: the agent is told what happened and says so, never silence.

use hermes_testkit::ScriptedReply;
use hermes_testkit::speech::SpeechToText;
use hermes_testkit::telegram::TelegramEmulator;

use crate::harness::{Roles, TestEnv};
use crate::telegram::{Pod, TOKEN, open_bot, sent};

/// The operator's speech-to-text service (its key `key`), the service and a Telegram bot bound
/// to a fresh tenant's agent.
async fn with_the_operators_service(
    key: &'static str,
) -> (SpeechToText, TestEnv, TelegramEmulator, hermes_store::Channel) {
    let stt = SpeechToText::start().await.unwrap();
    let base = stt.base_url();
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.stt.base_url = Some(base);
        c.stt.api_key = Some(key.into());
    })
    .await;
    let (tg, channel) = open_bot(&env).await;
    (stt, env, tg, channel)
}

/// What the model was given as the user's message in its request `n`.
fn user_message(env: &TestEnv, n: usize) -> String {
    let messages = env.llm.requests()[n].messages();
    messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_voice_note_is_transcribed_and_answered_and_one_that_cannot_be_heard_still_gets_a_reply() {
    let (stt, env, tg, _) = with_the_operators_service("stt-test-key").await;
    let pod = Pod::start(&env).await;

    env.llm.push(ScriptedReply::text("Booked: room 4, Tuesday at ten."));
    tg.user_sends_voice(TOKEN, 42, "voice-1", b"SPEECH:book the meeting room for Tuesday at ten");
    let got = sent(&tg, 1).await;
    assert_eq!(got[0].text, "Booked: room 4, Tuesday at ten.");
    assert_eq!(
        user_message(&env, 0),
        "[The user sent a voice message~ Here's what they said: \"book the meeting room for Tuesday at ten\"]"
    );
    let request = &stt.requests()[0];
    assert_eq!(request.model, "whisper-1");
    assert_eq!((request.file_name.as_deref(), request.content_type.as_deref()), (Some("voice.ogg"), Some("audio/ogg")));
    assert_eq!(request.authorization.as_deref(), Some("Bearer stt-test-key"));

    env.llm.push(ScriptedReply::text("I could not hear anything; could you say it again?"));
    tg.user_sends_voice(TOKEN, 42, "voice-2", b"SILENCE");
    assert_eq!(sent(&tg, 2).await[1].text, "I could not hear anything; could you say it again?");
    assert!(
        user_message(&env, 1).contains("it was silent or I could not make out any words"),
        "{}",
        user_message(&env, 1)
    );

    env.llm.push(ScriptedReply::text("Sorry, my transcription is down; please type it."));
    tg.user_sends_voice(TOKEN, 42, "voice-3", b"BROKEN");
    assert_eq!(sent(&tg, 3).await[2].text, "Sorry, my transcription is down; please type it.");
    let told = user_message(&env, 2);
    assert!(told.contains("I had trouble transcribing it~ (the speech-to-text service answered HTTP 500)"), "{told}");
    assert!(!told.contains("stt-test-key"), "no key in the transcript");

    // Each transcription the service answered is metered with the turn that read it, by the
    // audio it billed (a second a word here); silence is billed too, a failed call is not.
    let metered: Vec<(String, String, i64, bool)> = sqlx::query_as(
        "SELECT c.model, c.provider, c.audio_ms, c.turn_id IN (SELECT id FROM turns) FROM model_calls c
         WHERE c.purpose = 'transcription' ORDER BY c.id",
    )
    .fetch_all(&env.db)
    .await
    .unwrap();
    assert_eq!(
        metered,
        [("whisper-1".into(), "127.0.0.1".into(), 8_000, true), ("whisper-1".into(), "127.0.0.1".into(), 2_000, true)]
    );
    pod.stop_with(env).await;
}

#[tokio::test]
async fn without_a_speech_to_text_service_the_agent_is_told_and_answers() {
    let env = TestEnv::start_with(Roles::default(), |c| c.stt = Default::default()).await;
    let (tg, _) = open_bot(&env).await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("I can't listen to voice notes here yet; please type it."));
    tg.user_sends_voice(TOKEN, 7, "voice-1", b"SPEECH:hello");
    assert_eq!(sent(&tg, 1).await[0].text, "I can't listen to voice notes here yet; please type it.");
    assert!(user_message(&env, 0).contains("no speech-to-text service is configured"), "{}", user_message(&env, 0));
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_team_with_its_own_key_for_the_transcription_service_pays_for_its_voice_notes() {
    let (stt, env, tg, channel) = with_the_operators_service("stt-operator").await;
    // The scripted service is on 127.0.0.1: the team's key is allowed there.
    env.team_key(channel.tenant_id, "openai", "sk-team-whisper").await;
    let pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("Noted."));
    tg.user_sends_voice(TOKEN, 42, "voice-1", b"SPEECH:note this");
    assert_eq!(sent(&tg, 1).await[0].text, "Noted.");
    assert_eq!(stt.requests()[0].authorization.as_deref(), Some("Bearer sk-team-whisper"));
    pod.stop_with(env).await;
}

/// The security review of 2026-12 (L8): once a team's hard spending cap is reached, its chat
/// users still ran operator-paid transcriptions, and a refused or redelivered message's was not
/// metered. Now the transcription is reserved under the caps first: past the cap the service is
/// never called, and the agent is told why.
#[tokio::test]
async fn past_a_hard_spending_cap_a_voice_note_is_not_sent_to_the_transcription_service() {
    let (stt, env, tg, channel) = with_the_operators_service("stt-operator").await;
    let whisper =
        hermes_store::ModelPrice { model: "whisper-1".into(), per_audio_minute: Some(0.006), ..Default::default() };
    env.store.tenancy().set_model_price(&whisper).await.unwrap();
    env.cap_spending(channel.tenant_id, None, hermes_core::BudgetPeriod::Day, (Some(0.0), None)).await;
    let pod = Pod::start(&env).await;

    tg.user_sends_voice(TOKEN, 42, "voice-1", b"SPEECH:spend the operator's money");
    let got = sent(&tg, 1).await;
    assert!(!got[0].text.is_empty(), "the user is answered");
    assert!(stt.requests().is_empty(), "the transcription service was not called");
    let metered: i64 = sqlx::query_scalar("SELECT count(*) FROM model_calls WHERE purpose = 'transcription'")
        .fetch_one(&env.db)
        .await
        .unwrap();
    assert_eq!(metered, 0, "nothing was billed");
    pod.stop_with(env).await;
}
