//! Speech out. `text_to_speech` (the `tts` toolset) speaks text through the operator's
//! service (`hermes_media::Speaker`) and keeps the recording with the turn, for the chat to
//! get as a voice bubble (Opus) or an audio file; and a chat whose `/voice` mode asked for it
//! gets its answer spoken as well as written ([`speak_answer`]).

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_core::{CallPurpose, TenantId, ToolsetName};
use hermes_media::{Speaker, Speech, SpeechError};
use hermes_store::turn_files::TurnFile;
use hermes_store::{ClaimedTurn, MediaUnits, Store};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::Runtime;
use crate::attachments::GENERATED_PREFIX;
use crate::tools::image::FileLinks;

/// Keeps `speech` with the turn as `generated/<stem>.<ext>`; the target.
async fn keep(
    store: &Store,
    tenant: TenantId,
    turn: hermes_core::TurnId,
    stem: &str,
    speech: Speech,
) -> Result<String, String> {
    let name = format!("{stem}.{}", speech.extension());
    let target = format!("{GENERATED_PREFIX}{name}");
    let file = TurnFile { target: target.clone(), name, mime: speech.mime.to_owned(), data: Ok(speech.bytes) };
    store.turns().save_turn_file(tenant, turn, &file).await.map_err(|e| e.to_string())?;
    Ok(target)
}

/// `text` spoken, within the spending caps and metered (per character spoken).
async fn speak_metered(
    speaker: &Speaker,
    store: &Store,
    scope: crate::media_meter::MediaScope,
    text: &str,
) -> Result<Speech, String> {
    if let Some(why) = speaker.unusable() {
        return Err(SpeechError::NotConfigured(why).to_string());
    }
    let chars = |n: usize| MediaUnits { speech_chars: n as u64, ..MediaUnits::default() };
    let estimate = chars(speaker.script(text).chars().count());
    let admitted = crate::media_meter::admit(store, scope, CallPurpose::Speech, &speaker.model(), estimate).await?;
    match speaker.speak(text).await {
        Ok(speech) => {
            admitted.record(store, speech.provider.as_str(), chars(speech.chars), speech.elapsed).await;
            Ok(speech)
        }
        Err(e) => {
            admitted.release(store).await;
            Err(e.to_string())
        }
    }
}

/// `text_to_speech` for a turn.
pub(crate) struct TextToSpeech {
    pub speaker: Arc<Speaker>,
    pub store: Store,
    /// Set in an API turn: the recording is also handed over as a link.
    pub links: Option<FileLinks>,
}

impl SimpleTool for TextToSpeech {
    const SPEC: ToolSpec = ToolSpec::new(
        "text_to_speech",
        ToolsetName::Tts,
        "Convert text to speech audio. The chat receives it as a voice message (or an audio file). Put \
         `media_tag` on a line of its own in your answer to send it. Markdown, code and links are not spoken; \
         very long text is cut at a sentence end.",
    );

    fn parameters(&self) -> Value {
        object_schema(
            json!({ "text": { "type": "string", "description": "The text to convert to speech. Keep it under 4,000 characters." } }),
            &["text"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let text = required_str(&args, "text")?;
        let speech = match speak_metered(&self.speaker, &self.store, ctx.into(), text).await {
            Ok(speech) => speech,
            Err(e) => return Ok(json!({"success": false, "error": e}).to_string()),
        };
        let (provider, voice, chars) = (speech.provider, speech.is_voice(), speech.chars);
        let id = hermes_tools::text::call_stem(&ctx.call_id);
        let target = keep(&self.store, ctx.tenant_id, ctx.turn_id, &format!("speech-{id}"), speech)
            .await
            .map_err(|e| ToolError::Unavailable(format!("the speech was made but could not be kept: {e}")))?;
        let mut result = json!({
            "success": true,
            "file_path": target,
            "media_tag": format!("MEDIA:{target}"),
            "provider": provider.as_str(),
            "voice_compatible": voice,
            "characters": chars,
        });
        let name = target.strip_prefix(GENERATED_PREFIX).unwrap_or(&target);
        if let Some(url) = self.links.as_ref().and_then(|links| links.url(ctx.turn_id, name)) {
            result["url"] = json!(url);
            result["note"] = json!(format!("This is an API conversation: link the recording as [listen]({url})."));
        }
        Ok(result.to_string())
    }
}

/// The installation's speaker with the tenant's own keys (its `openai` and `elevenlabs`
/// pools) in place of the operator's where it has them.
fn tenant_speaker(
    secrets: Option<&hermes_store::SecretBox>,
    speaker: &Arc<Speaker>,
    tenant: TenantId,
    pools: &hermes_store::CredentialPools,
) -> Arc<Speaker> {
    let [openai, elevenlabs] =
        speaker.key_pools().map(|(pool, url)| crate::keys::service_key(pools, tenant, secrets, pool, url));
    match (openai, elevenlabs) {
        (None, None) => speaker.clone(),
        (openai, elevenlabs) => Arc::new(speaker.with_keys(openai, elevenlabs)),
    }
}

/// Registers `text_to_speech` for a turn, when the installation can speak (`links`: an API
/// turn's).
pub(crate) fn register(
    kit: &crate::tools::Toolkit,
    tenant: TenantId,
    pools: &hermes_store::CredentialPools,
    tools: &mut hermes_tools::ToolRegistry,
    links: Option<FileLinks>,
) {
    let Some(speaker) = kit.speaker.as_ref() else { return };
    let speaker = tenant_speaker(kit.secrets.as_ref(), speaker, tenant, pools);
    tools.register(Arc::new(TextToSpeech { speaker, store: kit.store.clone(), links }));
}

/// Speaks a chat turn's answer when its message asked for a spoken reply (the chat's
/// `/voice` mode), keeping the recording with the turn; its files' `MEDIA:` lines then hand
/// it over. Whatever fails, the chat still gets the text.
pub(crate) async fn speak_answer(rt: &Runtime, tenant: TenantId, turn: &ClaimedTurn, answer: &str) {
    let Some(speaker) = rt.toolkit.speaker.as_ref() else { return };
    let wanted = match rt.ctx.store.automation().turn_reply_to(tenant, turn.turn_id).await {
        Ok(dest) => dest.is_some_and(|d| d.voice_reply),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read where the answer goes; no voice reply");
            false
        }
    };
    if !wanted || answer.trim().is_empty() {
        return;
    }
    let speaker = match rt.ctx.store.tenancy().credential_pools(tenant).await {
        Ok(pools) => tenant_speaker(rt.ctx.secrets.as_ref(), speaker, tenant, &pools),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the team's keys; the installation's speak");
            speaker.clone()
        }
    };
    let scope =
        crate::media_meter::MediaScope { tenant, agent: turn.agent_id, session: turn.session_id, turn: turn.turn_id };
    let kept = match speak_metered(&speaker, &rt.ctx.store, scope, answer).await {
        Ok(speech) => keep(&rt.ctx.store, tenant, turn.turn_id, "voice-reply", speech).await,
        Err(e) => Err(e),
    };
    if let Err(e) = kept {
        tracing::warn!(error = %e, "the answer could not be spoken; the chat gets the text");
    }
}
