//! Taking a chat message in: access first, then a few gateway commands answered at once,
//! then the message becomes a turn in the chat's current session (per channel and chat, and
//! per thread), stored with its inbound row in one transaction and signalled to the workers.
//! The answer comes back through the outbox (see [`crate::outbox`]).

use serde_json::Value;

use hermes_core::commands::ChatCommand;
use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{BusyMode, GroupSessions, Platform, SessionSource};
use hermes_queue::SessionWork;
use hermes_store::{Accepted, Channel, NewTurn, Route};

use crate::Gateway;
use crate::access::{Verdict, decide};
use crate::incoming::{ChatKind, Incoming};

/// The longest text taken from one chat message (upstream's per-text cap).
const MAX_TEXT_CHARS: usize = 65_536;
/// How long a Telegram message waits for the rest of a split paste (upstream's 0.3 s).
const TEXT_BATCH: std::time::Duration = std::time::Duration::from_millis(300);
/// Turns that may wait in one conversation in `queue` mode (upstream's cap).
const MAX_QUEUED: i64 = 32;

/// What the busy mode decided.
enum Room {
    /// Go ahead, answering these interrupted messages too.
    Made(Vec<String>),
    /// The agent is at work: the message steers that turn (or runs after it).
    Steer,
    Refused(String),
}

/// `/steer TEXT` and `/queue TEXT` choose the busy mode for one message.
fn busy_override(text: &str) -> Option<(BusyMode, &str)> {
    let (spec, rest) = hermes_core::commands::parse(text)?;
    let mode = match spec.command {
        ChatCommand::Steer => BusyMode::Steer,
        ChatCommand::Queue => BusyMode::Queue,
        _ => return None,
    };
    Some((mode, rest)).filter(|(_, rest)| !rest.is_empty())
}

/// Why a message could not be taken in now (the platform should deliver it again).
#[derive(Debug, thiserror::Error)]
#[error("cannot take the message in: {0}")]
pub struct IngestError(String);

impl IngestError {
    pub(crate) fn new(why: String) -> Self {
        Self(why)
    }
}

/// The conversation a message belongs to: per person in a direct chat, per group chat (or per
/// person in it, if the channel says so), and per thread (forum topic) within either.
pub fn route_for(channel: &Channel, msg: &Incoming) -> Route {
    let per_user = msg.kind == ChatKind::Group && channel.group_sessions == GroupSessions::User;
    let base = match msg.kind {
        ChatKind::Direct => format!("{}:{}:dm:{}", channel.platform, channel.id, msg.user_id),
        ChatKind::Group if per_user => {
            format!("{}:{}:group:{}:user:{}", channel.platform, channel.id, msg.chat_id, msg.user_id)
        }
        ChatKind::Group => format!("{}:{}:group:{}", channel.platform, channel.id, msg.chat_id),
    };
    let key = match &msg.thread {
        Some(t) => format!("{base}:thread:{t}"),
        None => base,
    };
    let user_key = match msg.kind {
        ChatKind::Direct => format!("{}:user:{}", channel.platform, msg.user_id),
        ChatKind::Group if per_user => format!("{}:user:{}", channel.platform, msg.user_id),
        ChatKind::Group => format!("{}:chat:{}", channel.platform, msg.chat_id),
    };
    Route { agent: channel.agent_id, key, source: SessionSource::from(channel.platform), user_key }
}

/// Where replies to `msg` go.
pub fn destination(channel: &Channel, msg: &Incoming) -> Destination {
    Destination {
        reply_to: msg.message_id,
        reply_token: msg.reply_token.clone(),
        ..Destination::chat(channel.platform, channel.id, msg.chat_id.clone(), msg.thread.clone())
    }
}

