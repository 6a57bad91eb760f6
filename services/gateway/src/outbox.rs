//! Delivering replies from the outbox. Any gateway pod claims due replies with a lease
//! (`SKIP LOCKED`), renders them, splits them to the platform's limit and sends the parts in
//! order, recording each part before the next, so a pod that dies mid-reply leaves only the
//! missing parts to send. Flood control waits as the platform says; other passing failures
//! back off; a bot that was blocked or removed marks its channel and stops retrying.
//!
//! A part is marked as on its way before it is sent. If the pod dies after the platform took
//! the part but before it was recorded, the next pod asks the platform first: Telegram by
//! setting the same text on the few message ids after the last one known (only the part itself
//! answers "not modified"), Slack by the part's message metadata in the conversation's history.
//! WeCom cannot be asked, so there such a part is sent again.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use hermes_core::outbox::{AnswerStatus, OutboxPayload};
use hermes_core::{ChannelMode, ChannelStatus, ErrorCode, Platform, TurnOutcome};
use hermes_store::{Channel, OutboxItem};

use crate::Gateway;
use crate::telegram::{TelegramApi, TelegramError};

/// The text a reply shows the user, and the buttons under it.
pub fn render(payload: &OutboxPayload) -> (String, crate::interact::Buttons) {
    match payload {
        OutboxPayload::Text { text } => (text.clone(), Vec::new()),
        OutboxPayload::Interaction { interaction } => crate::interact::question(interaction),
        OutboxPayload::Answer { outcome, .. } => (answer_text(outcome.as_ref()), Vec::new()),
    }
}

/// The text of a reply and its buttons; a cron job's answer says which job it is.
pub fn render_reply(item: &OutboxItem) -> (String, crate::interact::Buttons) {
    let (text, buttons) = render(&item.payload);
    let d = &item.destination;
    match (&d.cron, &d.webhook) {
        (Some(job), _) => (format!("⏰ Cron job “{}”\n\n{text}", job.name), buttons),
        (None, Some(hook)) => (format!("⚡ Webhook “{}”\n\n{text}", hook.name), buttons),
        (None, None) => (text, buttons),
    }
}

/// The outcome of a turn's answer, when the row is one.
fn outcome(item: &OutboxItem) -> Option<(AnswerStatus, Option<&TurnOutcome>)> {
    match &item.payload {
        OutboxPayload::Answer { status, outcome } => Some((*status, outcome.as_ref())),
        _ => None,
    }
}

/// Sent as nothing: a steering message absorbed by the turn it steered has no answer of its
/// own, and an unattended run's answer (a cron job's, a webhook's) may ask to stay silent
/// (`[SILENT]`, after a successful run).
fn says_nothing(item: &OutboxItem) -> bool {
    match outcome(item) {
        Some((_, Some(o))) if o.error_code == Some(ErrorCode::Steered) => true,
        Some((AnswerStatus::Completed, Some(o))) => {
            item.destination.is_automated() && o.content.trim_start().starts_with("[SILENT]")
        }
        _ => false,
    }
}

/// The text of a turn's answer: the answer, or a polite word on why there is none.
fn answer_text(outcome: Option<&TurnOutcome>) -> String {
    let Some(outcome) = outcome else { return "Sorry, I could not finish that. Please try again.".to_owned() };
    if !outcome.content.trim().is_empty() {
        return outcome.content.clone();
    }
    match (outcome.error_code, &outcome.error) {
        // The spending cap's own message names the cap and when it resets.
        (Some(ErrorCode::InsufficientQuota), Some(msg)) => msg.clone(),
        (_, Some(msg)) => format!("Sorry, I could not finish that: {msg}"),
        _ => "Sorry, I could not finish that. Please try again.".to_owned(),
    }
}

/// Sends claimed replies until `shutdown`.
pub async fn run(gw: Arc<Gateway>, shutdown: CancellationToken) {
    deliver_claimed(&gw, &shutdown, None).await;
}

/// Sends claimed replies (all of them, or only those of the socket channel `only` this pod
/// holds) until `shutdown`.
pub async fn deliver_claimed(gw: &Gateway, shutdown: &CancellationToken, only: Option<hermes_core::ChannelId>) {
    let cfg = &gw.config.gateway;
    let idle = Duration::from_millis(cfg.outbox_poll_millis.max(20));
    let lease = Duration::from_secs(cfg.outbox_lease_seconds.max(5));
    loop {
        let claimed = match gw.store.system().claim_outbox(16, lease, only).await {
            Ok(items) => items,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the outbox");
                Vec::new()
            }
        };
        let busy = !claimed.is_empty();
        // Channels at once, each channel's replies in order: one tenant's slow (or hostile)
        // platform endpoint does not hold up the others' replies.
        let mut by_channel: std::collections::BTreeMap<Option<hermes_core::ChannelId>, Vec<OutboxItem>> =
            Default::default();
        for item in claimed {
            by_channel.entry(item.channel_id).or_default().push(item);
        }
        futures_util::future::join_all(by_channel.into_values().map(|items| async move {
            for item in items {
                gw.deliver(item).await;
            }
        }))
        .await;
        if !busy {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(idle) => {}
            }
        } else if shutdown.is_cancelled() {
            return;
        }
    }
}

