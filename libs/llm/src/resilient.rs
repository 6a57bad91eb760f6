//! A model that recovers the way Hermes does: each failure's class picks the next step of its
//! ladder — retry with jittered backoff, rotate to another key of the pool (cooling the failed
//! one down, or retiring it), or move to the next model of the fallback chain, which keeps the
//! turn going. The primary is tried again once it has rested for `primary_cooldown`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::Instrument;

use crate::endpoint::{Endpoint, SendError, Transport};
use crate::keys::{Credential, KeySource};
use hermes_core::ModelCall;

use crate::meter::CallMeter;
use crate::spans::{call_span, record_call};
use crate::{ChatModel, ChatRequest, ChatResponse, DeltaSink, ErrorClass, LlmError, Recovery, RetryPolicy};

/// How long a failed primary rests before it is tried again.
pub const PRIMARY_COOLDOWN: Duration = Duration::from_secs(60);

/// The primary endpoint first, then the fallbacks, each with its transport.
pub struct ResilientModel<T, K> {
    transport: T,
    keys: K,
    chain: Vec<Endpoint>,
    retry: RetryPolicy,
    primary_cooldown: Duration,
    /// When the primary last failed over (it rests until `primary_cooldown` has passed).
    primary_failed_at: Mutex<Option<Instant>>,
    /// Where answered calls are reported, and under which purpose.
    meter: Option<(Arc<dyn CallMeter>, hermes_core::CallPurpose)>,
}

enum EndpointFailure {
    /// Go on with the next endpoint of the chain.
    Fallback(LlmError),
    /// No step left: the call fails.
    Final(LlmError),
}

impl<T: Transport, K: KeySource> ResilientModel<T, K> {
    /// `chain[0]` is the primary; duplicate (provider, base URL, model) entries are dropped.
    pub fn new(transport: T, keys: K, chain: Vec<Endpoint>, retry: RetryPolicy) -> Self {
        let mut unique: Vec<Endpoint> = Vec::with_capacity(chain.len());
        for ep in chain {
            if !unique.contains(&ep) {
                unique.push(ep);
            }
        }
        Self {
            transport,
            keys,
            chain: unique,
            retry,
            primary_cooldown: PRIMARY_COOLDOWN,
            primary_failed_at: Mutex::new(None),
            meter: None,
        }
    }

    /// Reports every answered call to `meter` as made for `purpose`.
    pub fn with_meter(mut self, meter: Arc<dyn CallMeter>, purpose: hermes_core::CallPurpose) -> Self {
        self.meter = Some((meter, purpose));
        self
    }

    /// Overrides how long a failed primary rests (tests).
    pub fn with_primary_cooldown(mut self, cooldown: Duration) -> Self {
        self.primary_cooldown = cooldown;
        self
    }

    fn first_endpoint(&self) -> usize {
        let failed = self.primary_failed_at.lock().ok().and_then(|g| *g);
        match failed {
            Some(at) if at.elapsed() < self.primary_cooldown && self.chain.len() > 1 => 1,
            _ => 0,
        }
    }

    fn set_primary_failed(&self, at: Option<Instant>) {
        if let Ok(mut g) = self.primary_failed_at.lock() {
            *g = at;
        }
    }

