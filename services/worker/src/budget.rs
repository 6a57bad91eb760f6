//! Spending caps around every model call (`hermes_store::spend`). Under a cap, the call first
//! reserves its estimated cost (refused with `insufficient_quota`, which ends the turn with a
//! clear message and 402 on the API, once spend and other calls' reservations reach a hard
//! cap), and as soon as it returns its usage is recorded in place of the reservation, so the
//! next call of any turn sees it. A reached soft cap is said once per turn. If the caps cannot
//! be read the call is refused too (fail closed: a cap that cannot be checked cannot be kept).
//! Whether any cap covers the agent is read once, with the turn's inputs: a turn without caps
//! then pays nothing per call (a cap set while it runs applies from the next turn), and its
//! calls are recorded with the turn's checkpoints as before.

use std::sync::Arc;
use std::time::Duration;

#[cfg(test)]
use hermes_core::ChatMessage;
use hermes_core::{AgentId, BudgetPeriod, SessionId, TenantId, TurnId};
use hermes_llm::{CallBuffer, ChatModel, ChatRequest, ChatResponse, DeltaSink, ErrorClass, LlmError};
use hermes_store::{BudgetState, SpendDecision, SpendRequest, Store};

/// What an answer is assumed to take when the request sets no limit.
const OUTPUT_ESTIMATE_TOKENS: u64 = 1024;

/// The turn a model's calls are recorded under.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ledger {
    pub session: SessionId,
    pub turn: TurnId,
}

pub(crate) struct Budgeted<M> {
    pub inner: M,
    pub store: Store,
    pub tenant: TenantId,
    pub agent: AgentId,
    /// The models the inner model may call (its fallback chain).
    pub models: Vec<String>,
    /// Those of them `/fast` sends to their provider's priority tier.
    pub priority_capable: Vec<String>,
    /// Where the inner model reports answered calls.
    pub meter: Arc<CallBuffer>,
    pub ledger: Ledger,
    /// How long a reservation holds if this worker dies before settling it.
    pub lease: Duration,
    /// Whether any cap covered the agent when the turn started (else no call reserves).
    pub capped: bool,
    /// The turn was told a soft cap is reached (once per turn is enough).
    pub warned: std::sync::atomic::AtomicBool,
}

/// The tokens a request sends: its messages and its tool schemas.
fn input_estimate(request: &ChatRequest) -> u64 {
    let tools: usize = request.tools.iter().map(|t| t.to_string().len()).sum();
    hermes_agent::compress::estimate_tokens(&request.messages) + (tools as u64).div_ceil(4)
}

/// The most output a call may bill: its cap, raised by a thinking budget where the
/// transport makes room for it (Anthropic), else a typical answer.
fn output_estimate(request: &ChatRequest) -> u64 {
    let cap = request.max_tokens.map_or(OUTPUT_ESTIMATE_TOKENS, u64::from);
    let thinking = request.settings.thinking().map_or(0, |budget| u64::from(budget) + 4_096);
    cap.max(thinking)
}

impl<M> Budgeted<M> {
    /// The chain's models that `request` would ask for their priority tier (`/fast` on a model
    /// that has one).
    fn priority_models(&self, request: &ChatRequest) -> &[String] {
        if request.settings.fast == Some(true) { &self.priority_capable } else { &[] }
    }

    async fn decide(&self, request: &ChatRequest) -> Result<SpendDecision, LlmError> {
        if !self.capped {
            return Ok(SpendDecision::Uncapped);
        }
        let ask = SpendRequest {
            agent: self.agent,
            models: &self.models,
            input_tokens: input_estimate(request),
            output_tokens: output_estimate(request),
            media: Default::default(),
            priority_models: self.priority_models(request),
            lease: self.lease,
        };
        self.store.tenancy().reserve_spend(self.tenant, &ask, chrono::Utc::now()).await.map_err(|e| {
            tracing::warn!(error = %e, "cannot read the spending caps; the call is refused");
            metrics::counter!("hermes_budget_unreadable_total").increment(1);
            LlmError::new(
                ErrorClass::SpendCap,
                "The spending caps cannot be checked right now, so no model call is made. Please try again shortly."
                    .to_owned(),
            )
        })
    }

    /// Says once per turn that a soft cap is reached.
    fn warn_soft(&self, states: &[BudgetState], sink: &mut dyn DeltaSink) {
        for state in states.iter().filter(|s| s.soft_reached() && !s.hard_reached()) {
            tracing::warn!(tenant.id = %self.tenant, period = %state.budget.period, spent = state.spent_usd, "soft spending cap reached");
            metrics::counter!("hermes_budget_soft_reached_total").increment(1);
            if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                let (period, _) = wording(state.budget.period);
                sink.notice(
                    "soft_cap_reached",
                    &format!(
                        "{} {period} spending warning level (${:.2}) is reached: ${:.2} spent so far.",
                        whose(state),
                        state.budget.soft_usd.unwrap_or_default(),
                        state.spent_usd
                    ),
                );
            }
        }
    }

    /// Records the calls the inner model answered in place of `reservation`. If that cannot be
    /// written they wait for the turn's next checkpoint, and the reservation lapses at its lease.
    async fn settle(&self, reservation: hermes_core::SpendReservationId) {
        let records = self.meter.drain();
        let calls = records.to_vec();
        let Ledger { session, turn } = self.ledger;
        if let Err(e) = self.store.tenancy().settle_spend(self.tenant, reservation, session, turn, &calls).await {
            tracing::warn!(error = %e, "cannot record a capped call's usage yet");
            for record in records {
                hermes_llm::CallMeter::record(self.meter.as_ref(), record);
            }
        }
    }
}