/// The delay before attempt `attempts + 1` of a reply that failed for a passing reason.
fn backoff(attempts: i32) -> Duration {
    Duration::from_secs(2u64.saturating_pow(u32::try_from(attempts).unwrap_or(0)).min(300))
}

impl Gateway {
    /// How long a claim of one reply lasts without renewal (renewed before each part).
    pub(crate) fn outbox_lease(&self) -> Duration {
        Duration::from_secs(self.config.gateway.outbox_lease_seconds.max(5))
    }

    /// The platform refuses the bot (blocked, kicked, credentials revoked): `channel` is marked
    /// blocked, so neither its replies nor its connection are tried again until someone fixes it.
    pub(crate) async fn mark_refused(&self, channel: &Channel, why: &str) {
        tracing::warn!(channel.id = %channel.id, error = %why, "the platform refuses the bot; channel marked");
        let _ = self
            .store
            .chat()
            .set_channel_status(channel.tenant_id, channel.id, ChannelStatus::Blocked, Some(why))
            .await;
    }

    /// Delivers one reply, in its turn's trace.
    async fn deliver(&self, item: OutboxItem) {
        let name = format!("send {}", item.destination.platform);
        let span = tracing::info_span!(
            "deliver",
            otel.name = %name,
            otel.kind = "producer",
            hermes.platform = %item.destination.platform,
            hermes.outbox.id = %item.id,
            hermes.outbox.attempt = item.attempts,
            tenant.id = %item.tenant_id,
        );
        hermes_telemetry::context::adopt(&span, item.trace.as_ref());
        self.deliver_now(item).instrument(span).await
    }

