//! What every handler is given: the role's connections, limits and configuration.

use std::sync::Arc;

use axum::extract::FromRef;

use hermes_cache::CancelBus;
use hermes_config::HermesConfig;
use hermes_http::BodyLimit;
use hermes_queue::{Broker, EventHub};
use hermes_store::Store;

/// Shared by every request: axum clones the state for each one, so it is one `Arc`.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Shared>);

impl AppState {
    pub(crate) fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

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

/// The limit `ApiJson` names when a body is too large (the router enforces the same).
impl FromRef<AppState> for BodyLimit {
    fn from_ref(state: &AppState) -> Self {
        BodyLimit(state.config.http.max_body_bytes)
    }
}
