//! Running one claimed turn, in three parts: the [`plan`] (everything the loop needs, read and
//! built in one place), the [`run`] (the agent loop, with a heartbeat on the lease and the
//! session lock around the whole turn), and the [`end`] (the outcome stored and announced, the
//! goal advanced, a review queued). Below them: the [`claim`] (the turn held and by whom, and
//! how it is handed back or stopped) and the failed [`outcome`]s the turn's own code decides.

mod claim;
mod end;
mod outcome;
mod plan;
mod run;
pub(crate) mod setup;

use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use hermes_agent::{EventSink, TurnEnd};
use hermes_cache::LockGuard;
use hermes_core::{TenantId, TurnEventKind};
use hermes_store::turn_inputs::TurnInputs;
use hermes_store::{ClaimedTurn, StoreError};

use crate::Runtime;
use crate::events::EventPublisher;
use crate::journal::StoreJournal;
use crate::phases::Phase;
use claim::{Claim, Ran};
use end::Ending;
use plan::Planned;

/// Runs a claimed turn with heartbeats. Returns `false` when the worker should stop working
/// on this session (draining, the lease was lost, or the session was taken over).
pub(crate) async fn run_claimed_turn(
    rt: &Arc<Runtime>,
    tenant: TenantId,
    owner: &str,
    turn: ClaimedTurn,
    inputs: Result<Box<TurnInputs>, StoreError>,
    guard: &LockGuard,
    parent: &tracing::Span,
) -> bool {
    // The GenAI agent span, in the trace the turn was enqueued in: a turn resumed by another
    // worker after a crash continues the same trace.
    let span = tracing::info_span!(
        parent: parent,
        "turn",
        otel.name = "invoke_agent",
        otel.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.id = %turn.agent_id,
        gen_ai.conversation.id = %turn.session_id,
        turn.id = %turn.turn_id,
        attempt = turn.attempt,
    );
    hermes_telemetry::context::adopt(&span, turn.trace.as_ref());
    let claim = || Claim { rt, tenant, owner, turn: &turn };
    let work = execute(claim(), inputs).instrument(span.clone());
    run::supervise(claim(), guard, &span, work).await
}

/// Plans (with the inputs read at the claim), runs and ends the turn.
async fn execute(claim: Claim<'_>, inputs: Result<Box<TurnInputs>, StoreError>) -> Ran {
    let Claim { rt, tenant, turn, .. } = claim;
    let started = Instant::now();
    let events = EventPublisher::for_turn(rt.ctx.broker.clone(), tenant, turn);
    events.emit(TurnEventKind::Started);
    let mut journal = StoreJournal::new(rt.ctx.store.clone(), tenant, turn);
    // The plan, the end and the rarer paths run boxed: a future is as large as its largest
    // state, and this one lives for the whole turn (thousands may wait on their models at
    // once), while those states are short and large.
    let planned = Box::pin(plan::plan(rt, tenant, turn, inputs, (journal.meter(), events.relay()))).await;
    Phase::Prompt.record(started.elapsed());
    let ending = match planned {
        Ok(Planned::Run(mut plan)) => {
            let end = run::agent_loop(&mut plan, &mut journal, &events).await;
            Box::pin(end::after_loop(rt, tenant, &plan, &journal, end)).await
        }
        Ok(Planned::Answered(reply)) => Ending::from(TurnEnd::Finished(reply)),
        Ok(Planned::Compress { models, prompt, history }) => {
            Ending::from(Box::pin(crate::commands::compress(&models, prompt, &history, &mut journal)).await)
        }
        Err(e) => Ending::from(TurnEnd::from(e)),
    };
    Box::pin(end::settle(&claim, journal, events, ending, started)).await
}

#[cfg(test)]
mod sizes {
    //! A turn's task lives as long as the turn, and thousands may wait on their models at once:
    //! its future is as large as its largest state, so the short, large states (plan, end,
    //! claim, heartbeat I/O, spending checks, key-pool calls, the loop's journal and tool
    //! steps) run boxed. These bounds catch a change that inlines one again.
    use super::*;

    fn size_of_output<A, B, F>(_: impl FnOnce(A, B) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_waiting_turn_holds_a_small_future() {
        let delivery = size_of_output(crate::session::handle_delivery);
        let turn = size_of_output(execute);
        // First (dev profile) 26.8 and 15.1 KiB. With plan, end, claim and heartbeat boxed, 21.0
        // and 18.6 KiB in release: the spending checks, key-pool calls and the loop's own
        // journal and tool steps were still inline around the model call. With those boxed
        // too, 7.9 and 5.6 KiB in both profiles.
        eprintln!("the delivery's future: {delivery} bytes; the turn's: {turn} bytes");
        assert!(delivery <= 10 * 1024, "the delivery's future is {delivery} bytes");
        assert!(turn <= 8 * 1024, "the turn's future is {turn} bytes");
    }
}