    async fn on_endpoint(
        &self,
        index: usize,
        request: &ChatRequest,
        sink: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, EndpointFailure> {
        let endpoint = &self.chain[index];
        let has_next = index + 1 < self.chain.len();
        let mut tried: Vec<String> = Vec::new();
        // Key-pool calls run boxed: this future waits on the model, they are brief.
        let mut key = match Box::pin(self.keys.acquire(&endpoint.provider, &tried)).await {
            Ok(k) => k,
            Err(e) => return Err(if has_next { EndpointFailure::Fallback(e) } else { EndpointFailure::Final(e) }),
        };
        let mut retries = 0;
        loop {
            if let Some(k) = &key
                && !endpoint.host().is_some_and(|h| k.allows(&h))
            {
                // Never send a key to a host it was not issued for, whatever the configuration says.
                let e = LlmError::new(
                    ErrorClass::KeyNotAllowed,
                    format!("key {} may not be sent to {}", k.id, endpoint.host().unwrap_or_default()),
                );
                return Err(EndpointFailure::Final(e));
            }
            let started = Instant::now();
            let provider = crate::keys::provider_label(&endpoint.provider);
            let span = call_span(endpoint, provider);
            let sent = self
                .transport
                .send(endpoint, key.as_ref().map(|k| k.secret.as_str()), request, sink)
                .instrument(span.clone())
                .await;
            self.account(endpoint, key.as_ref(), started, &span, &sent);
            let SendError { error, emitted } = match sent {
                Ok(response) if response.message.tool_calls.is_empty() && response.message.text().trim().is_empty() => {
                    // An empty answer: retried like a malformed one, then the next model.
                    SendError::fresh(LlmError::malformed("the model returned an empty answer"))
                }
                Ok(response) => return Ok(response),
                Err(e) => e,
            };
            if emitted {
                // Part of the answer already streamed: repeating the call would repeat it.
                return Err(EndpointFailure::Final(error));
            }
            match self.next_step(&error, retries, &key, has_next) {
                Some(Recovery::Retry) => {
                    retries += 1;
                    let delay = self.retry.delay(retries, &error);
                    tracing::warn!(error = %error, retries, delay_ms = delay.as_millis() as u64, "retrying the model call");
                    tokio::time::sleep(delay).await;
                }
                Some(Recovery::RotateKey { cooldown }) => {
                    key = Some(self.rotate(endpoint, error, cooldown, key.take(), &mut tried, has_next).await?);
                    retries = 0;
                }
                Some(Recovery::Fallback) => return Err(EndpointFailure::Fallback(error)),
                Some(Recovery::Compress | Recovery::StripReasoning) | None => {
                    return Err(EndpointFailure::Final(error));
                }
            }
        }
    }

    /// Swaps a key the provider refused for another of the pool, cooling the refused one;
    /// with no other key the endpoint has failed (on to the next model, if there is one).
    async fn rotate(
        &self,
        endpoint: &Endpoint,
        error: LlmError,
        cooldown: Option<Duration>,
        failed: Option<Credential>,
        tried: &mut Vec<String>,
        has_next: bool,
    ) -> Result<Credential, EndpointFailure> {
        // A rate limit whose reset the provider announced lasts until then, not an hour.
        let cooldown = match (error.class, error.retry_after, cooldown) {
            (ErrorClass::RateLimit, Some(reset), Some(_)) => Some(reset),
            _ => cooldown,
        };
        let Some(failed) = failed else { return Err(EndpointFailure::Final(error)) };
        tried.push(failed.id.clone());
        if let Ok(Some(other)) = Box::pin(self.keys.acquire(&endpoint.provider, tried)).await {
            tracing::warn!(error = %error, key = %failed.id, next = %other.id, "rotating to another key");
            Box::pin(self.keys.report(&endpoint.provider, &failed.id, cooldown)).await;
            return Ok(other);
        }
        // A lone key is not cooled for a passing failure (it would take the agent down for an
        // hour); a revoked one is retired anyway.
        if cooldown.is_none() {
            Box::pin(self.keys.report(&endpoint.provider, &failed.id, None)).await;
        }
        Err(if has_next { EndpointFailure::Fallback(error) } else { EndpointFailure::Final(error) })
    }

    /// Records a call: its span, its duration and tokens as metrics, and, for an answer,
    /// the meter's record (every answer is paid for, an empty one included).
    fn account(
        &self,
        endpoint: &Endpoint,
        key: Option<&Credential>,
        started: Instant,
        span: &tracing::Span,
        sent: &Result<ChatResponse, SendError>,
    ) {
        record_call(span, sent);
        let provider = crate::keys::provider_label(&endpoint.provider);
        let outcome = match sent {
            Ok(_) => "ok",
            Err(e) => e.error.code().as_str(),
        };
        metrics::histogram!("hermes_llm_call_seconds", "outcome" => outcome, "provider" => provider)
            .record(started.elapsed().as_secs_f64());
        let Ok(response) = sent else { return };
        let usage = &response.usage;
        for (kind, tokens) in
            [("input", usage.prompt_tokens), ("output", usage.completion_tokens), ("cached", usage.cached_tokens)]
        {
            metrics::counter!("hermes_llm_tokens_total", "provider" => provider, "kind" => kind).increment(tokens);
        }
        if let Some((meter, purpose)) = &self.meter {
            meter.record(ModelCall {
                purpose: *purpose,
                provider: endpoint.provider.clone(),
                model: endpoint.model.clone(),
                key_id: key.map(|k| k.id.clone()),
                usage: response.usage,
                latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            });
        }
    }

    /// The first step of the error's ladder that can still be taken.
    fn next_step(&self, error: &LlmError, retries: u32, key: &Option<Credential>, has_next: bool) -> Option<Recovery> {
        error.class.recovery().iter().copied().find(|step| match step {
            // Waiting is pointless when the provider says the limit lasts longer than a retry may wait.
            Recovery::Retry => {
                retries < self.retry.max_retries && error.retry_after.is_none_or(|after| after <= self.retry.max_delay)
            }
            Recovery::RotateKey { .. } => key.is_some(),
            Recovery::Fallback => has_next,
            Recovery::Compress | Recovery::StripReasoning => true,
        })
    }
}

impl<T: Transport, K: KeySource> ChatModel for ResilientModel<T, K> {
    async fn complete(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        let mut index = self.first_endpoint();
        loop {
            match self.on_endpoint(index, request, sink).await {
                Ok(response) => {
                    if index == 0 {
                        self.set_primary_failed(None);
                    }
                    return Ok(response);
                }
                Err(EndpointFailure::Fallback(error)) => {
                    if index == 0 {
                        self.set_primary_failed(Some(Instant::now()));
                    }
                    let next = &self.chain[index + 1];
                    tracing::warn!(error = %error, model = %next.model, provider = %next.provider, "falling back to the next model");
                    metrics::counter!("hermes_llm_fallbacks_total", "class" => error.code().as_str()).increment(1);
                    index += 1;
                }
                Err(EndpointFailure::Final(error)) => return Err(error),
            }
        }
    }
}

#[cfg(test)]
#[path = "resilient_tests.rs"]
mod tests;