    async fn deliver_now(&self, item: OutboxItem) {
        // It may have waited behind its channel's other replies: still ours?
        match persist(|| self.store.system().outbox_renew(&item, self.outbox_lease())).await {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot renew a reply's claim; its lease will lapse");
                return;
            }
        }
        let Some(channel_id) = item.channel_id else {
            let _ = self.store.system().outbox_failed(&item, "no channel").await;
            return;
        };
        let channel = match self.store.system().gateway_channel(channel_id).await {
            // The row's channel must be its tenant's (a row naming another's is never sent).
            Ok(c) if c.tenant_id == item.tenant_id => c,
            Ok(_) | Err(hermes_store::StoreError::NotFound) => {
                let _ = self.store.system().outbox_failed(&item, "the channel was deleted").await;
                return;
            }
            Err(e) => {
                let _ = self.store.system().outbox_retry(&item, backoff(item.attempts), &e.to_string()).await;
                return;
            }
        };
        if says_nothing(&item) {
            if let Err(e) = self.store.system().outbox_sent(&item).await {
                tracing::warn!(error = %e, "cannot settle a steered message's empty reply");
            }
            return;
        }
        let item = match self.with_reasoning_shown(&channel, item).await {
            Ok(item) => item,
            Err((item, why)) => {
                let _ = self.store.system().outbox_retry(&item, backoff(item.attempts), &why).await;
                return;
            }
        };
        let result = match (channel.platform, channel.mode) {
            (Platform::Telegram, _) => self.deliver_telegram(&channel, &item).await,
            (Platform::Slack, _) => self.deliver_slack(&channel, &item).await,
            (Platform::Wecom, ChannelMode::Websocket) => self.deliver_wecom_bot(&channel, &item).await,
            (Platform::Wecom, _) => self.deliver_wecom(&channel, &item).await,
        };
        let system = self.store.system();
        let settled = match result {
            Ok(()) => persist(|| system.outbox_sent(&item)).await,
            Err(Failure::Lost) => {
                tracing::info!(outbox.id = %item.id, "another sender took the reply over; stopping");
                return;
            }
            Err(Failure::Wait(delay, why)) => persist(|| system.outbox_retry(&item, delay, &why)).await,
            Err(Failure::Passing(why)) if item.attempts < self.config.gateway.outbox_max_attempts => {
                persist(|| system.outbox_retry(&item, backoff(item.attempts), &why)).await
            }
            Err(Failure::Passing(why) | Failure::Permanent(why)) => {
                tracing::warn!(outbox.id = %item.id, error = %why, "giving up on a reply");
                persist(|| system.outbox_failed(&item, &why)).await
            }
            Err(Failure::Blocked(why)) => {
                self.mark_refused(&channel, &why).await;
                persist(|| system.outbox_failed(&item, &why)).await
            }
        };
        match settled {
            Ok(true) => {}
            Ok(false) => tracing::info!(outbox.id = %item.id, "the reply's claim lapsed before it was settled"),
            Err(e) => {
                tracing::warn!(error = %e, "cannot record a delivery; its lease will lapse and it is tried again")
            }
        }
    }

    /// `item` with the reasoning behind its answer shown above it, for a channel that opted
    /// in (every attempt the same, so a retry's parts are the first attempt's). An unattended
    /// run's answer (a cron job's, a webhook's) goes out as it is: its reasoning may quote what
    /// the run read.
    async fn with_reasoning_shown(
        &self,
        channel: &Channel,
        mut item: OutboxItem,
    ) -> Result<OutboxItem, (OutboxItem, String)> {
        let shows = channel.show_reasoning && !item.destination.is_automated();
        let Some(turn) = item.turn_id.filter(|_| shows) else { return Ok(item) };
        let OutboxPayload::Answer { outcome: Some(outcome), .. } = &mut item.payload else { return Ok(item) };
        if outcome.content.trim().is_empty() {
            return Ok(item);
        }
        let most = crate::reasoning_shown::READ_CHARS;
        match self.store.conversations().answer_reasoning(item.tenant_id, turn, most).await {
            Ok(Some(reasoning)) => {
                outcome.content = crate::reasoning_shown::above(&reasoning, &outcome.content);
                Ok(item)
            }
            Ok(None) => Ok(item),
            Err(e) => Err((item, e.to_string())),
        }
    }

    /// The Bot API of a Telegram channel.
    pub fn telegram(&self, channel: &Channel) -> Result<TelegramApi, String> {
        let creds = channel.credentials(self.secrets.as_ref()).map_err(|e| e.to_string())?;
        let token = creds["token"].as_str().ok_or("the channel has no bot token")?;
        Ok(TelegramApi::new(self.http.clone(), &channel.api_base, token))
    }

    /// Sends a reply's parts in order, skipping those a previous attempt sent, and records each
    /// (with its platform id) before the next, so a retry after a crash sends only the rest.
    pub(crate) async fn send_parts<'a, P, F, Fut>(
        &self,
        item: &OutboxItem,
        parts: &'a [P],
        send: F,
    ) -> Result<(), Failure>
    where
        F: FnMut(usize, &'a P) -> Fut,
        Fut: std::future::Future<Output = Result<String, Failure>>,
    {
        self.send_parts_recovering(item, parts, send, |_, _| async { None }).await
    }

    /// [`Self::send_parts`], where a part left in doubt by a sender that died between sending
    /// and recording it is first looked for with `recover` (the platform's answer to "did it
    /// arrive?"); only a part not found is sent again.
    pub(crate) async fn send_parts_recovering<'a, P, F, Fut, R, RFut>(
        &self,
        item: &OutboxItem,
        parts: &'a [P],
        mut send: F,
        mut recover: R,
    ) -> Result<(), Failure>
    where
        F: FnMut(usize, &'a P) -> Fut,
        Fut: std::future::Future<Output = Result<String, Failure>>,
        R: FnMut(usize, &'a P) -> RFut,
        RFut: std::future::Future<Output = Option<String>>,
    {
        let mut ids = item.message_ids.clone();
        let done = usize::try_from(item.sent_parts).unwrap_or(0);
        for (i, part) in parts.iter().enumerate().skip(done) {
            let index = i32::try_from(i).unwrap_or(i32::MAX);
            let found = match item.doubt {
                Some((doubted, _)) if doubted == index => recover(i, part).await,
                _ => None,
            };
            let id = match found {
                Some(id) => {
                    tracing::info!(outbox.id = %item.id, part = i, "a part in doubt had arrived; not sent again");
                    metrics::counter!("hermes_gateway_parts_recovered_total").increment(1);
                    id
                }
                None => {
                    let marked = self.store.system().outbox_part_sending(item, index, self.outbox_lease()).await;
                    if !marked.map_err(|e| Failure::Passing(format!("cannot mark a part as on its way: {e}")))? {
                        return Err(Failure::Lost);
                    }
                    match send(i, part).await {
                        Ok(id) => id,
                        Err(refused @ (Failure::Wait(..) | Failure::Blocked(_) | Failure::Permanent(_))) => {
                            // The platform answered no: nothing is in doubt.
                            if let Err(e) = self.store.system().outbox_part_refused(item).await {
                                tracing::debug!(error = %e, "cannot clear the part's doubt");
                            }
                            return Err(refused);
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            ids.push(id);
            let sent = i32::try_from(i + 1).unwrap_or(i32::MAX);
            match self.store.system().outbox_part_sent(item, sent, &ids).await {
                Ok(true) => {}
                // Another sender holds the reply now: it goes on from what it recorded.
                Ok(false) => return Err(Failure::Lost),
                // The part is out but unrecorded: stop here rather than risk more doubles.
                Err(e) => return Err(Failure::Passing(format!("cannot record a sent part: {e}"))),
            }
        }
        Ok(())
    }

    /// Takes a streamed preview of this answer over (it stops now; the caller removes it once
    /// the answer is out): its chat and message.
    pub(crate) async fn take_preview(&self, item: &OutboxItem) -> Result<Option<(String, String)>, Failure> {
        match (&item.payload, item.turn_id) {
            (OutboxPayload::Answer { .. }, Some(turn)) => self
                .store
                .chat()
                .stream_finalize(item.tenant_id, turn)
                .await
                .map_err(|e| Failure::Passing(e.to_string())),
            _ => Ok(None),
        }
    }

    /// The Web API of a Slack channel.
    pub fn slack(&self, channel: &Channel) -> Result<hermes_chat::slack::SlackApi, String> {
        let creds = channel.credentials(self.secrets.as_ref()).map_err(|e| e.to_string())?;
        let token = creds["token"].as_str().ok_or("the channel has no bot token")?;
        Ok(hermes_chat::slack::SlackApi::new(self.http.clone(), &channel.api_base, token))
    }

    /// Shows "typing…" while the agent works (best effort).
    pub async fn typing(&self, channel: &Channel, chat: &str) {
        if channel.platform == Platform::Telegram
            && let Ok(api) = self.telegram(channel)
            && let Err(e) = api.send_typing(chat).await
        {
            tracing::debug!(error = %e, "cannot show typing");
        }
    }
}

/// Why a delivery did not complete.
/// Runs a store call again while it fails with a passing error (a Postgres restart or
/// failover takes a second or two), for up to about 6 s: giving up leaves the reply to its
/// lease, a minute away.
async fn persist<T, F, Fut>(mut call: F) -> Result<T, hermes_store::StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, hermes_store::StoreError>>,
{
    let mut pause = Duration::from_millis(250);
    for _ in 0..5 {
        match call().await {
            Err(e) if e.is_transient() => {
                tracing::debug!(error = %e, "a passing storage error; trying again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            done => return done,
        }
    }
    call().await
}

pub enum Failure {
    /// The platform asked us to wait this long.
    Wait(Duration, String),
    /// May pass: retry with backoff, up to the attempt limit.
    Passing(String),
    /// The platform refuses the bot (blocked, kicked, token revoked).
    Blocked(String),
    /// Will never work (no adapter, no token).
    Permanent(String),
    /// The claim lapsed and another sender has the reply: record nothing, stop.
    Lost,
}

impl From<hermes_chat::slack::SlackError> for Failure {
    fn from(e: hermes_chat::slack::SlackError) -> Self {
        use hermes_chat::slack::SlackError;
        match e {
            SlackError::RateLimited(secs) => Failure::Wait(Duration::from_secs(secs), e.to_string()),
            e if e.is_permanent() => Failure::Blocked(e.to_string()),
            e => Failure::Passing(e.to_string()),
        }
    }
}

impl From<TelegramError> for Failure {
    fn from(e: TelegramError) -> Self {
        match e.retry_after() {
            Some(delay) => Failure::Wait(delay, e.to_string()),
            None if e.is_permanent() => Failure::Blocked(e.to_string()),
            None => Failure::Passing(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(content: &str, code: Option<ErrorCode>, error: Option<&str>) -> OutboxPayload {
        let mut outcome = TurnOutcome::cancelled();
        (outcome.content, outcome.error_code, outcome.error) = (content.into(), code, error.map(str::to_owned));
        OutboxPayload::Answer { status: AnswerStatus::Failed, outcome: Some(outcome) }
    }

    #[test]
    fn replies_show_the_answer_or_a_polite_error() {
        let render = |p: OutboxPayload| super::render(&p).0;
        assert_eq!(render(answer("Done.", None, None)), "Done.");
        let cap = "Your team's daily spending cap ($5.00) is reached.";
        assert_eq!(render(answer("", Some(ErrorCode::InsufficientQuota), Some(cap))), cap);
        let failed = render(answer("", Some(ErrorCode::ProviderUnreachable), Some("the provider is down")));
        assert!(failed.starts_with("Sorry, I could not finish that"), "{failed}");
        assert_eq!(render(OutboxPayload::text("hi")), "hi");
        assert_eq!(backoff(1), Duration::from_secs(2));
        assert_eq!(backoff(20), Duration::from_secs(300));
    }
}
