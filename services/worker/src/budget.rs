//! Spending caps before every model call (`hermes_store::budgets`): a reached hard cap refuses
//! the call with `insufficient_quota`, which ends the turn with a clear message (402 on the
//! API); a reached soft cap is logged and counted. If the caps cannot be read the call is
//! refused too (fail closed: a cap that cannot be checked cannot be kept; the same outage stops
//! the turn's own records anyway).

use hermes_core::{AgentId, BudgetPeriod, TenantId};
use hermes_llm::{ChatModel, ChatRequest, ChatResponse, DeltaSink, ErrorClass, LlmError};
use hermes_store::Store;

pub(crate) struct Budgeted<M> {
    pub inner: M,
    pub store: Store,
    pub tenant: TenantId,
    pub agent: AgentId,
    /// The turn was told a soft cap is reached (once per turn is enough).
    pub warned: std::sync::atomic::AtomicBool,
}

impl<M> Budgeted<M> {
    /// The refusal for the first reached hard cap, if any; a reached soft cap is said once.
    async fn refusal(&self, sink: &mut dyn DeltaSink) -> Option<LlmError> {
        let states = match self.store.budget_states(self.tenant, self.agent, chrono::Utc::now()).await {
            Ok(states) => states,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the spending caps; the call is refused");
                metrics::counter!("hermes_budget_unreadable_total").increment(1);
                return Some(LlmError::new(
                    ErrorClass::SpendCap,
                    "The spending caps cannot be checked right now, so no model call is made. Please try again shortly."
                        .to_owned(),
                ));
            }
        };
        for state in states.iter().filter(|s| s.soft_reached() && !s.hard_reached()) {
            tracing::warn!(tenant.id = %self.tenant, period = %state.budget.period, spent = state.spent_usd, "soft spending cap reached");
            metrics::counter!("hermes_budget_soft_reached_total").increment(1);
            if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                let whose = if state.budget.agent_id.is_some() { "This agent's" } else { "Your team's" };
                let (period, _) = wording(state.budget.period);
                sink.notice(
                    "soft_cap_reached",
                    &format!(
                        "{whose} {period} spending warning level (${:.2}) is reached: ${:.2} spent so far.",
                        state.budget.soft_usd.unwrap_or_default(),
                        state.spent_usd
                    ),
                );
            }
        }
        let state = states.iter().find(|s| s.hard_reached())?;
        let whose = if state.budget.agent_id.is_some() { "This agent's" } else { "Your team's" };
        let (period, until) = wording(state.budget.period);
        metrics::counter!("hermes_budget_refusals_total").increment(1);
        Some(LlmError::new(
            ErrorClass::SpendCap,
            format!(
                "{whose} {period} spending cap (${:.2}) is reached (${:.2} spent), so no more model calls are made \
                 until {until} or until an administrator raises the cap.",
                state.budget.hard_usd.unwrap_or_default(),
                state.spent_usd
            ),
        ))
    }
}

/// How a period reads in a message: its adjective, and when a cap of it lifts.
fn wording(period: BudgetPeriod) -> (&'static str, &'static str) {
    match period {
        BudgetPeriod::Day => ("daily", "tomorrow"),
        BudgetPeriod::Month => ("monthly", "next month"),
    }
}

impl<M: ChatModel> ChatModel for Budgeted<M> {
    async fn complete(&self, request: &ChatRequest, sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        if let Some(refusal) = self.refusal(sink).await {
            return Err(refusal);
        }
        self.inner.complete(request, sink).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let pool = sqlx::postgres::PgPoolOptions::new()
            .acquire_timeout(std::time::Duration::from_millis(300))
            .connect_lazy("postgres://hermes@127.0.0.1:1/none")
            .unwrap();
        #[expect(clippy::disallowed_methods, reason = "test fixture")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        let model = Budgeted {
            inner: Unreachable,
            store: Store::from_pool(pool),
            tenant,
            agent: AgentId::new(),
            warned: Default::default(),
        };
        let request = ChatRequest {
            model: "m".into(),
            messages: vec![hermes_core::ChatMessage::user("hi")],
            tools: Vec::new(),
            max_tokens: None,
        };
        let refused = model.complete(&request, &mut hermes_llm::NoDeltas).await.unwrap_err();
        assert_eq!(refused.code(), hermes_core::ErrorCode::InsufficientQuota);
        assert!(refused.to_string().contains("cannot be checked"), "{refused}");
    }
}
