//! Sampling: a server asking the agent's model for a completion (`sampling/createMessage`),
//! answered only where the server's configuration turned it on (`sampling.enabled`), and only
//! while a turn of the agent is calling the server (a sampling request belongs to a tool call
//! in flight; one arriving between calls has no turn to be billed to and is refused). The
//! turn's [`Sampler`] makes the call: with its model, under its spending caps, metered with
//! its other calls. Here the server's caps are kept: text only, no tool use, `max_tokens`
//! capped, a timeout.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;

use crate::spec::SamplingSpec;

/// One message of a sampling request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleMessage {
    /// The assistant's (else the user's).
    pub assistant: bool,
    pub text: String,
}

/// What a server asked for, within its configured caps.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRequest {
    /// The server's name in the agent's configuration.
    pub server: String,
    pub system: Option<String>,
    pub messages: Vec<SampleMessage>,
    /// Already capped at `sampling.max_tokens_cap`.
    pub max_tokens: u32,
    /// The model the configuration names (`sampling.model`), else the agent's.
    pub model: Option<String>,
    /// Requests a minute the tenant may make of this server (`sampling.max_rpm`).
    pub max_rpm: u32,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleAnswer {
    pub model: String,
    pub text: String,
    /// The answer stopped at `max_tokens`.
    pub truncated: bool,
}

/// Answers sampling requests for one turn (the worker's: the turn's model, caps and meter).
pub trait Sampler: Send + Sync {
    /// The answer, or why there is none (said to the server).
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleAnswer, String>>;
}

/// The samplers of the turns calling one server now: the newest answers (every turn of one
/// session is the same tenant's and agent's, so any of them may be billed).
#[derive(Default)]
pub struct Callers {
    now: Mutex<Vec<Arc<dyn Sampler>>>,
}

/// A turn's sampler, registered for the length of one call.
pub struct Calling {
    callers: Arc<Callers>,
    sampler: Arc<dyn Sampler>,
}

impl Drop for Calling {
    fn drop(&mut self) {
        if let Ok(mut now) = self.callers.now.lock()
            && let Some(at) = now.iter().rposition(|s| Arc::ptr_eq(s, &self.sampler))
        {
            now.remove(at);
        }
    }
}

impl Callers {
    /// Registers `sampler` until the returned guard drops.
    pub fn enter(self: &Arc<Self>, sampler: Arc<dyn Sampler>) -> Calling {
        if let Ok(mut now) = self.now.lock() {
            now.push(sampler.clone());
        }
        Calling { callers: self.clone(), sampler }
    }

    fn current(&self) -> Option<Arc<dyn Sampler>> {
        self.now.lock().ok().and_then(|now| now.last().cloned())
    }
}

/// A server's sampling as its session answers it.
pub(crate) struct Gate {
    pub server: String,
    pub spec: SamplingSpec,
    pub callers: Arc<Callers>,
}

/// Why a request is refused, as the server reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A request the caps do not allow (images, tool use, nothing to answer).
    Invalid(String),
    /// No turn to answer it, or the model failed or took too long.
    Failed(String),
}

#[expect(deprecated, reason = "sampling is deprecated by SEP-2577 but still what servers send")]
impl Gate {
    /// Answers `params` through the turn calling now.
    pub(crate) async fn answer(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
    ) -> Result<rmcp::model::CreateMessageResult, Refusal> {
        use rmcp::model::{CreateMessageResult, Role, SamplingMessage};
        if params.tools.is_some() || params.tool_choice.is_some() {
            return Err(Refusal::Invalid("tool use in sampling is not offered by this client".into()));
        }
        let mut messages = Vec::with_capacity(params.messages.len());
        for message in params.messages {
            let mut text = Vec::new();
            for block in message.content.into_vec() {
                match block.as_text() {
                    Some(t) => text.push(t.text.clone()),
                    None => return Err(Refusal::Invalid("only text is answered in sampling".into())),
                }
            }
            messages.push(SampleMessage { assistant: message.role == Role::Assistant, text: text.join("\n") });
        }
        if !messages.iter().any(|m| !m.assistant) {
            return Err(Refusal::Invalid("a sampling request needs a user message".into()));
        }
        let request = SampleRequest {
            server: self.server.clone(),
            system: params.system_prompt,
            messages,
            max_tokens: params.max_tokens.clamp(1, self.spec.max_tokens_cap),
            model: self.spec.model.clone(),
            max_rpm: self.spec.max_rpm,
        };
        let sampler = self.callers.current().ok_or_else(|| {
            Refusal::Failed("no turn of the agent is calling this server now, so there is no one to bill".into())
        })?;
        let timeout = self.spec.timeout();
        let answer = tokio::time::timeout(timeout, sampler.sample(request))
            .await
            .map_err(|_| Refusal::Failed(format!("no answer within {} s", timeout.as_secs())))?
            .map_err(Refusal::Failed)?;
        let stop = if answer.truncated {
            CreateMessageResult::STOP_REASON_END_MAX_TOKEN
        } else {
            CreateMessageResult::STOP_REASON_END_TURN
        };
        self.log(&answer);
        Ok(CreateMessageResult::new(SamplingMessage::assistant_text(answer.text), answer.model).with_stop_reason(stop))
    }

    /// The audit line of an answered request, at the configured level.
    fn log(&self, answer: &SampleAnswer) {
        let (server, model, chars) = (&self.server, &answer.model, answer.text.chars().count());
        match self.spec.log_level.as_str() {
            "debug" => tracing::debug!(server, model, chars, "answered an MCP server's sampling request"),
            "warning" => tracing::warn!(server, model, chars, "answered an MCP server's sampling request"),
            _ => tracing::info!(server, model, chars, "answered an MCP server's sampling request"),
        }
    }
}
