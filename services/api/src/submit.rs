//! One way to submit a turn, for every API that starts or resumes one (chat completions,
//! responses, runs, answered interactions): take a slot in the rate limits, store the turn
//! (once per `Idempotency-Key`), name it in the request's span, subscribe to its events, tell
//! the workers, and hand back what follows it.

use std::time::Duration;

use axum::extract::{FromRef, FromRequest, FromRequestParts, Request};
use axum::http::HeaderMap;
use serde::de::DeserializeOwned;

use hermes_core::{SessionId, TenantId, TurnId};
use hermes_http::{ApiError, ApiJson, BodyLimit, ErrorCode};
use hermes_queue::SessionWork;
use hermes_store::{Enqueued, Idempotency, KeyAuth, NewTurn, StoreError};

use crate::auth::Caller;
use crate::completion::{Completion, DisconnectGuard};
use crate::limits::TurnPermit;
use crate::state::AppState;
use crate::wait::Waiter;

/// A request that starts a turn: the caller, the headers that may name its session, end user
/// and idempotency key, and its JSON body.
pub(crate) struct TurnRequest<T> {
    pub state: AppState,
    pub auth: KeyAuth,
    pub headers: HeaderMap,
    pub body: T,
}

impl<S, T> FromRequest<S> for TurnRequest<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
    AppState: FromRef<S>,
    BodyLimit: FromRef<S>,
{
    /// 401 without a key, then a bad body's 400.
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let (mut parts, body) = req.into_parts();
        let Caller(auth) = Caller::from_request_parts(&mut parts, state).await?;
        let headers = parts.headers.clone();
        let ApiJson(body) = ApiJson::from_request(Request::from_parts(parts, body), state).await?;
        Ok(Self { state: AppState::from_ref(state), auth, headers, body })
    }
}

/// The API a turn came through, as the metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    ChatCompletions,
    Responses,
    Runs,
}

impl Entry {
    fn count(self, stream: bool) {
        let stream = stream.to_string();
        match self {
            Entry::ChatCompletions => metrics::counter!("hermes_api_turns_total", "stream" => stream).increment(1),
            Entry::Responses => metrics::counter!("hermes_api_responses_total", "stream" => stream).increment(1),
            Entry::Runs => metrics::counter!("hermes_api_runs_total").increment(1),
        }
    }
}

/// What to submit.
pub(crate) enum Work {
    /// A new turn, counted against the caller's turns in flight.
    New { entry: Entry, turn: Box<NewTurn>, idempotency: Option<Idempotency> },
    /// A turn that waited for the user and has its answer stored (it keeps no slot: the
    /// request that started it held one until it began to wait).
    Resumed { session: SessionId, turn: TurnId },
}

/// A submitted turn: its ids, and its events from before the workers were told of it.
pub(crate) struct Submitted {
    pub session: SessionId,
    pub turn: TurnId,
    tenant: TenantId,
    waiter: Waiter,
    permit: Option<TurnPermit>,
    /// The request carried an `Idempotency-Key`: its client will retry and join the turn, so a
    /// disconnect must not stop it.
    idempotent: bool,
}

/// Submits `work` for the caller. Boxed: the submission's queries and publish are over
/// before the request waits for the turn, and an unboxed future would keep their size in
/// every waiting request's future (thousands may wait at once).
pub(crate) fn submit_turn<'a>(
    state: &'a AppState,
    auth: &'a KeyAuth,
    work: Work,
) -> futures_util::future::BoxFuture<'a, Result<Submitted, ApiError>> {
    Box::pin(submit(state, auth, work))
}