fn whose(state: &BudgetState) -> &'static str {
    if state.budget.agent_id.is_some() { "This agent's" } else { "Your team's" }
}

/// How a period reads in a message: its adjective, and when a cap of it lifts.
fn wording(period: BudgetPeriod) -> (&'static str, &'static str) {
    match period {
        BudgetPeriod::Day => ("daily", "tomorrow"),
        BudgetPeriod::Month => ("monthly", "next month"),
    }
}

pub(crate) fn refused(state: &BudgetState) -> LlmError {
    let (period, until) = wording(state.budget.period);
    metrics::counter!("hermes_budget_refusals_total").increment(1);
    LlmError::new(
        ErrorClass::SpendCap,
        format!(
            "{} {period} spending cap (${:.2}) is reached (${:.2} spent or committed to calls in progress), so no \
             more model calls are made until {until} or until an administrator raises the cap.",
            whose(state),
            state.budget.hard_usd.unwrap_or_default(),
            state.spent_usd
        ),
    )
}

pub(crate) fn unpriced(model: &str) -> LlmError {
    metrics::counter!("hermes_budget_refusals_total").increment(1);
    LlmError::new(
        ErrorClass::SpendCap,
        format!(
            "The model {model:?} has no price, so a spending cap in dollars cannot be kept with it and no call is \
             made. An operator can set its price (`hermesctl price set`)."
        ),
    )
}

impl<M: ChatModel> Budgeted<M> {
    /// The inner call, timed for the turn's split (every model call of a worker passes here).
    async fn timed(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        let started = std::time::Instant::now();
        let answer = self.inner.complete(request, sink).await;
        crate::phases::Phase::Model.record(started.elapsed());
        answer
    }
}

impl<M: ChatModel> ChatModel for Budgeted<M> {
    async fn complete(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        // The spending checks run boxed: this future waits on the model in every turn, and
        // their database states would otherwise be part of its size.
        match Box::pin(self.decide(request)).await? {
            SpendDecision::Uncapped => self.timed(request, sink).await,
            SpendDecision::Refused { state, .. } => Err(refused(&state)),
            SpendDecision::Unpriced { model } => Err(unpriced(&model)),
            SpendDecision::Reserved { reservation, states, .. } => {
                self.warn_soft(&states, sink);
                let answer = self.timed(request, sink).await;
                Box::pin(self.settle(reservation)).await;
                answer
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Vec<ChatMessage>, max_tokens: Option<u32>) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages,
            tools: std::sync::Arc::from([]),
            max_tokens,
            settings: Default::default(),
        }
    }

    /// A model that must never be called.
    struct Unreachable;

    impl ChatModel for Unreachable {
        async fn complete(&self, _: &ChatRequest, _: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
            panic!("the call went ahead although the caps could not be read")
        }
    }

    #[tokio::test]
    async fn caps_that_cannot_be_read_refuse_the_call() {
        // A ledger that is not there (nothing listens on port 1).
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        let model = Budgeted {
            inner: Unreachable,
            store: Store::connect_lazy("postgres://hermes@127.0.0.1:1/none", Duration::from_millis(300)).unwrap(),
            tenant,
            agent: AgentId::new(),
            models: vec!["m".into()],
            priority_capable: Vec::new(),
            meter: Arc::default(),
            ledger: Ledger { session: SessionId::new(), turn: TurnId::new() },
            lease: Duration::from_secs(60),
            capped: true,
            warned: Default::default(),
        };
        let refused =
            model.complete(&request(vec![ChatMessage::user("hi")], None), &mut hermes_llm::NoDeltas).await.unwrap_err();
        assert_eq!(refused.code(), hermes_core::ErrorCode::InsufficientQuota);
        assert!(refused.to_string().contains("cannot be checked"), "{refused}");
    }

    #[test]
    fn the_estimate_counts_what_is_sent_and_tools_too() {
        let plain = request(vec![ChatMessage::user("x".repeat(4000))], None);
        assert!(input_estimate(&plain) >= 1000, "{}", input_estimate(&plain));
        let mut with_tools = plain.clone();
        with_tools.tools = std::sync::Arc::from([std::sync::Arc::new(
            serde_json::json!({"type": "function", "function": {"name": "t", "description": "d".repeat(4000)}}),
        )]);
        assert!(input_estimate(&with_tools) >= input_estimate(&plain) + 1000, "tool schemas are input too");
    }
}
