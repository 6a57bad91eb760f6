//! `GET /v1/runs/{id}/events`: a run's lifecycle as server-sent events, upstream's way:
//! `data:`-only JSON lines whose `event` is `message.delta`, `reasoning.available`,
//! `tool.started`, `tool.completed`, `approval.request` (or `clarify.request`),
//! `approval.responded`, then one of `run.completed`, `run.failed`, `run.cancelled`, and the
//! comment `: stream closed`. Any API pod can serve it: the pod binds its event queue to the
//! run's session while the stream is open, and Postgres fills in what events cannot (a run
//! that ended before the stream opened, a lost event).

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::mpsc;

use hermes_core::{InteractionKind, SessionId, TenantId, TurnEventKind, TurnId, TurnOutcome};
use hermes_http::ApiError;
use hermes_store::{Store, TurnStatus};
use hermes_wire::v1::{InteractionRequest, Responded, RunEvent, RunEventKind, RunStatus};

use crate::documented::{BadRequest, NoApiKey, NotFound, ObjectPath};
use crate::runs_object::{VisibleRun, run_id, run_status, usage};
use crate::state::AppState;
use crate::visible::Visible;
use crate::wait::{Next, Waiter};

fn line(run: &str, kind: RunEventKind) -> Event {
    let timestamp = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
    let event = RunEvent { kind, run_id: run.to_owned(), timestamp };
    Event::default().json_data(event).unwrap_or_else(|_| Event::default().comment("unserializable event"))
}

/// The event that ends the stream.
fn terminal(run: &str, outcome: &TurnOutcome) -> Event {
    let cancelled = outcome.error_code == Some(hermes_core::ErrorCode::Cancelled);
    let kind = match run_status(TurnStatus::Completed, Some(outcome), None) {
        _ if cancelled => RunEventKind::Cancelled,
        RunStatus::Failed => RunEventKind::Failed { error: outcome.error.clone(), code: outcome.error_code },
        _ => RunEventKind::Completed { output: outcome.content.clone(), usage: usage(outcome) },
    };
    line(run, kind)
}

/// A turn's event as a run event; `None` for events a run's stream leaves out.
fn run_event(event: TurnEventKind) -> Option<RunEventKind> {
    Some(match event {
        TurnEventKind::Delta { text } => RunEventKind::MessageDelta { delta: text },
        TurnEventKind::Reasoning { text } => RunEventKind::ReasoningAvailable { text },
        TurnEventKind::ToolStarted { call_id, tool, preview, .. } => {
            RunEventKind::ToolStarted { tool, preview, call_id }
        }
        TurnEventKind::ToolCompleted { call_id, tool, ok, duration_ms, .. } => {
            RunEventKind::ToolCompleted { tool, duration: duration_ms as f64 / 1000.0, error: !ok, call_id }
        }
        TurnEventKind::Notice { code, message } => RunEventKind::Notice { code, message },
        _ => return None,
    })
}

/// The approval or question a run waits on, as its event.
fn waiting_event(interaction: &hermes_core::PendingInteraction) -> RunEventKind {
    let request = InteractionRequest {
        interaction_id: interaction.id,
        expires_at: interaction.expires_at,
        prompt: interaction.prompt.as_object().cloned().unwrap_or_default(),
    };
    match interaction.kind {
        InteractionKind::Approval => RunEventKind::ApprovalRequest(request),
        InteractionKind::Clarify => RunEventKind::ClarifyRequest(request),
    }
}

#[utoipa::path(get, path = "/v1/runs/{id}/events", tag = "hermes", params(ObjectPath),
    responses((status = 200, description = "Server-sent events: data-only JSON lines (message.delta, tool.started, tool.completed, approval.request, approval.responded, run.completed, run.failed, run.cancelled)", content_type = "text/event-stream", body = String), BadRequest, NoApiKey, NotFound))]
pub(crate) async fn events(
    Visible { state, auth, found: (turn, run), .. }: Visible<VisibleRun>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    follow(&state, auth.tenant_id, turn, run.session_id).await
}

/// The run's events from now on (and, from Postgres, what happened before), as a stream that
/// ends with the run, when the client goes away, or after the turn timeout.
async fn follow(
    state: &AppState,
    tenant: TenantId,
    turn: TurnId,
    session: SessionId,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, ApiError> {
    // Bind before subscribing and before reading Postgres, so nothing falls in between.
    let watch = state
        .events
        .watch_session(tenant, session)
        .await
        .map_err(|e| ApiError::unavailable(format!("cannot follow the run: {e}")))?;
    let sub = state.events.subscribe(turn);
    let recheck = Duration::from_secs(state.config.api.recheck_seconds.max(1));
    let waiter = Waiter::new(sub, state.store.clone(), tenant, turn, recheck).checking_first();
    let limit = Duration::from_secs(state.config.api.turn_timeout_seconds);
    let (tx, mut rx) = mpsc::channel::<Result<Event, Infallible>>(64);
    let store = state.store.clone();
    hermes_telemetry::tasks::spawn("api_run_events", async move {
        let _watch = watch;
        let closed = tx.clone();
        tokio::select! {
            () = closed.closed() => {}
            _ = tokio::time::timeout(limit, pump(waiter, store, turn, tx)) => {}
        }
    });
    let stream = futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let keepalive = Duration::from_secs(state.config.api.keepalive_seconds.max(1));
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(keepalive).text("keepalive")))
}

async fn pump(mut waiter: Waiter, store: Store, turn: TurnId, tx: mpsc::Sender<Result<Event, Infallible>>) {
    let run = run_id(turn);
    let tenant = waiter.tenant;
    // The interaction the run waits on, once announced: a recheck repeats it, and the next
    // event after it means it was answered.
    let mut waiting_on: Option<uuid::Uuid> = None;
    loop {
        let next = waiter.next().await;
        if let (Some(_), Next::Event(_) | Next::Finished(_)) = (&waiting_on, &next) {
            waiting_on = None;
            if let Ok(Some((_, answer))) = store.turns().turn_resolution(tenant, turn).await {
                let responded = match answer {
                    hermes_core::InteractionAnswer::Approval { choice } => Responded::Choice { choice },
                    answer => Responded::Answer { answer },
                };
                if tx.send(Ok(line(&run, RunEventKind::ApprovalResponded(responded)))).await.is_err() {
                    return;
                }
            }
        }
        let event = match next {
            Next::Finished(outcome) => {
                let _ = tx.send(Ok(terminal(&run, &outcome))).await;
                let _ = tx.send(Ok(Event::default().comment("stream closed"))).await;
                return;
            }
            Next::Waiting(interaction) if waiting_on == Some(interaction.id.as_uuid()) => continue,
            Next::Waiting(interaction) => {
                waiting_on = Some(interaction.id.as_uuid());
                line(&run, waiting_event(&interaction))
            }
            Next::Event(event) => match run_event(event) {
                Some(kind) => line(&run, kind),
                None => continue,
            },
        };
        if tx.send(Ok(event)).await.is_err() {
            return;
        }
    }
}
