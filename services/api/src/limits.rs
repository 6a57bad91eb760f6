//! Rate limits, enforced across every API pod in Redis: requests per minute per API key and
//! per tenant (GCRA, checked for every authenticated request by the `Caller` extractor), and
//! turns in flight per key and per tenant (a slot held while the request waits for its turn).
//! Over a limit is a 429 `rate_limit_exceeded` with `Retry-After`, as OpenAI answers. The
//! limits are the installation's defaults (`api.*`) unless the tenant or key has its own.
//! When Redis is down the limits are not enforced: availability wins over strictness.

use std::time::Duration;

use axum::http::StatusCode;

use hermes_cache::Slots;
use hermes_http::{ApiError, ErrorCode};
use hermes_store::KeyAuth;

use crate::state::AppState;

fn too_many(message: String, retry_after_secs: u64) -> ApiError {
    let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "requests", Some(ErrorCode::RateLimitExceeded), message);
    e.retry_after = Some(retry_after_secs.max(1));
    e
}

/// The key's and the tenant's scope with their limit: their own if set, else the default.
fn scopes(auth: &KeyAuth, key: (Option<u32>, u32), tenant: (Option<u32>, u32)) -> [(&'static str, String, u32); 2] {
    [
        ("API key", format!("key:{}", auth.key_id), key.0.unwrap_or(key.1)),
        ("team", format!("tenant:{}", auth.tenant_id), tenant.0.unwrap_or(tenant.1)),
    ]
}

/// Counts one request against the key's and the tenant's per-minute limits.
pub(crate) async fn check_rate(state: &AppState, auth: &KeyAuth) -> Result<(), ApiError> {
    let (cfg, own) = (&state.config.api, &auth.limits);
    let checks = scopes(
        auth,
        (own.key_requests_per_minute, cfg.key_requests_per_minute),
        (own.tenant_requests_per_minute, cfg.tenant_requests_per_minute),
    );
    for (whose, scope, limit) in checks {
        match state.limiter.check(&scope, limit).await {
            Ok(d) if d.allowed => {}
            Ok(d) => {
                let secs = d.retry_after_ms.div_ceil(1_000);
                metrics::counter!("hermes_api_rate_limited_total", "limit" => "requests").increment(1);
                return Err(too_many(
                    format!(
                        "Rate limit reached for requests per minute on this {whose} (limit {limit}). Try again in {secs}s."
                    ),
                    secs,
                ));
            }
            Err(e) => tracing::warn!(error = %e, "rate limiter unavailable; request allowed"),
        }
    }
    Ok(())
}

/// A turn in flight, counted against the key's and the tenant's limits until dropped.
pub(crate) struct TurnPermit {
    slots: Slots,
    held: Vec<String>,
    id: String,
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        let (slots, held, id) = (self.slots.clone(), std::mem::take(&mut self.held), self.id.clone());
        hermes_telemetry::tasks::spawn("api_limits", async move {
            for scope in held {
                if let Err(e) = slots.release(&scope, &id).await {
                    tracing::debug!(error = %e, "cannot release a turn slot (it will lapse)");
                }
            }
        });
    }
}

/// Takes a turn slot of the key and of the tenant, or answers 429.
pub(crate) async fn start_turn(state: &AppState, auth: &KeyAuth) -> Result<TurnPermit, ApiError> {
    let cfg = &state.config.api;
    let mut permit =
        TurnPermit { slots: state.turn_slots.clone(), held: Vec::new(), id: uuid::Uuid::now_v7().to_string() };
    // A slot outlives a request only if its pod died; it lapses after the longest wait.
    let ttl = Duration::from_secs(cfg.turn_timeout_seconds + 60);
    let own = &auth.limits;
    let checks = scopes(
        auth,
        (own.key_concurrent_turns, cfg.key_concurrent_turns),
        (own.tenant_concurrent_turns, cfg.tenant_concurrent_turns),
    );
    for (whose, scope, limit) in checks {
        if limit == 0 {
            continue;
        }
        match permit.slots.try_acquire(&scope, &permit.id, limit, ttl).await {
            Ok(true) => permit.held.push(scope),
            Ok(false) => {
                metrics::counter!("hermes_api_rate_limited_total", "limit" => "turns").increment(1);
                return Err(too_many(
                    format!("Too many turns in flight on this {whose} (limit {limit}). Try again when one finishes."),
                    1,
                ));
            }
            Err(e) => tracing::warn!(error = %e, "turn slots unavailable; turn allowed"),
        }
    }
    Ok(permit)
}
