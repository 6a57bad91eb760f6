//! Taking a chat message in: access first, then a few gateway commands answered at once,
//! then the message becomes a turn in the chat's current session (per channel and chat, and
//! per thread), stored with its inbound row in one transaction and signalled to the workers.
//! The answer comes back through the outbox (see [`crate::outbox`]).

use serde_json::Value;
use tracing::Instrument;

use hermes_core::commands::ChatCommand;
use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{BusyMode, Platform, SessionId, TenantId, TurnId};
use hermes_queue::SessionWork;
use hermes_store::{Accepted, Channel, NewTurn, Route, TurnTarget};

use crate::Gateway;
use crate::access::{Verdict, decide};
use crate::error::IngestError;
use crate::incoming::Incoming;
use crate::route::{destination, route_for, source_of};
use crate::voice_spend::Billed;

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

/// Why the gateway answers a message itself.
enum Answer {
    Refusal(Refusal),
    /// The message answers the question its conversation waits on.
    Clarified,
    /// A gateway command (`/new`, `/model`, ...).
    Command,
}

/// A message the agent does not get.
enum Refusal {
    /// Told this.
    Told(String),
    /// An unknown person in a pairing channel: given a code.
    Pair,
}

/// When the workers hear of a stored message.
enum Signal {
    /// After this batching window (a Telegram paste's other parts may follow).
    After(Option<std::time::Duration>),
    /// At once: it steers the running turn.
    Steer,
}

