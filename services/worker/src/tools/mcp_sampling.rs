//! Answers MCP servers' sampling requests for a turn (servers whose `sampling.enabled` is on):
//! with the agent's model (or the server's `sampling.model` on the agent's provider), as a
//! model call of the turn, so it is under the tenant's spending caps and metered as `sampling`;
//! and at most `sampling.max_rpm` requests a minute per tenant and server, counted in Redis
//! across workers (upstream's per-process limiter, made a tenant's quota).

use std::time::Duration;

use futures_util::future::BoxFuture;

use hermes_cache::WindowCounters;
use hermes_core::{ChatMessage, TenantId};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_mcp::{SampleAnswer, SampleRequest, Sampler};

use crate::models::Models;

pub(crate) struct TurnSampler {
    pub models: Models,
    pub counters: WindowCounters,
    pub tenant: TenantId,
}

impl TurnSampler {
    /// Counts the request against the server's allowance; `Err` when it is spent. Redis is
    /// coordination only: when it is down the request goes ahead (the spending caps still hold).
    async fn allowed(&self, request: &SampleRequest) -> Result<(), String> {
        if request.max_rpm == 0 {
            return Ok(());
        }
        let name = format!("mcp-sampling:{}:{}", self.tenant, request.server);
        match self.counters.take(&name, Duration::from_secs(60), 1, u64::from(request.max_rpm)).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => {
                metrics::counter!("hermes_mcp_sampling_refused_total", "reason" => "rate").increment(1);
                Err(format!(
                    "the sampling allowance of {} requests a minute for this server is spent; try again in a minute",
                    request.max_rpm
                ))
            }
            Err(e) => {
                tracing::warn!(error = %e, "sampling allowance unavailable; allowing the request");
                Ok(())
            }
        }
    }
}

impl Sampler for TurnSampler {
    fn sample(&self, request: SampleRequest) -> BoxFuture<'_, Result<SampleAnswer, String>> {
        Box::pin(async move {
            self.allowed(&request).await?;
            let (model, name) = self.models.sampling(request.model.as_deref());
            let mut messages: Vec<ChatMessage> = request.system.iter().map(ChatMessage::system).collect();
            messages.extend(request.messages.iter().map(|m| {
                if m.assistant { ChatMessage::assistant(m.text.clone()) } else { ChatMessage::user(m.text.clone()) }
            }));
            let chat = ChatRequest {
                model: name.clone(),
                messages,
                tools: std::sync::Arc::from([]),
                max_tokens: Some(request.max_tokens),
                settings: Default::default(),
            };
            metrics::counter!("hermes_mcp_sampling_requests_total").increment(1);
            let answer = model.complete(&chat, &mut NoDeltas).await.map_err(|e| {
                metrics::counter!("hermes_mcp_sampling_refused_total", "reason" => "model").increment(1);
                format!("the model could not answer: {e}")
            })?;
            let truncated = answer.finish_reason.as_deref() == Some("length");
            Ok(SampleAnswer { model: name, text: answer.message.text(), truncated })
        })
    }
}