impl Gateway {
    /// Takes one message in, exactly once per platform message.
    pub async fn take_in(&self, channel: &Channel, msg: Incoming, raw: &Value) -> Result<(), IngestError> {
        let tenant = channel.tenant_id;
        let source = format!("{}:{}", channel.platform, channel.id);
        let store_err = |e: hermes_store::StoreError| IngestError(e.to_string());
        let reply = |text: String| {
            let payload = OutboxPayload::text(text);
            (payload, format!("{source}:{}:reply", msg.dedupe_key))
        };
        let refusal = match decide(channel, &msg) {
            Verdict::Ignore => return Ok(()),
            Verdict::Refuse(text) => Some(text),
            Verdict::Pair => Some(String::new()),
            Verdict::Allow => crate::commands::gated(channel, &msg),
        };
        let clarified = match refusal {
            None if !crate::commands::is_command(&msg.text) => self.clarify_reply_ready(channel, &msg).await?,
            _ => false,
        };
        if refusal.is_some() || crate::commands::is_command(&msg.text) || clarified {
            // Stored first, so a redelivered message is answered (and acted on) once.
            let accepted = self
                .store
                .accept_inbound(tenant, &source, &msg.dedupe_key, raw, None, None)
                .await
                .map_err(store_err)?;
            if accepted == Accepted::Duplicate {
                return Ok(());
            }
            let text = match refusal {
                Some(text) if text.is_empty() => self.pairing_reply(channel, &msg).await?,
                Some(text) => text,
                None if clarified => self.clarify_reply(channel, &msg).await?.unwrap_or_default(),
                None => self.command(channel, &msg).await?,
            };
            if text.is_empty() {
                return Ok(());
            }
            let (payload, key) = reply(text);
            self.store.enqueue_outbox(tenant, &destination(channel, &msg), &key, &payload).await.map_err(store_err)?;
            return Ok(());
        }
        let chosen = busy_override(&msg.text);
        let (busy_mode, text) = match chosen {
            Some((mode, rest)) => (mode, rest),
            None => (channel.busy_mode, msg.text.as_str()),
        };
        let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
        if text.trim().is_empty() && msg.files.is_empty() {
            return Ok(());
        }
        let route = route_for(channel, &msg);
        // A redelivered message must not interrupt anything.
        if self.store.inbound_seen(tenant, &source, &msg.dedupe_key).await.map_err(store_err)? {
            return Ok(());
        }
        let (carried, steer) = match self.make_room(channel, &route, busy_mode).await? {
            Room::Made(carried) => (carried, false),
            Room::Steer => (Vec::new(), true),
            Room::Refused(refusal) => {
                let accepted = self
                    .store
                    .accept_inbound(tenant, &source, &msg.dedupe_key, raw, None, None)
                    .await
                    .map_err(store_err)?;
                if accepted != Accepted::Duplicate {
                    let (payload, key) = reply(refusal);
                    let dest = destination(channel, &msg);
                    self.store.enqueue_outbox(tenant, &dest, &key, &payload).await.map_err(store_err)?;
                }
                return Ok(());
            }
        };
        let text = if carried.is_empty() { text } else { format!("{}\n{text}", carried.join("\n")) };
        let marks = self.cache.background_marks();
        let (target, _) = self
            .store
            .route_target(tenant, &route, chrono::Utc::now(), async |session| {
                marks.is_marked(tenant, session).await.unwrap_or(true)
            })
            .await
            .map_err(store_err)?;
        // A turn that shows its answer as it is written, or its tools at work, reports its
        // events to this pod, which shows them (where messages can be edited).
        let hub = self.events.as_ref().filter(|_| {
            (channel.streaming || channel.tool_progress)
                && matches!(channel.platform, Platform::Telegram | Platform::Slack)
        });
        let turn = NewTurn {
            agent_id: channel.agent_id,
            target,
            input: self.with_files(channel, text, &msg.files).await,
            instructions: None,
            stream: hub.is_some() && channel.streaming,
            notify_hub: hub.map(|h| h.id().to_owned()),
            api_key: None,
            response: None,
            reply_to: Some(destination(channel, &msg)),
        };
        // Telegram apps split a long paste in parts: the turn waits a moment for the rest.
        // An explicit `/queue` or `/steer` message is a turn of its own, never part of a paste.
        let batch = (channel.platform == Platform::Telegram && chosen.is_none()).then_some(TEXT_BATCH);
        let accepted = match chosen {
            Some(_) => self.store.accept_inbound_alone(tenant, &source, &msg.dedupe_key, raw, turn).await,
            None => self.store.accept_inbound(tenant, &source, &msg.dedupe_key, raw, Some(turn), batch).await,
        }
        .map_err(store_err)?;
        match accepted {
            Accepted::Turn { session, turn } if steer => {
                // Not marked (a crash in between): it runs after the current turn, as in `queue`.
                self.store.mark_steer(tenant, turn).await.map_err(store_err)?;
                tracing::info!(channel.id = %channel.id, turn.id = %turn, "chat message steers the running turn");
                self.signal_after(tenant, session, None);
            }
            Accepted::Turn { session, turn } => {
                tracing::info!(channel.id = %channel.id, turn.id = %turn, "chat message became a turn");
                // Subscribed before the workers hear of the turn, so no event is missed.
                let preview_api = match channel.platform {
                    Platform::Slack => self
                        .slack(channel)
                        .ok()
                        .map(|api| crate::stream::PreviewApi::Slack { api, thread: msg.thread.clone() }),
                    _ => self.telegram(channel).ok().map(crate::stream::PreviewApi::Telegram),
                };
                if let (Some(hub), Some(api)) = (hub, preview_api) {
                    let preview = crate::stream::Preview {
                        store: self.store.clone(),
                        api,
                        tenant,
                        turn,
                        chat: msg.chat_id.clone(),
                        limit: std::time::Duration::from_secs(self.config.api.turn_timeout_seconds),
                        text: channel.streaming,
                    };
                    tokio::spawn(preview.run(hub.subscribe(turn)));
                }
                metrics::counter!("hermes_gateway_turns_total", "platform" => channel.platform.as_str()).increment(1);
                self.signal_after(tenant, session, batch);
                self.typing(channel, &msg.chat_id).await;
            }
            Accepted::Merged { session, turn } => {
                tracing::info!(channel.id = %channel.id, turn.id = %turn, "chat message joined the turn it follows");
                self.signal_after(tenant, session, batch);
            }
            Accepted::Duplicate => {
                metrics::counter!("hermes_gateway_duplicates_total", "platform" => channel.platform.as_str())
                    .increment(1);
            }
            Accepted::Stored => {}
        }
        Ok(())
    }

