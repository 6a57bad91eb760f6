//! The role's one state and its parts: the tenant API's (`AppState`) and the admin plane's
//! (`AdminState`), each handed to its handlers by `FromRef` from the root `RoleState`.

use std::sync::Arc;

use axum::extract::FromRef;

use hermes_cache::CancelBus;
use hermes_config::HermesConfig;
use hermes_http::{BodyLimit, StateHandle};
use hermes_queue::{Broker, EventHub};
use hermes_store::Store;

use crate::admin::state::AdminState;

/// What the `/v1` handlers are given.
pub(crate) type AppState = StateHandle<Shared>;

pub(crate) struct Shared {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub broker: Broker,
    pub cancels: CancelBus,
    pub events: EventHub,
    pub limiter: hermes_cache::RateLimiter,
    pub turn_slots: hermes_cache::Slots,
    pub secrets: Option<hermes_store::SecretBox>,
    /// For checking bots with their platforms.
    pub http: reqwest::Client,
}

/// The api role's state: every route of `/v1` and `/admin/v1` is served with it.
#[derive(Clone)]
pub(crate) struct RoleState {
    pub v1: AppState,
    pub admin: AdminState,
}

impl FromRef<RoleState> for AppState {
    fn from_ref(state: &RoleState) -> Self {
        state.v1.clone()
    }
}

impl FromRef<RoleState> for AdminState {
    fn from_ref(state: &RoleState) -> Self {
        state.admin.clone()
    }
}

/// The limit `ApiJson` names when a body is too large (the router enforces the same).
impl FromRef<RoleState> for BodyLimit {
    fn from_ref(state: &RoleState) -> Self {
        BodyLimit(state.v1.config.http.max_body_bytes)
    }
}