async fn submit(state: &AppState, auth: &KeyAuth, work: Work) -> Result<Submitted, ApiError> {
    let (session, turn, replay, permit, idempotent) = match work {
        Work::New { entry, turn, idempotency } => {
            let permit = crate::limits::start_turn(state, auth).await?;
            let stream = turn.stream;
            let (session, turn, replay) = enqueue(state, auth, *turn, idempotency.as_ref()).await?;
            entry.count(stream);
            (session, turn, replay, Some(permit), idempotency.is_some())
        }
        Work::Resumed { session, turn } => (session, turn, false, None, false),
    };
    let span = tracing::Span::current();
    span.record("session.id", tracing::field::display(session));
    span.record("turn.id", tracing::field::display(turn));
    // Subscribe before signalling, so no event can be missed.
    let sub = state.events.subscribe(turn);
    signal_work(state, SessionWork { tenant_id: auth.tenant_id, session_id: session }).await;
    let recheck = Duration::from_secs(state.config.api.recheck_seconds.max(1));
    let mut waiter = Waiter::new(sub, state.store.clone(), auth.tenant_id, turn, recheck);
    if replay {
        // An earlier request's turn: it may be over, and its events go to the pod that took it.
        metrics::counter!("hermes_api_idempotent_replays_total").increment(1);
        waiter = waiter.checking_first();
    }
    Ok(Submitted { session, turn, tenant: auth.tenant_id, waiter, permit, idempotent })
}

impl Submitted {
    /// The answer for a client that waits on the turn (stopped if the client goes away, when
    /// `api.on_disconnect` says so and the request has no `Idempotency-Key`), answered as `model`.
    pub fn completion(self, state: &AppState, model: String) -> Completion {
        let api = &state.config.api;
        Completion {
            waiter: self.waiter,
            turn: self.turn,
            model,
            timeout: Duration::from_secs(api.turn_timeout_seconds),
            keepalive: Duration::from_secs(api.keepalive_seconds.max(1)),
            guard: DisconnectGuard {
                store: state.store.clone(),
                cancels: state.cancels.clone(),
                tenant: self.tenant,
                turn: self.turn,
                armed: api.on_disconnect == hermes_config::OnDisconnect::Interrupt && !self.idempotent,
            },
            _permit: self.permit,
        }
    }

    /// Nobody waits (a run answers at once): the turn keeps its slot in the rate limits until
    /// it ends or waits for the user, at most the turn timeout.
    pub fn hold_slot_in_background(self, state: &AppState) {
        let limit = Duration::from_secs(state.config.api.turn_timeout_seconds);
        let (mut waiter, permit) = (self.waiter, self.permit);
        hermes_telemetry::tasks::spawn("api_signal_work", async move {
            let _permit = permit;
            let _ = tokio::time::timeout(limit, waiter.settled()).await;
        });
    }
}

/// Tells the workers a session has work. The turn is stored already: if the broker is slow
/// or down, the reaper republishes it and the request still completes.
pub(crate) async fn signal_work(state: &AppState, work: SessionWork) {
    // The broker bounds the wait itself (`hermes_queue::PUBLISH_TIMEOUT`).
    if let Err(e) = state.broker.publish_work(&work).await {
        tracing::warn!(error = %e, "cannot publish work; the reaper will pick the turn up");
    }
}

/// Stores a turn (once per `Idempotency-Key`, if the request has one): its session, the turn,
/// and whether it is an earlier request's turn.
async fn enqueue(
    state: &AppState,
    auth: &KeyAuth,
    new: NewTurn,
    idempotency: Option<&Idempotency>,
) -> Result<(SessionId, TurnId, bool), ApiError> {
    let enqueued = match idempotency {
        Some(idem) => state.store.turns().enqueue_turn_once(auth.tenant_id, new, idem).await,
        None => state
            .store
            .turns()
            .enqueue_turn(auth.tenant_id, new)
            .await
            .map(|(session, turn)| Enqueued::New { session, turn }),
    };
    match enqueued {
        Ok(Enqueued::New { session, turn }) => Ok((session, turn, false)),
        Ok(Enqueued::Replay { session, turn }) => Ok((session, turn, true)),
        Err(StoreError::NotFound) => {
            Err(ApiError::not_found(ErrorCode::SessionNotFound, "no such session for this model"))
        }
        Err(StoreError::Invalid(_)) if idempotency.is_some() => Err(crate::idempotency::reused()),
        Err(e) => Err(ApiError::internal(e)),
    }
}
