//! Turns as they happen: the tenant's open turns, stopping one, and one turn's events as
//! server-sent events (answer text as it streams, tools starting and finishing, the end).
//! Events come through this pod's event hub, which binds to the turn's session for as long
//! as someone watches; Postgres says when the turn ended, should an event be lost.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::Path;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::mpsc;

use hermes_core::access::AdminOp;
use hermes_core::{ErrorCode, TenantId, TurnEventKind, TurnId, TurnOutcome};
use hermes_http::ApiError;
use hermes_store::TurnStatus;
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::TurnStopped;

use crate::admin::errors::{Result, path_id, store_error, store_error_for};
use crate::admin::state::AdminState;
use crate::admin::tenant_call::TenantCall;
use crate::documented::{NoSuchTurn, ObjectPath, TenantNotFound, TenantPath, TurnPath};

/// How long one watch lasts at most; the console opens another.
const WATCH_LIMIT: Duration = Duration::from_secs(15 * 60);

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/turns", tag = "admin: sessions", params(TenantPath),
    responses((status = 200, description = "Turns queued, running or waiting for an answer, newest first", body = List<hermes_wire::admin::OpenTurn>),
        TenantNotFound))]
pub(crate) async fn open_turns(call: TenantCall) -> Result<Json<List<hermes_wire::admin::OpenTurn>>> {
    call.list(AdminOp::ViewSessions, async |store, t| store.admin().open_turns(t).await).await
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/turns/{id}/stop", tag = "admin: sessions",
    params(TenantPath, TurnPath),
    responses((status = 200, description = "`cancelled` (it had not started) or `stopping` (its worker stops it)", body = TurnStopped),
        (status = 403, description = "The caller's role may not stop turns", body = hermes_wire::ErrorBody),
        NoSuchTurn,
        (status = 409, description = "It has already ended", body = hermes_wire::ErrorBody)))]
pub(crate) async fn stop(call: TenantCall, Path(ObjectPath { id }): Path<ObjectPath>) -> Result<Json<TurnStopped>> {
    let t = call.allow(AdminOp::ManageSessions).await?;
    let turn: TurnId = path_id(&id, ErrorCode::RunNotFound, "turn")?;
    call.state
        .store
        .admin()
        .turn_session(t.id, turn)
        .await
        .map_err(|e| store_error_for(e, ErrorCode::RunNotFound, "turn"))?;
    let mut tx = call.begin(t.id).await?;
    let was = tx.request_cancel(turn, &TurnOutcome::cancelled()).await.map_err(store_error)?;
    let status = match was {
        None => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "invalid_request_error",
                Some(ErrorCode::RunNotActive),
                "the turn has already ended",
            ));
        }
        Some(TurnStatus::Running) => "stopping",
        Some(_) => "cancelled",
    };
    tx.commit(Change::new("turn.stopped", "turn", turn).after(StatusAudit { status })).await.map_err(store_error)?;
    // Told once the stop is committed, so the worker that hears it sees it.
    if was == Some(TurnStatus::Running)
        && let Err(e) = call.state.cancels.publish(turn).await
    {
        tracing::warn!(error = %e, "cannot broadcast the stop; the worker's heartbeat will see it");
    }
    Ok(Json(TurnStopped { id: turn, status: status.to_owned() }))
}

/// What the audit trail records of a stopped turn.
#[derive(serde::Serialize)]
struct StatusAudit {
    status: &'static str,
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/turns/{id}/events", tag = "admin: sessions",
    params(TenantPath, TurnPath),
    responses((status = 200, description = "Server-sent events: first `history` (the turn's messages so far), then its events as JSON, by `type` (`started`, `delta`, `reasoning`, `tool_started`, `tool_completed`, `notice`, `waiting`, `finished`), ending with the turn", content_type = "text/event-stream", body = String),
        NoSuchTurn))]
pub(crate) async fn events(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let t = call.allow(AdminOp::ViewSessions).await?;
    let turn: TurnId = path_id(&id, ErrorCode::RunNotFound, "turn")?;
    let session = call
        .state
        .store
        .admin()
        .turn_session(t.id, turn)
        .await
        .map_err(|e| store_error_for(e, ErrorCode::RunNotFound, "turn"))?;
    let (tx, rx) = mpsc::channel::<Event>(64);
    let follow = Follow { state: call.state.clone(), tenant: t.id, turn, session };
    hermes_telemetry::tasks::spawn("admin_live_follow", async move { follow.run(tx).await });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

struct Follow {
    state: AdminState,
    tenant: TenantId,
    turn: TurnId,
    session: hermes_core::SessionId,
}

fn event(value: &impl serde::Serialize) -> Event {
    Event::default().data(serde_json::to_string(value).unwrap_or_default())
}

/// What the watch sends besides the turn's own events: what it did before, and its end.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Watched<'a> {
    History { messages: &'a [hermes_core::ChatMessage] },
    Finished { status: &'static str, outcome: Option<TurnOutcome> },
}

impl Follow {
    /// Forwards the turn's events until it ends, the watcher leaves, or the limit passes.
    async fn run(self, tx: mpsc::Sender<Event>) {
        let hub = self.state.events.clone();
        // Watch first, then read the state: nothing that happens in between is missed.
        let watch = match &hub {
            Some(hub) => hub.watch_session(self.tenant, self.session).await.ok(),
            None => None,
        };
        let mut subscription = hub.as_ref().map(|h| h.subscribe(self.turn));
        // What the turn did before the watch began (tool calls and their results are stored as
        // they happen); events from here on come live.
        if let Ok(messages) = self.state.store.conversations().turn_messages(self.tenant, self.turn).await {
            let _ = tx.send(event(&Watched::History { messages: &messages })).await;
        }
        if self.ended(&tx).await {
            return;
        }
        let deadline = tokio::time::Instant::now() + WATCH_LIMIT;
        let mut check = tokio::time::interval(Duration::from_secs(2));
        loop {
            tokio::select! {
                next = async { match subscription.as_mut() { Some(s) => s.next().await, None => std::future::pending().await } } => {
                    let Some(ev) = next else { subscription = None; continue };
                    let last = matches!(ev.kind, TurnEventKind::Finished { .. } | TurnEventKind::Waiting { .. });
                    if tx.send(event(&ev)).await.is_err() || last {
                        break;
                    }
                }
                _ = check.tick() => {
                    if self.ended(&tx).await {
                        break;
                    }
                }
                () = tx.closed() => break,
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        drop(watch);
    }

    /// Sends the end and says so when the turn is no longer running (Postgres's word).
    async fn ended(&self, tx: &mpsc::Sender<Event>) -> bool {
        match self.state.store.turns().turn_state(self.tenant, self.turn).await {
            Ok((status, outcome)) if !matches!(status, TurnStatus::Queued | TurnStatus::Running) => {
                let end = Watched::Finished { status: status.as_str(), outcome };
                let _ = tx.send(event(&end)).await;
                true
            }
            _ => false,
        }
    }
}
