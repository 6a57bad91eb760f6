//! Outbound event webhooks: the tenant's endpoints are told what happened (`turn.finished`,
//! `cron.run.finished`, `cron.run.failed`, `approval.requested`; triggers write the events
//! with the changes, see migration 0033). Any gateway pod claims due events, posts each as
//! Standard Webhooks do (`{type, timestamp, data}`, signed in `webhook-signature` over
//! `id.timestamp.body` with the endpoint's `whsec_` key), and settles it: 2xx delivered; 408,
//! 429, 5xx or no answer retried with backoff (×1, 3, 12, 60, 180, 360, 1080 of
//! `gateway.events_retry_base_millis`: 10 s to 3 h), 8 attempts in all; other answers (and
//! redirects, not followed) given up. Endpoints must be public addresses (checked on every
//! connection, so DNS cannot point one inside the cluster) unless
//! `gateway.events_allow_private_targets` is set. Nothing waits on a receiver.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use hermes_net_policy::outbound;
use hermes_store::event_hooks::{Attempt, DueEvent};

use crate::Gateway;

const BATCH: i64 = 32;
const PARALLEL: usize = 8;
const LEASE: Duration = Duration::from_secs(60);
const MAX_ATTEMPTS: i32 = 8;
const BACKOFF: [u64; 7] = [1, 3, 12, 60, 180, 360, 1080];
const IDLE: Duration = Duration::from_millis(500);

/// Delivers events until `shutdown`.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    let cfg = &gw.config.gateway;
    let Ok(http) = outbound::client(cfg.events_allow_private_targets) else {
        tracing::error!("cannot build the event sender's HTTP client; no events are sent from this pod");
        return;
    };
    let mut passes: u64 = 0;
    while !shutdown.is_cancelled() {
        passes += 1;
        if passes % 7_200 == 1
            && let Ok(n) = gw.store.system().prune_events().await
            && n > 0
        {
            tracing::debug!(events = n, "forgot week-old settled events");
        }
        let due = match gw.store.system().claim_events(BATCH, LEASE).await {
            Ok(due) => due,
            Err(e) => {
                tracing::warn!(error = %e, "cannot claim events");
                Vec::new()
            }
        };
        if due.is_empty() {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(IDLE) => continue,
            }
        }
        futures_util::stream::iter(due)
            .for_each_concurrent(PARALLEL, |event| {
                let (gw, http) = (&gw, &http);
                async move {
                    let attempt = send(gw, http, &event).await;
                    let label = match &attempt {
                        Attempt::Delivered { .. } => "delivered",
                        Attempt::Retry { .. } => "retry",
                        Attempt::Failed { .. } => "failed",
                    };
                    metrics::counter!("hermes_events_sent_total", "result" => label).increment(1);
                    if let Err(e) = gw.store.system().settle_event(&event, &attempt).await {
                        tracing::warn!(error = %e, event.id = %event.id, "cannot settle an event; it is sent again");
                    }
                }
            })
            .await;
    }
}

/// One attempt at `event`.
async fn send(gw: &Gateway, http: &reqwest::Client, event: &DueEvent) -> Attempt {
    let cfg = &gw.config.gateway;
    let give_up = |status: Option<i32>, error: String| Attempt::Failed { status, error };
    let key = match event.key(gw.secrets.as_ref()) {
        Ok(key) => key,
        Err(e) => return give_up(None, format!("cannot open the endpoint's secret: {e}")),
    };
    if let Some(why) = outbound::refuse_url(&event.url, cfg.events_allow_private_targets) {
        return give_up(None, why);
    }
    let body = json!({ "type": event.event, "timestamp": event.created_at, "data": event.data }).to_string();
    let id = event.id.to_string();
    let now = chrono::Utc::now().timestamp();
    let signature = hermes_http::signed::standard_signature(&key, &id, now, body.as_bytes());
    let sent = http
        .post(&event.url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", now.to_string())
        .header("webhook-signature", signature)
        .header("x-hermes-event", &event.event)
        .body(body)
        .send()
        .await;
    let (status, error) = match sent {
        Ok(resp) if resp.status().is_success() => {
            return Attempt::Delivered { status: i32::from(resp.status().as_u16()) };
        }
        Ok(resp) => {
            let code = resp.status();
            let again = code.is_server_error() || code.as_u16() == 408 || code.as_u16() == 429;
            let error = if code.is_redirection() {
                "the endpoint answered with a redirect, which is not followed".to_owned()
            } else {
                format!("the endpoint answered {code}")
            };
            if !again {
                return give_up(Some(i32::from(code.as_u16())), error);
            }
            (Some(i32::from(code.as_u16())), error)
        }
        Err(e) => (None, format!("no answer: {e}")),
    };
    if event.attempts >= MAX_ATTEMPTS {
        return give_up(status, format!("{error} (gave up after {MAX_ATTEMPTS} attempts)"));
    }
    let step = usize::try_from(event.attempts - 1).unwrap_or(0).min(BACKOFF.len() - 1);
    let after = Duration::from_millis(cfg.events_retry_base_millis.saturating_mul(BACKOFF[step]));
    Attempt::Retry { status, error, after }
}
