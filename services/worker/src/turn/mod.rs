//! Running one claimed turn, in three parts: the [`plan`] (everything the loop needs, read and
//! built in one place), the [`run`] (the agent loop, with a heartbeat on the lease and the
//! session lock around the whole turn), and the [`end`] (the outcome stored and announced, the
//! goal advanced, a review queued).

mod end;
mod plan;
mod run;
mod setup;

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use hermes_agent::{EventSink, TurnEnd};
use hermes_cache::LockGuard;
use hermes_core::{TenantId, TurnEventKind};
use hermes_store::ClaimedTurn;

use crate::Runtime;
use crate::events::EventPublisher;
use crate::journal::StoreJournal;
use crate::phases::Phase;
use end::Ending;
use plan::Planned;
use run::{Claim, Ran};

/// Runs a claimed turn with heartbeats. Returns `false` when the worker should stop working
/// on this session (draining, the lease was lost, or the session was taken over).
pub(crate) async fn run_claimed_turn(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    owner: &str,
    turn: ClaimedTurn,
    guard: &LockGuard,
    parent: &tracing::Span,
) -> bool {
    let span = tracing::info_span!(parent: parent, "turn", turn.id = %turn.turn_id, attempt = turn.attempt);
    let claim = || Claim { rt, tenant, owner, turn: &turn };
    let work = execute(claim()).instrument(span.clone());
    run::supervise(claim(), guard, &span, work).await
}

/// Plans, runs and ends the turn.
async fn execute(claim: Claim<'_>) -> Ran {
    let Claim { rt, tenant, turn, .. } = claim;
    let started = Instant::now();
    let events = EventPublisher::for_turn(rt.ctx.broker.clone(), tenant, turn);
    events.emit(TurnEventKind::Started);
    let mut journal = StoreJournal::new(rt.ctx.store.clone(), tenant, turn);
    let planned = plan::plan(rt, tenant, turn, journal.meter()).await;
    Phase::Prompt.record(started.elapsed());
    let ending = match planned {
        Ok(Planned::Run(mut plan)) => {
            let end = run::agent_loop(&mut plan, &mut journal, &events).await;
            end::after_loop(rt, tenant, &plan, &journal, end).await
        }
        Ok(Planned::Answered(reply)) => Ending::from(TurnEnd::Finished(reply)),
        Ok(Planned::Compress { models, prompt, history }) => {
            Ending::from(crate::commands::compress(&models, prompt, &history, &mut journal).await)
        }
        Err(e) => Ending::from(TurnEnd::from(e)),
    };
    end::settle(&claim, journal, events, ending, started).await
}
