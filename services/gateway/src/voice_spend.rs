//! A voice note's transcription under the team's spending caps (security review 2026-12, L8),
//! as the worker's media calls are: the audio's estimated length is reserved against the caps
//! over the channel's agent before the service is called; once a hard cap is reached (or a hard
//! cap applies and the transcription model has no price) the recording is not sent, and the
//! agent is told why. If the caps cannot be read the call is refused (fail closed). A call that
//! billed is recorded with its turn in place of the reservation; one that billed nothing
//! releases it.

use std::time::Duration;

use hermes_core::SpendReservationId;

use hermes_store::{MediaCall, MediaUnits, SpendDecision, SpendRequest, Store};

use crate::voice::{Transcriber, Unheard, recording_ms};

/// How long a reservation holds if the gateway dies mid-call (longer than any transcription).
const LEASE: Duration = Duration::from_secs(15 * 60);

/// A transcription the service billed, and the reservation it settles.
#[derive(Debug, Clone)]
pub(crate) struct Billed {
    pub call: MediaCall,
    pub reservation: Option<SpendReservationId>,
}

/// Reserves the transcription of `audio` for `channel`'s agent; `Err` says why it may not be
/// made. `Ok(None)`: no cap applies.
pub(crate) async fn reserve(
    store: &Store,
    channel: &hermes_store::Channel,
    transcriber: &Transcriber,
    audio: &[u8],
) -> Result<Option<SpendReservationId>, Unheard> {
    let models = [transcriber.endpoint.model.clone()];
    let ask = SpendRequest {
        agent: channel.agent_id,
        models: &models,
        input_tokens: 0,
        output_tokens: 0,
        media: MediaUnits { audio_ms: recording_ms(audio), ..Default::default() },
        priority_models: &[],
        lease: LEASE,
    };
    let decision = store.tenancy().reserve_spend(channel.tenant_id, &ask, chrono::Utc::now()).await.map_err(|e| {
        tracing::warn!(error = %e, "cannot read the spending caps; the voice note is not transcribed");
        metrics::counter!("hermes_budget_unreadable_total").increment(1);
        Unheard::Capped("the spending caps cannot be checked right now".into())
    })?;
    match decision {
        SpendDecision::Uncapped => Ok(None),
        SpendDecision::Reserved { reservation, .. } => Ok(Some(reservation)),
        SpendDecision::Refused { state, .. } => {
            let period = match state.budget.period {
                hermes_core::BudgetPeriod::Day => "today's",
                hermes_core::BudgetPeriod::Month => "this month's",
            };
            Err(Unheard::Capped(format!("{period} spending cap is reached")))
        }
        SpendDecision::Unpriced { model } => {
            Err(Unheard::Capped(format!("a spending cap applies and {model} has no price")))
        }
    }
}

/// Gives back a reservation whose call billed nothing (or could not be recorded anywhere).
pub(crate) async fn release(store: &Store, tenant: hermes_core::TenantId, reservation: Option<SpendReservationId>) {
    let Some(reservation) = reservation else { return };
    if let Err(e) = store.tenancy().release_spend(tenant, reservation).await {
        tracing::warn!(error = %e, "a transcription's reservation could not be released; it lapses at its lease");
    }
}