fn store_err(e: hermes_store::StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// Takes one message in, exactly once per platform message. Its span starts the
    /// message's trace (or continues the webhook request's), which the turn and the answer's
    /// delivery continue.
    pub async fn take_in(&self, channel: &Channel, msg: Incoming, raw: &Value) -> Result<(), IngestError> {
        let name = format!("receive {}", channel.platform);
        let span = tracing::info_span!(
            "message",
            otel.name = %name,
            otel.kind = "consumer",
            hermes.platform = %channel.platform,
            hermes.channel.id = %channel.id,
            tenant.id = %channel.tenant_id,
        );
        self.take_in_now(channel, msg, raw).instrument(span).await
    }

    async fn take_in_now(&self, channel: &Channel, msg: Incoming, raw: &Value) -> Result<(), IngestError> {
        let refusal = match decide(channel, &msg) {
            Verdict::Ignore => return Ok(()),
            Verdict::Refuse(text) => Some(Refusal::Told(text)),
            Verdict::Pair => Some(Refusal::Pair),
            Verdict::Allow => crate::commands::gated(channel, &msg).map(Refusal::Told),
        };
        let command = crate::commands::is_command(&msg.text);
        let clarified = refusal.is_none() && !command && self.clarify_reply_ready(channel, &msg).await?;
        if refusal.is_some() || command || clarified {
            let answer = match refusal {
                Some(refusal) => Answer::Refusal(refusal),
                None if clarified => Answer::Clarified,
                None => Answer::Command,
            };
            return self.answer_at_once(channel, &msg, raw, answer).await;
        }
        self.queue_turn(channel, msg, raw).await
    }

    /// Answers a message here, without the agent: stored first, so a redelivered message is
    /// answered (and acted on) once.
    async fn answer_at_once(
        &self,
        channel: &Channel,
        msg: &Incoming,
        raw: &Value,
        answer: Answer,
    ) -> Result<(), IngestError> {
        let (tenant, source) = (channel.tenant_id, source_of(channel));
        let accepted = self
            .store
            .chat()
            .accept_inbound(tenant, &source, &msg.dedupe_key, raw, None, None)
            .await
            .map_err(store_err)?;
        if accepted == Accepted::Duplicate {
            return Ok(());
        }
        let text = match answer {
            Answer::Refusal(Refusal::Pair) => self.pairing_reply(channel, msg).await?,
            Answer::Refusal(Refusal::Told(text)) => text,
            Answer::Clarified => self.clarify_reply(channel, msg).await?.unwrap_or_default(),
            Answer::Command => self.command(channel, msg).await?,
        };
        if text.is_empty() {
            return Ok(());
        }
        self.reply(channel, msg, text).await
    }

    /// Answers `msg` with `why` instead of taking it in (stored, so answered once).
    pub(crate) async fn refuse(
        &self,
        channel: &Channel,
        msg: &Incoming,
        raw: &Value,
        why: String,
    ) -> Result<(), IngestError> {
        self.answer_at_once(channel, msg, raw, Answer::Refusal(Refusal::Told(why))).await
    }

    /// Queues the answer `text` to `msg`, once per message.
    pub(crate) async fn reply(&self, channel: &Channel, msg: &Incoming, text: String) -> Result<(), IngestError> {
        let key = format!("{}:{}:reply", source_of(channel), msg.dedupe_key);
        let dest = destination(channel, msg);
        self.store
            .chat()
            .enqueue_outbox(channel.tenant_id, &dest, &key, &OutboxPayload::text(text))
            .await
            .map_err(store_err)
    }

    /// Makes the message a turn (or part of one) in its conversation, as the busy mode says.
    async fn queue_turn(&self, channel: &Channel, msg: Incoming, raw: &Value) -> Result<(), IngestError> {
        if let Some(request) = crate::background_commands::background_request(&msg.text) {
            if request.trim_start().starts_with('/') {
                return self.refuse(channel, &msg, raw, crate::background_commands::NO_COMMANDS.into()).await;
            }
            let request: String = request.chars().take(MAX_TEXT_CHARS).collect();
            return self.background(channel, msg, raw, request).await;
        }
        let (tenant, source) = (channel.tenant_id, source_of(channel));
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
        if self.store.chat().inbound_seen(tenant, &source, &msg.dedupe_key).await.map_err(store_err)? {
            return Ok(());
        }
        let (carried, steer) = match self.make_room(channel, &route, busy_mode).await? {
            Room::Made(carried) => (carried, false),
            Room::Steer => (Vec::new(), true),
            // Stored, so a redelivery is not answered twice.
            Room::Refused(refusal) => {
                return self.answer_at_once(channel, &msg, raw, Answer::Refusal(Refusal::Told(refusal))).await;
            }
        };
        let text = if carried.is_empty() { text } else { format!("{}\n{text}", carried.join("\n")) };
        let marks = self.cache.background_marks();
        let (target, _) = self
            .store
            .turns()
            .route_target(tenant, &route, chrono::Utc::now(), async |session| {
                marks.is_marked(tenant, session).await.unwrap_or(true)
            })
            .await
            .map_err(store_err)?;
        let hub = self.progress_hub(channel);
        let (turn, transcriptions) = self.turn_of(channel, &msg, &route, target, text, hub).await;
        // Telegram apps split a long paste in parts: the turn waits a moment for the rest.
        // An explicit `/queue` or `/steer` message is a turn of its own, never part of a paste.
        let batch = (channel.platform == Platform::Telegram && chosen.is_none()).then_some(TEXT_BATCH);
        let accepted = match chosen {
            Some(_) => self.store.chat().accept_inbound_alone(tenant, &source, &msg.dedupe_key, raw, turn).await,
            None => self.store.chat().accept_inbound(tenant, &source, &msg.dedupe_key, raw, Some(turn), batch).await,
        }
        .map_err(store_err)?;
        // A transcription is billed whatever became of the message: with its turn, or a
        // redelivery's (raced past the check above) with the turn the first delivery started.
        let read_by = match accepted {
            Accepted::Turn { session, turn } | Accepted::Merged { session, turn } => Some((session, turn)),
            Accepted::Duplicate | Accepted::Stored if !transcriptions.is_empty() => {
                self.store.chat().inbound_turn(tenant, &source, &msg.dedupe_key).await.map_err(store_err)?
            }
            Accepted::Duplicate | Accepted::Stored => None,
        };
        self.meter(tenant, read_by, transcriptions).await;
        let signal = if steer { Signal::Steer } else { Signal::After(batch) };
        self.accepted(channel, &msg, accepted, signal, hub).await
    }

    /// Where a turn from this channel reports its events. A turn that shows its answer as it
    /// is written, or its tools at work, reports them to this pod, which shows them (where
    /// messages can be edited).
    fn progress_hub(&self, channel: &Channel) -> Option<&hermes_queue::EventHub> {
        self.events.as_ref().filter(|_| {
            (channel.streaming || channel.tool_progress)
                && matches!(channel.platform, Platform::Telegram | Platform::Slack)
        })
    }

    /// The turn `text` (with the message's files) starts in `target`, and the transcriptions
    /// reading its voice notes took.
    pub(crate) async fn turn_of(
        &self,
        channel: &Channel,
        msg: &Incoming,
        route: &Route,
        target: TurnTarget,
        text: String,
        hub: Option<&hermes_queue::EventHub>,
    ) -> (NewTurn, Vec<Billed>) {
        let (input, transcriptions) = self.with_files(channel, text, &msg.files).await;
        let turn = NewTurn {
            stream: hub.is_some() && channel.streaming,
            notify_hub: hub.map(|h| h.id().to_owned()),
            reply_to: Some(Destination {
                voice_reply: crate::voice_commands::wants_voice(self.voice_mode(channel, route).await, msg),
                ..destination(channel, msg)
            }),
            trace: hermes_telemetry::context::current(),
            ..NewTurn::new(channel.agent_id, target, input)
        };
        (turn, transcriptions)
    }

    /// Records the transcriptions a message's voice notes took, with the turn that reads them
    /// (usage and spending caps count them like model calls), in place of their reservations.
    /// A failed write (or no turn to count them with) is logged and counted, and its
    /// reservation lapses at its lease: the message is already safe, and is not refused for
    /// its meter.
    pub(crate) async fn meter(&self, tenant: TenantId, read_by: Option<(SessionId, TurnId)>, calls: Vec<Billed>) {
        for Billed { call, reservation } in calls {
            let recorded = match read_by {
                Some((session, turn)) => {
                    self.store.tenancy().settle_media_call(tenant, session, turn, reservation, &call).await
                }
                None => Err(hermes_store::StoreError::NotFound),
            };
            if let Err(e) = recorded {
                tracing::warn!(error = %e, "a transcription's usage could not be recorded");
                metrics::counter!("hermes_media_usage_unrecorded_total").increment(1);
            }
        }
    }

    /// Signals the workers about what was stored, and shows the turn's progress where asked.
    async fn accepted(
        &self,
        channel: &Channel,
        msg: &Incoming,
        accepted: Accepted,
        signal: Signal,
        hub: Option<&hermes_queue::EventHub>,
    ) -> Result<(), IngestError> {
        let tenant = channel.tenant_id;
        let batch = match signal {
            Signal::After(batch) => batch,
            Signal::Steer => None,
        };
        match accepted {
            Accepted::Turn { session, turn } if matches!(signal, Signal::Steer) => {
                // Not marked (a crash in between): it runs after the current turn, as in `queue`.
                self.store.conversations().mark_steer(tenant, turn).await.map_err(store_err)?;
                tracing::info!(channel.id = %channel.id, turn.id = %turn, "chat message steers the running turn");
                self.signal_after(tenant, session, None);
            }
            Accepted::Turn { session, turn } => {
                tracing::info!(channel.id = %channel.id, turn.id = %turn, "chat message became a turn");
                // Subscribed before the workers hear of the turn, so no event is missed.
                if let Some(hub) = hub {
                    self.show_progress(channel, msg, turn, hub);
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

    /// Shows the turn's answer as it is written (or its tools at work) in the chat.
    fn show_progress(
        &self,
        channel: &Channel,
        msg: &Incoming,
        turn: hermes_core::TurnId,
        hub: &hermes_queue::EventHub,
    ) {
        let api = match channel.platform {
            Platform::Slack => {
                self.slack(channel).ok().map(|api| crate::stream::PreviewApi::Slack { api, thread: msg.thread.clone() })
            }
            _ => self.telegram(channel).ok().map(crate::stream::PreviewApi::Telegram),
        };
        let Some(api) = api else { return };
        let preview = crate::stream::Preview {
            store: self.store.clone(),
            api,
            tenant: channel.tenant_id,
            turn,
            chat: msg.chat_id.clone(),
            limit: std::time::Duration::from_secs(self.config.api.turn_timeout_seconds),
            text: channel.streaming,
        };
        hermes_telemetry::tasks::spawn("gateway_preview", preview.run(hub.subscribe(turn)));
    }

    /// Tells the workers a session has work, once `wait` has passed. The turn is stored: a
    /// lost signal (a pod that dies meanwhile) is found again by the reaper.
    pub(crate) fn signal_after(
        &self,
        tenant: hermes_core::TenantId,
        session: hermes_core::SessionId,
        wait: Option<std::time::Duration>,
    ) {
        let broker = self.broker.clone();
        hermes_telemetry::tasks::spawn("gateway_signal_work", async move {
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
        let (busy, open) = self
            .store
            .chat()
            .route_busy_turns(channel.tenant_id, route)
            .await
            .map_err(|e| IngestError::new(e.to_string()))?;
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
        let Some(status) =
            self.store.turns().request_cancel(tenant, turn, &hermes_core::TurnOutcome::cancelled()).await?
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
