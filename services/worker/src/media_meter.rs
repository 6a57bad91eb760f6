//! Media calls under the spending caps, as model calls are ([`crate::budget`]): before a
//! picture is made or text spoken, the call reserves its estimated cost against the caps
//! over the agent (refused, with the same words as a model call, once a hard cap is reached
//! or when a hard cap applies and the media model has no price); once the service answered,
//! the call is recorded with its billed units in place of the reservation. A call the service
//! failed releases its reservation. If the caps cannot be read the call is refused (fail
//! closed, as model calls); if the record cannot be written the reservation lapses at its
//! lease and the failure is logged and counted.

use std::time::Duration;

use hermes_core::{AgentId, CallPurpose, SessionId, TenantId, TurnId};
use hermes_store::{MediaCall, MediaUnits, SpendDecision, SpendRequest, Store};

/// How long a reservation holds if the worker dies mid-call (longer than any media call).
const LEASE: Duration = Duration::from_secs(15 * 60);

/// The turn a media call belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MediaScope {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub session: SessionId,
    pub turn: TurnId,
}

impl From<&hermes_tools::ToolCtx> for MediaScope {
    fn from(ctx: &hermes_tools::ToolCtx) -> Self {
        Self { tenant: ctx.tenant_id, agent: ctx.agent_id, session: ctx.session_id, turn: ctx.turn_id }
    }
}

/// A media call the caps let through: record it (or release it) when the service answered.
#[must_use = "an admitted call is recorded or released"]
pub(crate) struct Admitted {
    scope: MediaScope,
    purpose: CallPurpose,
    model: String,
    reservation: Option<hermes_core::SpendReservationId>,
}

/// Asks the caps whether a `purpose` call of `model` billing about `estimate` may start.
/// `Err` is the refusal, worded for the model (and so the user).
pub(crate) async fn admit(
    store: &Store,
    scope: MediaScope,
    purpose: CallPurpose,
    model: &str,
    estimate: MediaUnits,
) -> Result<Admitted, String> {
    let models = [model.to_owned()];
    let ask = SpendRequest {
        agent: scope.agent,
        models: &models,
        input_tokens: 0,
        output_tokens: 0,
        media: estimate,
        priority_models: &[],
        lease: LEASE,
    };
    let decision = store.tenancy().reserve_spend(scope.tenant, &ask, chrono::Utc::now()).await.map_err(|e| {
        tracing::warn!(error = %e, "cannot read the spending caps; the media call is refused");
        metrics::counter!("hermes_budget_unreadable_total").increment(1);
        "The spending caps cannot be checked right now, so this is not made. Please try again shortly.".to_owned()
    })?;
    let reservation = match decision {
        SpendDecision::Uncapped => None,
        SpendDecision::Reserved { reservation, .. } => Some(reservation),
        SpendDecision::Refused { state, .. } => return Err(crate::budget::refused(&state).message),
        SpendDecision::Unpriced { model } => return Err(crate::budget::unpriced(&model).message),
    };
    Ok(Admitted { scope, purpose, model: model.to_owned(), reservation })
}

impl Admitted {
    /// Records the call the service answered (billing `units`), in place of its reservation.
    pub(crate) async fn record(self, store: &Store, provider: &str, units: MediaUnits, latency: Duration) {
        let call = MediaCall {
            purpose: self.purpose,
            provider: provider.to_owned(),
            model: self.model,
            units,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
        };
        let MediaScope { tenant, session, turn, .. } = self.scope;
        if let Err(e) = store.tenancy().settle_media_call(tenant, session, turn, self.reservation, &call).await {
            tracing::warn!(error = %e, purpose = call.purpose.as_str(), "a media call's usage could not be recorded");
            metrics::counter!("hermes_media_usage_unrecorded_total").increment(1);
        }
    }

    /// Gives the reservation back: the service made nothing (so billed nothing).
    pub(crate) async fn release(self, store: &Store) {
        if let Some(reservation) = self.reservation
            && let Err(e) = store.tenancy().release_spend(self.scope.tenant, reservation).await
        {
            tracing::warn!(error = %e, "a media call's reservation could not be released; it lapses at its lease");
        }
    }
}
