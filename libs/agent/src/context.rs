//! The loop's side of compaction: the engine seam, the default engine, the model as a
//! summarizer, and moving a turn's messages (with their steps) into the compacted session.

use futures_util::future::BoxFuture;

use hermes_core::{ChatMessage, ErrorCode, Role, Usage};
use hermes_llm::ChatModel;

use crate::compress::{self, Compaction, Compressor, Summarizer};
use crate::{JournalError, TurnEnd, TurnJournal, failure};

/// Decides when to compact the conversation and does it (`compress::Compressor` by default).
pub trait ContextEngine: Send + Sync {
    fn should_compress(&self, prompt_tokens: u64) -> bool;
    /// The check at the start of a turn, over the stored conversation (`messages` after the
    /// system prompt), that compacts even when [`Self::should_compress`] would not.
    fn needs_hygiene(&self, _prompt_tokens: u64, _messages: usize) -> bool {
        false
    }
    /// The model's context window, for context-pressure warnings.
    fn context_window(&self) -> Option<u64> {
        None
    }
    /// Compacts the body (the messages after the system prompt); `None` if nothing to compact.
    fn compress<'a>(&'a self, body: &'a [ChatMessage]) -> BoxFuture<'a, Option<Compaction>>;
}

/// The default engine: Hermes's compressor with its summarizers, tried in order (the
/// auxiliary model, then the main model).
pub struct DefaultEngine<S> {
    pub compressor: Compressor,
    pub summarizers: Vec<S>,
}

impl<S: Summarizer> ContextEngine for DefaultEngine<S> {
    fn should_compress(&self, prompt_tokens: u64) -> bool {
        self.compressor.should_compress(prompt_tokens)
    }

    fn needs_hygiene(&self, prompt_tokens: u64, messages: usize) -> bool {
        self.compressor.needs_hygiene(prompt_tokens, messages)
    }

    fn context_window(&self) -> Option<u64> {
        Some(self.compressor.config.context_window.max(compress::MIN_CONTEXT_WINDOW))
    }

    fn compress<'a>(&'a self, body: &'a [ChatMessage]) -> BoxFuture<'a, Option<Compaction>> {
        Box::pin(async move {
            let summarizers: Vec<&S> = self.summarizers.iter().collect();
            self.compressor.compress(body, &summarizers).await
        })
    }
}

/// A model as a summarizer (no tools, the given output cap).
pub struct ModelSummarizer<M> {
    pub model: M,
    pub model_name: String,
}

impl<M: ChatModel> Summarizer for ModelSummarizer<M> {
    async fn summarize(&self, prompt: Vec<ChatMessage>, max_tokens: u32) -> Result<String, String> {
        let request = hermes_llm::ChatRequest {
            model: self.model_name.clone(),
            messages: prompt,
            tools: std::sync::Arc::from([]),
            max_tokens: Some(max_tokens),
            settings: Default::default(),
        };
        self.model
            .complete(&request, &mut hermes_llm::NoDeltas)
            .await
            .map(|r| r.message.text())
            .map_err(|e| e.to_string())
    }
}

/// The steps of the turn's messages in `body` (`None` before the turn): the input is step 0,
/// each assistant message opens the next step, tool results share their call's step.
pub(crate) fn turn_marks(body: &[ChatMessage], turn_start: usize, completed_steps: i32) -> Vec<Option<i32>> {
    let mut step = 0;
    let mut seen_assistant = false;
    let mut marks = Vec::with_capacity(body.len());
    for (i, m) in body.iter().enumerate() {
        if i < turn_start {
            marks.push(None);
            continue;
        }
        if m.role == Role::Assistant {
            step += 1;
            seen_assistant = true;
        }
        marks.push(Some(if seen_assistant || m.role != Role::User { step } else { 0 }));
    }
    // A compacted turn may have lost its first steps to the summary: keep the numbering.
    let last = marks.iter().flatten().max().copied().unwrap_or(0);
    let shift = completed_steps.saturating_sub(last);
    marks.into_iter().map(|m| m.map(|s| if s == 0 { 0 } else { s + shift })).collect()
}

/// Compacts `messages` through `engine`, moving the journal to the child session. Returns
/// whether anything changed.
pub(crate) async fn compact<J: TurnJournal>(
    engine: &dyn ContextEngine,
    journal: &mut J,
    messages: &mut Vec<ChatMessage>,
    turn_start: &mut usize,
    completed_steps: i32,
) -> Result<bool, TurnEnd> {
    let systems = messages.iter().take_while(|m| m.role == Role::System).count();
    let body = &messages[systems..];
    let Some(compaction) = engine.compress(body).await else { return Ok(false) };
    let marks = turn_marks(body, turn_start.saturating_sub(systems), completed_steps);
    let marked: Vec<(Option<i32>, ChatMessage)> =
        compaction.origin.iter().map(|o| o.and_then(|i| marks[i])).zip(compaction.body.iter().cloned()).collect();
    let mut prompt = messages.first().map(ChatMessage::text).unwrap_or_default();
    if !prompt.contains(compress::COMPACTION_NOTE) {
        prompt.push_str("\n\n");
        prompt.push_str(compress::COMPACTION_NOTE);
    }
    match journal.compacted(&prompt, &marked).await {
        Ok(()) => {}
        Err(JournalError::Fenced) => return Err(TurnEnd::Superseded),
        Err(JournalError::Storage(e)) => return Err(TurnEnd::Suspended(e)),
        Err(JournalError::Rejected(e)) => {
            tracing::error!(error = %e, "the compacted session was refused by storage");
            return Err(TurnEnd::Finished(failure(
                ErrorCode::StorageError,
                "The turn could not be saved.".into(),
                Usage::default(),
            )));
        }
    }
    let mut next: Vec<ChatMessage> = Vec::with_capacity(systems + compaction.body.len());
    next.push(ChatMessage::system(prompt));
    next.extend(messages[1..systems].iter().cloned());
    let first_turn_msg = marked.iter().position(|(m, _)| m.is_some()).unwrap_or(marked.len());
    next.extend(compaction.body);
    *turn_start = systems + first_turn_msg;
    *messages = next;
    Ok(true)
}

/// Compacts the conversation now, between turns (the `/compress` command): `messages` is the
/// session's prompt and history. Whether anything changed (a short conversation has nothing
/// to compact).
pub async fn compact_now<J: TurnJournal>(
    engine: &dyn ContextEngine,
    journal: &mut J,
    messages: &mut Vec<ChatMessage>,
) -> Result<bool, TurnEnd> {
    let mut turn_start = messages.len();
    compact(engine, journal, messages, &mut turn_start, 0).await
}
