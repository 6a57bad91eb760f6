//! One model step: the call, up to `empty_retries` retries of an empty answer, and up to
//! `length_continuations` continuations of an answer cut off by `max_tokens`, each with a
//! higher cap. Every HTTP request counts against the turn's API-call budget.

use std::sync::Arc;

use serde_json::Value;

use hermes_core::{ChatMessage, Content, ModelSettings, Usage};
use hermes_llm::{ChatModel, ChatRequest, DeltaSink, LlmError};

use crate::TurnLimits;
use crate::normalize::normalize;

/// Sent after an answer that hit `max_tokens`, asking the model to go on.
pub const CONTINUE_PROMPT: &str =
    "[Your previous answer was cut off by the output limit. Continue exactly where it stopped, without repeating.]";

/// Output caps for continuations: each one doubles, from this.
const FIRST_CONTINUATION_TOKENS: u32 = 8_192;

/// A model step's answer.
#[derive(Debug)]
pub(crate) struct StepReply {
    pub message: ChatMessage,
    /// Still cut off after every continuation.
    pub truncated: bool,
    /// The prompt size the provider reported for the first call of the step.
    pub prompt_tokens: u64,
}

/// Why a step produced no answer.
#[derive(Debug)]
pub(crate) enum StepError {
    Llm(LlmError),
    /// Only empty answers, retries included.
    Empty,
    /// The API-call budget ran out.
    BudgetSpent,
}

/// Counts of the turn so far.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Spent {
    pub api_calls: u32,
    pub iterations: u32,
}

fn is_empty(m: &ChatMessage) -> bool {
    m.tool_calls.is_empty() && m.text().trim().is_empty()
}

pub(crate) struct ModelStep<'a, M> {
    pub model: &'a M,
    pub model_name: &'a str,
    pub settings: &'a ModelSettings,
    pub limits: &'a TurnLimits,
}

impl<M: ChatModel> ModelStep<'_, M> {
    async fn once(
        &self,
        messages: Vec<ChatMessage>,
        tools: &Arc<[Arc<Value>]>,
        max_tokens: Option<u32>,
        spent: &mut Spent,
        usage: &mut Usage,
        sink: &mut dyn DeltaSink,
    ) -> Result<hermes_llm::ChatResponse, StepError> {
        if spent.api_calls >= self.limits.max_api_calls {
            return Err(StepError::BudgetSpent);
        }
        spent.api_calls += 1;
        // A continuation's cap never goes below the one the settings ask for.
        let asked = self.settings.max_output_tokens;
        let max_tokens = match max_tokens {
            Some(cap) => Some(cap.max(asked.unwrap_or(0))),
            None => asked,
        };
        let request = ChatRequest {
            model: self.model_name.to_owned(),
            messages,
            tools: tools.clone(),
            max_tokens,
            settings: *self.settings,
        };
        let response = self.model.complete(&request, sink).await.map_err(StepError::Llm)?;
        usage.add(&response.usage);
        Ok(response)
    }

    /// Runs the step on `messages` (normalised here) with `tools` offered.
    pub async fn run(
        &self,
        messages: &[ChatMessage],
        tools: &Arc<[Arc<Value>]>,
        spent: &mut Spent,
        usage: &mut Usage,
        sink: &mut dyn DeltaSink,
    ) -> Result<StepReply, StepError> {
        let base = normalize(messages);
        let mut empties = 0;
        let mut response = loop {
            let response = self.once(base.clone(), tools, None, spent, usage, sink).await?;
            if !is_empty(&response.message) {
                break response;
            }
            empties += 1;
            tracing::warn!(empties, "the model returned an empty answer");
            if empties > self.limits.empty_retries {
                return Err(StepError::Empty);
            }
        };
        let prompt_tokens = response.usage.prompt_tokens;
        let mut text = response.message.text();
        let mut continuations = 0;
        while response.finish_reason.as_deref() == Some("length") && continuations < self.limits.length_continuations {
            let max_tokens = FIRST_CONTINUATION_TOKENS.saturating_mul(1 << continuations);
            continuations += 1;
            tracing::info!(continuations, max_tokens, "answer cut off by max_tokens; continuing");
            if !response.message.tool_calls.is_empty() {
                // Cut-off tool-call arguments cannot be continued: ask again with room to finish.
                response = self.once(base.clone(), tools, Some(max_tokens), spent, usage, sink).await?;
                text = response.message.text();
                continue;
            }
            let mut next = base.clone();
            next.push(ChatMessage::assistant(text.clone()));
            next.push(ChatMessage::user(CONTINUE_PROMPT));
            let more = self.once(next, tools, Some(max_tokens), spent, usage, sink).await?;
            text.push_str(&more.message.text());
            let reasoning = match (response.message.reasoning.take(), more.message.reasoning.clone()) {
                (Some(a), Some(b)) => Some(format!("{a}{b}")),
                (a, b) => a.or(b),
            };
            response = hermes_llm::ChatResponse {
                message: ChatMessage {
                    content: Some(Content::Text(text.clone())),
                    reasoning,
                    // The continuation's reasoning is what the next call must see.
                    replay: more.message.replay,
                    tool_calls: more.message.tool_calls,
                    ..response.message
                },
                finish_reason: more.finish_reason,
                usage: Usage::default(),
            };
        }
        let truncated = response.finish_reason.as_deref() == Some("length");
        Ok(StepReply { message: response.message, truncated, prompt_tokens })
    }
}
