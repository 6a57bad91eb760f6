//! Chat commands the gateway answers itself, without the agent: `/help`, `/whoami`, `/new`,
//! `/stop`, `/retry`, `/undo`, `/status`, `/title`, `/sessions`, `/resume N`, `/usage`,
//! `/model`, `/memory`, `/skills`, `/approve`, `/deny`, `/pair`, `/cron`, `/goal` (its
//! controls; see `goal_commands`) (and `/steer`, `/queue` without
//! a message: how to use them). Other `/words` go to the agent (the worker answers `/rollback`
//! and runs `/skill-name`). When a channel names admins, the commands in its `admin_commands`
//! are theirs alone; `/help` and `/whoami` are everyone's.

use hermes_core::ChatMessage;
use hermes_store::{Channel, NewTurn, UsageGroup};

use crate::Gateway;
use crate::incoming::{ChatKind, Incoming};
use crate::ingest::{IngestError, destination, route_for};

const COMMANDS: [&str; 22] = [
    "/start",
    "/subgoal",
    "/sethome",
    "/cron",
    "/undo",
    "/model",
    "/memory",
    "/skills",
    "/help",
    "/whoami",
    "/new",
    "/reset",
    "/stop",
    "/retry",
    "/status",
    "/title",
    "/usage",
    "/approve",
    "/deny",
    "/pair",
    "/sessions",
    "/resume",
];
/// How many earlier conversations `/sessions` lists.
const LISTED_SESSIONS: i64 = 5;

/// The refusal of a command (the gateway's or the worker's, like `/compress`) that this
/// channel keeps for its admins, when someone else sends it.
pub fn gated(channel: &Channel, msg: &Incoming) -> Option<String> {
    let name = msg.text.split_whitespace().next()?.strip_prefix('/')?;
    let admin = channel.admins.is_empty() || channel.admins.iter().any(|a| a == &msg.user_id);
    let refused =
        !admin && !matches!(name, "help" | "start" | "whoami") && channel.admin_commands.iter().any(|c| c == name);
    refused.then(|| format!("Only this bot's admins can use /{name}."))
}

/// Whether the gateway answers `text` itself.
pub fn is_command(text: &str) -> bool {
    let mut words = text.split_whitespace();
    match words.next() {
        Some(w) if COMMANDS.contains(&w) => true,
        // With a message they choose the busy mode for it (see `ingest`).
        Some("/steer" | "/queue" | "/q") => words.next().is_none(),
        Some("/goal") => crate::goal_commands::is_goal_command(text),
        _ => false,
    }
}

