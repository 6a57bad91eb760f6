//! A rate limit on the unauthenticated platform routes, before anything else runs: a request
//! for `/telegram/{id}`, `/slack/{id}/...`, `/wecom/{id}` or `/hooks/{id}` counts against its
//! id's `gateway.inbound_requests_per_minute` (Redis GCRA, shared by every pod) before the
//! channel is looked up, its credentials decrypted or its signature checked, so a flood of one
//! id costs a Redis call each, not a database read and a decryption.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::Gateway;

/// The id a platform route names (its second path segment), if it is one of them.
fn routed_id(path: &str) -> Option<&str> {
    let mut segments = path.trim_start_matches('/').split('/');
    let platform = segments.next()?;
    matches!(platform, "telegram" | "slack" | "wecom" | "hooks").then(|| segments.next()).flatten()
}

/// Refuses a request over its id's rate with 429 and `Retry-After`; Redis down: let it
/// through (the signature checks still hold; availability over strictness).
pub async fn limit(State(gw): State<Arc<Gateway>>, request: Request, next: Next) -> Response {
    let per_minute = gw.config.gateway.inbound_requests_per_minute;
    let Some(id) = routed_id(request.uri().path()).filter(|_| per_minute > 0) else {
        return next.run(request).await;
    };
    // Not a valid id: the route answers 404 without a lookup.
    let scope = match uuid::Uuid::parse_str(id) {
        Ok(id) => format!("inbound:{id}"),
        Err(_) => return next.run(request).await,
    };
    match gw.cache.rate_limiter().check(&scope, per_minute).await {
        Ok(decision) if !decision.allowed => {
            metrics::counter!("hermes_gateway_inbound_limited_total").increment(1);
            let mut refused =
                (StatusCode::TOO_MANY_REQUESTS, "too many requests for this bot; slow down").into_response();
            let secs = decision.retry_after_ms.div_ceil(1000).max(1);
            if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
                refused.headers_mut().insert(header::RETRY_AFTER, value);
            }
            refused
        }
        Ok(_) => next.run(request).await,
        Err(e) => {
            tracing::warn!(error = %e, "cannot check the inbound rate; letting the request through");
            next.run(request).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::routed_id;

    #[test]
    fn the_platform_routes_name_their_id() {
        assert_eq!(
            routed_id("/telegram/0190a000-0000-7000-8000-000000000000"),
            Some("0190a000-0000-7000-8000-000000000000")
        );
        assert_eq!(routed_id("/slack/abc/events"), Some("abc"));
        assert_eq!(routed_id("/hooks/h1"), Some("h1"));
        assert_eq!(routed_id("/readyz"), None);
        assert_eq!(routed_id("/telegram"), None);
    }
}