    /// Tells the workers a session has work, once `wait` has passed. The turn is stored: a
    /// lost signal (a pod that dies meanwhile) is found again by the reaper.
    fn signal_after(
        &self,
        tenant: hermes_core::TenantId,
        session: hermes_core::SessionId,
        wait: Option<std::time::Duration>,
    ) {
        let broker = self.broker.clone();
        tokio::spawn(async move {
            if let Some(wait) = wait {
                tokio::time::sleep(wait + std::time::Duration::from_millis(20)).await;
            }
            if let Err(e) = broker.publish_work(&SessionWork { tenant_id: tenant, session_id: session }).await {
                tracing::warn!(error = %e, "cannot signal the work; the reaper will pick the turn up");
            }
        });
    }

    /// What the busy mode does before a new message. `interrupt` stops the turn the agent is
    /// working on; a stopped turn that had not even begun hands its message on, to be
    /// answered with the new one. `queue` lets the new message wait, unless too many do.
    /// `steer` hands the message to the running turn (it waits like `queue` otherwise).
    async fn make_room(&self, channel: &Channel, route: &Route, mode: BusyMode) -> Result<Room, IngestError> {
        let (busy, open) =
            self.store.route_busy_turns(channel.tenant_id, route).await.map_err(|e| IngestError(e.to_string()))?;
        if mode == BusyMode::Steer && busy.iter().any(|t| t.begun) && open < MAX_QUEUED {
            return Ok(Room::Steer);
        }
        if mode != BusyMode::Interrupt {
            if open >= MAX_QUEUED {
                return Ok(Room::Refused(format!(
                    "I'm still working on your earlier messages ({open} waiting). Please wait for my answers, or \
                     send /new to start over."
                )));
            }
            return Ok(Room::Made(Vec::new()));
        }
        let mut carried = Vec::new();
        for turn in busy {
            match self.stop_turn(channel.tenant_id, turn.id).await {
                Ok(true) if !turn.begun => carried.push(turn.input),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "cannot interrupt the running turn"),
            }
        }
        Ok(Room::Made(carried))
    }

    /// Stops a turn: a queued or waiting one at once, a running one through its worker (told
    /// on the cancel channel, or by its heartbeat if that is lost). `false` if it had ended.
    pub(crate) async fn stop_turn(
        &self,
        tenant: hermes_core::TenantId,
        turn: hermes_core::TurnId,
    ) -> Result<bool, hermes_store::StoreError> {
        let Some(status) = self.store.request_cancel(tenant, turn, &hermes_core::TurnOutcome::cancelled()).await?
        else {
            return Ok(false);
        };
        if status == hermes_store::TurnStatus::Running
            && let Err(e) = self.cache.cancel_bus().publish(turn).await
        {
            tracing::warn!(error = %e, "cannot broadcast the stop; the worker's heartbeat sees it");
        }
        Ok(true)
    }
}