fn err(e: hermes_store::StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// The reply to a command (see [`is_command`]).
    pub(crate) async fn command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let mut words = msg.text.split_whitespace();
        let word = words.next().unwrap_or_default();
        if crate::interact::is_approval_command(&msg.text) {
            return self.approval_reply(channel, msg).await;
        }
        let tenant = channel.tenant_id;
        let route = route_for(channel, msg);
        Ok(match word {
            "/steer" | "/queue" | "/q" => {
                "Write /steer and a message to guide what I'm doing right now, or /queue and \
                                           a message to have it answered after I finish."
                    .to_owned()
            }
            "/undo" => return self.undo(channel, &route).await,
            "/cron" => return self.cron_command(channel, msg).await,
            "/goal" => return self.goal_command(channel, msg).await,
            "/subgoal" => return self.subgoal_command(channel, msg).await,
            "/sethome" => {
                let home = match &msg.thread {
                    Some(thread) => format!("{}:{thread}", msg.chat_id),
                    None => msg.chat_id.clone(),
                };
                let access = hermes_store::ChannelAccess { home_chat: Some(home), ..Default::default() };
                self.store.update_channel_access(tenant, channel.id, &access).await.map_err(err)?;
                format!("This chat is now home: deliveries to {} come here.", channel.platform)
            }
            "/model" => return self.model_command(channel, words.next()).await,
            "/memory" => return self.memory_command(channel, &route).await,
            "/skills" => return self.skills_command(channel).await,
            "/pair" => return self.pair_command(channel, msg).await,
            "/whoami" => format!("Your user id is {} and this chat's id is {}.", msg.user_id, msg.chat_id),
            "/new" | "/reset" => {
                self.stop_route(channel, &route).await?;
                self.store.end_route(tenant, &route).await.map_err(err)?;
                "Started a fresh conversation.".to_owned()
            }
            "/stop" => match self.stop_route(channel, &route).await? {
                0 => "Nothing is running.".to_owned(),
                _ => "Stopped.".to_owned(),
            },
            "/retry" => return self.retry(channel, msg).await,
            "/status" => {
                let Some((session, _)) = self.store.route_state(tenant, &route).await.map_err(err)? else {
                    return Ok("No conversation yet: just write to me.".into());
                };
                let info = self.store.session_info(tenant, None, session).await.map_err(err)?;
                let (busy, open) = self.store.route_busy_turns(tenant, &route).await.map_err(err)?;
                format!(
                    "Conversation “{}”: {} messages since {}. {}",
                    info.title.as_deref().unwrap_or("untitled"),
                    info.message_count,
                    info.created_at.format("%Y-%m-%d %H:%M UTC"),
                    match (busy.len(), open) {
                        (0, 0) => "Idle.".to_owned(),
                        (_, n) => format!("Working ({n} message(s) in progress)."),
                    }
                )
            }
            "/title" => {
                let title: String = words.collect::<Vec<_>>().join(" ").chars().take(120).collect();
                let Some((session, _)) = self.store.route_state(tenant, &route).await.map_err(err)? else {
                    return Ok("No conversation yet: just write to me.".into());
                };
                if title.is_empty() {
                    return Ok("Use /title followed by the new title.".into());
                }
                self.store.set_session_title(tenant, session, Some(&title)).await.map_err(err)?;
                format!("Renamed to “{title}”.")
            }
            "/sessions" => {
                let list = self.store.route_sessions(tenant, &route, LISTED_SESSIONS).await.map_err(err)?;
                if list.is_empty() {
                    return Ok("No conversations yet: just write to me.".into());
                }
                let current = self.store.route_state(tenant, &route).await.map_err(err)?.map(|(s, _)| s);
                let mut text = String::from("Your recent conversations (continue one with /resume N):");
                for (n, s) in list.iter().enumerate() {
                    let mark = if Some(s.id) == current { " ← current" } else { "" };
                    text.push_str(&format!(
                        "\n{}. {} ({} messages, {}){mark}",
                        n + 1,
                        s.title.as_deref().unwrap_or("untitled"),
                        s.message_count,
                        s.updated_at.format("%Y-%m-%d %H:%M UTC")
                    ));
                }
                text
            }
            "/resume" => {
                let list = self.store.route_sessions(tenant, &route, LISTED_SESSIONS).await.map_err(err)?;
                let pick = words.next().and_then(|n| n.parse::<usize>().ok()).and_then(|n| list.get(n.checked_sub(1)?));
                let Some(pick) = pick else {
                    return Ok("Use /resume N with a number from /sessions.".into());
                };
                self.stop_route(channel, &route).await?;
                self.store.resume_route(tenant, &route, pick.id).await.map_err(err)?;
                format!("Back to “{}”.", pick.title.as_deref().unwrap_or("untitled"))
            }
            "/usage" => {
                let today = chrono::Utc::now().date_naive();
                let lines = self
                    .store
                    .usage_report(tenant, Some(channel.agent_id), UsageGroup::Day, today, today)
                    .await
                    .map_err(err)?;
                let (calls, tokens, cost) = lines.iter().fold((0, 0, 0.0), |(c, t, d), l| {
                    (c + l.calls, t + l.prompt_tokens + l.completion_tokens, d + l.cost_usd)
                });
                format!("Today this assistant made {calls} model calls with {tokens} tokens, costing ${cost:.4}.")
            }
            _ => format!(
                "Hi! I'm your team's assistant. Just write to me{}.\n/new starts a fresh conversation, /stop stops my \
                 current work, /retry asks again, /undo takes your last message back, /steer or /queue add to what \
                 I'm doing, /status shows this conversation, /title renames it, /sessions and /resume N go back to \
                 an earlier one, /skills lists what I know how to do, /memory shows what I remember, /model shows \
                 my model, /whoami shows your ids.",
                if msg.kind == ChatKind::Group { " and mention me" } else { "" }
            ),
        })
    }

    /// Stops what the agent is doing in this conversation; how many turns were stopped.
    async fn stop_route(&self, channel: &Channel, route: &hermes_store::Route) -> Result<usize, IngestError> {
        let (busy, _) = self.store.route_busy_turns(channel.tenant_id, route).await.map_err(err)?;
        let mut stopped = 0;
        for turn in busy {
            if self.stop_turn(channel.tenant_id, turn.id).await.map_err(err)? {
                stopped += 1;
            }
        }
        Ok(stopped)
    }

    /// `/retry`: the conversation's last message, asked again as a new turn.
    async fn retry(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let tenant = channel.tenant_id;
        let route = route_for(channel, msg);
        let Some((session, _)) = self.store.route_state(tenant, &route).await.map_err(err)? else {
            return Ok("Nothing to retry yet.".into());
        };
        let Some(last) = self.store.last_user_text(tenant, session).await.map_err(err)? else {
            return Ok("Nothing to retry yet.".into());
        };
        self.stop_route(channel, &route).await?;
        let turn = NewTurn {
            agent_id: channel.agent_id,
            target: hermes_store::TurnTarget::Existing(session),
            input: ChatMessage::user(last),
            instructions: None,
            stream: false,
            notify_hub: None,
            api_key: None,
            response: None,
            reply_to: Some(destination(channel, msg)),
        };
        let (session, _) = self.store.enqueue_turn(tenant, turn).await.map_err(err)?;
        let work = hermes_queue::SessionWork { tenant_id: tenant, session_id: session };
        if let Err(e) = self.broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot signal the retry; the reaper will pick it up");
        }
        Ok("Asking again…".into())
    }
}
