//! Chat commands the gateway answers itself, without the agent: those that
//! [`hermes_core::commands::COMMANDS`] says run in the gateway (and `/steer`, `/queue`
//! without a message: how to use them; `/goal` with a control word, see `goal_commands`).
//! Other `/words` go to the agent (the worker answers `/rollback` and `/compress`, and runs
//! `/skill-name`). When a channel names admins, the commands in its `admin_commands` are
//! theirs alone, except those for everyone (`/help`, `/whoami`).

use hermes_core::ChatMessage;
use hermes_core::commands::{Access, COMMANDS, ChatCommand, RunsIn};
use hermes_store::{Channel, NewTurn};

use crate::Gateway;
use crate::error::IngestError;
use crate::incoming::{ChatKind, Incoming};
use crate::route::{destination, route_for};

/// `/steer` or `/queue` without a message.
const BUSY_MODES: &str = "Write /steer and a message to guide what I'm doing right now, or /queue and a message to \
                          have it answered after I finish.";

/// The refusal of a command (the gateway's or the worker's, like `/compress`, or a skill's)
/// that this channel keeps for its admins, when someone else sends it. A command is kept by
/// its name or the alias used; the commands for everyone cannot be kept.
pub fn gated(channel: &Channel, msg: &Incoming) -> Option<String> {
    if channel.is_admin(&msg.user_id) {
        return None;
    }
    let mut words = msg.text.split_whitespace();
    let word = words.next()?.strip_prefix('/')?;
    let refused = kept_word(channel, word);
    // `/steer`, `/queue` and `/background` carry a message: a command in it is gated as well.
    let carries = hermes_core::commands::named(word)
        .is_some_and(|s| matches!(s.command, ChatCommand::Steer | ChatCommand::Queue | ChatCommand::Background));
    let carried = carries.then(|| words.next().and_then(|w| w.strip_prefix('/'))).flatten();
    refused.or_else(|| carried.and_then(|w| kept_word(channel, w)))
}

/// The refusal of `/word` by someone who is not an admin, if the channel keeps it.
fn kept_word(channel: &Channel, word: &str) -> Option<String> {
    let spec = hermes_core::commands::named(word);
    if spec.is_some_and(|s| s.access == Access::Everyone) {
        return None;
    }
    let kept = |name: &str| channel.admin_commands.iter().any(|c| c == name);
    let refused = kept(word) || spec.is_some_and(|s| kept(s.name));
    refused.then(|| format!("Only this bot's admins can use /{word}."))
}

/// The command in `text` if the gateway answers it itself, with the rest of the text.
pub fn own_command(text: &str) -> Option<(ChatCommand, &str)> {
    let (spec, rest) = hermes_core::commands::parse(text)?;
    let answers = match spec.runs_in {
        RunsIn::Gateway => true,
        RunsIn::Worker => false,
        // With a message they choose the busy mode for it (see `ingest`) or set the goal.
        RunsIn::GatewayWhenBare => {
            rest.is_empty() || (spec.command == ChatCommand::Goal && crate::goal_commands::is_goal_control(rest))
        }
    };
    answers.then_some((spec.command, rest))
}

/// Whether the gateway answers `text` itself.
pub fn is_command(text: &str) -> bool {
    own_command(text).is_some()
}

/// `/help` (and `/start`): the phrases of the commands it names, in the menu's order.
fn help_text(kind: ChatKind) -> String {
    let phrases: Vec<&str> = COMMANDS.iter().filter_map(|spec| spec.help).collect();
    let mention = if kind == ChatKind::Group { " and mention me" } else { "" };
    format!("Hi! I'm your team's assistant. Just write to me{mention}.\n{}.", phrases.join(", "))
}

fn err(e: hermes_store::StoreError) -> IngestError {
    IngestError::new(e.to_string())
}

impl Gateway {
    /// The reply to a command (see [`own_command`]).
    pub(crate) async fn command(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let Some((command, rest)) = own_command(&msg.text) else { return Ok(help_text(msg.kind)) };
        let route = route_for(channel, msg);
        match command {
            ChatCommand::Steer | ChatCommand::Queue => Ok(BUSY_MODES.to_owned()),
            ChatCommand::Approve | ChatCommand::Deny => self.approval_reply(channel, msg).await,
            ChatCommand::Undo => self.undo(channel, &route).await,
            ChatCommand::Cron => self.cron_command(channel, msg).await,
            ChatCommand::Goal => self.goal_command(channel, msg).await,
            ChatCommand::Subgoal => self.subgoal_command(channel, msg).await,
            ChatCommand::SetHome => self.set_home(channel, msg).await,
            ChatCommand::Model => self.model_command(channel, msg, rest.split_whitespace().next()).await,
            ChatCommand::Memory => self.memory_command(channel, &route).await,
            ChatCommand::Reasoning => self.reasoning_command(channel, &route, rest.split_whitespace().next()).await,
            ChatCommand::Fast => self.fast_command(channel, &route, rest.split_whitespace().next()).await,
            ChatCommand::Skills => self.skills_command(channel).await,
            ChatCommand::Pair => self.pair_command(channel, msg).await,
            ChatCommand::Whoami => {
                Ok(format!("Your user id is {} and this chat's id is {}.", msg.user_id, msg.chat_id))
            }
            ChatCommand::Agents => self.agents(channel, &route).await,
            ChatCommand::Background => Ok(crate::background_commands::BACKGROUND_USAGE.to_owned()),
            ChatCommand::New => {
                self.stop_route(channel, &route).await?;
                self.stop_children(channel, &route).await?;
                self.store.conversations().end_route(channel.tenant_id, &route).await.map_err(err)?;
                Ok("Started a fresh conversation.".to_owned())
            }
            ChatCommand::Stop => {
                let stopped = self.stop_route(channel, &route).await?;
                Ok(match (stopped, self.stop_children(channel, &route).await?) {
                    (0, 0) => "Nothing is running.".to_owned(),
                    (_, 0) => "Stopped.".to_owned(),
                    (_, children) => format!("Stopped, with {children} background task(s)."),
                })
            }
            ChatCommand::Retry => self.retry(channel, msg).await,
            ChatCommand::Status => self.status(channel, &route).await,
            ChatCommand::Title => self.title(channel, &route, rest).await,
            ChatCommand::Sessions => self.sessions(channel, &route).await,
            ChatCommand::Resume => self.resume(channel, &route, rest.split_whitespace().next()).await,
            ChatCommand::Usage => self.usage(channel).await,
            ChatCommand::Voice => self.voice_command(channel, msg, rest).await,
            ChatCommand::Help => self.help(channel, msg).await,
            // The worker answers these; `own_command` never hands them here.
            ChatCommand::Compress | ChatCommand::Rollback | ChatCommand::ReloadMcp => Ok(help_text(msg.kind)),
        }
    }

    /// `/help`: the commands, and the toolsets the agent has in this chat (its bot's rules for
    /// the chat applied).
    async fn help(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let agent = self.store.agents().agent(channel.tenant_id, channel.agent_id).await.map_err(err)?;
        let mut toolsets = agent.toolsets.clone();
        let rule = channel.toolsets.limit_for(&msg.chat_id, msg.kind == ChatKind::Group);
        hermes_core::audience::narrow(&mut toolsets, rule);
        let tools = if toolsets.is_empty() { "none".to_owned() } else { toolsets.join(", ") };
        let narrowed = if rule.is_some() { " (this chat's share of mine)" } else { "" };
        Ok(format!("{}\nTools here{narrowed}: {tools}.", help_text(msg.kind)))
    }

    /// `/sethome`: deliveries to this channel's platform come to this chat.
    async fn set_home(&self, channel: &Channel, msg: &Incoming) -> Result<String, IngestError> {
        let home = match &msg.thread {
            Some(thread) => format!("{}:{thread}", msg.chat_id),
            None => msg.chat_id.clone(),
        };
        let access = hermes_store::ChannelAccess { home_chat: Some(home.clone()), ..Default::default() };
        let mut tx = self.store.audited(channel.tenant_id, msg.audit(channel.platform)).await.map_err(err)?;
        tx.update_channel_access(channel.id, &access).await.map_err(err)?;
        let change = hermes_store::admin::Change::new("channel.home_set", "channel", channel.id)
            .before(serde_json::json!({ "home_chat": channel.home_chat }))
            .after(serde_json::json!({ "home_chat": home }));
        tx.commit(change).await.map_err(err)?;
        Ok(format!("This chat is now home: deliveries to {} come here.", channel.platform))
    }

    /// Stops what the agent is doing in this conversation; how many turns were stopped.
    pub(crate) async fn stop_route(
        &self,
        channel: &Channel,
        route: &hermes_store::Route,
    ) -> Result<usize, IngestError> {
        let (busy, _) = self.store.chat().route_busy_turns(channel.tenant_id, route).await.map_err(err)?;
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
        let Some((session, _)) = self.store.conversations().route_state(tenant, &route).await.map_err(err)? else {
            return Ok("Nothing to retry yet.".into());
        };
        let Some(last) = self.store.conversations().last_user_text(tenant, session).await.map_err(err)? else {
            return Ok("Nothing to retry yet.".into());
        };
        self.stop_route(channel, &route).await?;
        let turn = NewTurn {
            reply_to: Some(destination(channel, msg)),
            trace: hermes_telemetry::context::current(),
            ..NewTurn::new(channel.agent_id, hermes_store::TurnTarget::Existing(session), ChatMessage::user(last))
        };
        let (session, _) = self.store.turns().enqueue_turn(tenant, turn).await.map_err(err)?;
        let work = hermes_queue::SessionWork { tenant_id: tenant, session_id: session };
        if let Err(e) = self.broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot signal the retry; the reaper will pick it up");
        }
        Ok("Asking again…".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::tests::{channel, msg};

    #[test]
    fn help_names_the_commands_as_it_always_has() {
        assert_eq!(
            help_text(ChatKind::Group),
            "Hi! I'm your team's assistant. Just write to me and mention me.\n/new starts a fresh conversation, \
             /stop stops my current work, /retry asks again, /undo takes your last message back, /steer or /queue \
             add to what I'm doing, /status shows this conversation, /title renames it, /sessions and /resume N go \
             back to an earlier one, /skills lists what I know how to do, /memory shows what I remember, /model \
             shows my model, /reasoning sets how hard I think, /voice on answers voice with voice, /whoami shows \
             your ids."
        );
        assert!(help_text(ChatKind::Direct).starts_with("Hi! I'm your team's assistant. Just write to me.\n"));
    }

    #[test]
    fn the_gateway_answers_its_commands_and_bare_busy_modes_and_goal_controls() {
        assert_eq!(own_command("/start"), Some((ChatCommand::Help, "")));
        assert_eq!(own_command("/reset"), Some((ChatCommand::New, "")));
        assert_eq!(own_command("/resume 2"), Some((ChatCommand::Resume, "2")));
        assert_eq!(own_command("/q"), Some((ChatCommand::Queue, "")));
        assert_eq!(own_command("/steer this way"), None, "a message for the agent");
        assert_eq!(own_command("/goal pause"), Some((ChatCommand::Goal, "pause")));
        assert_eq!(own_command("/goal"), Some((ChatCommand::Goal, "")));
        assert_eq!(own_command("/goal pass the tests"), None, "a goal for the worker");
        assert_eq!(own_command("/compress"), None, "the worker's");
        assert_eq!(own_command("/rollback 1"), None, "the worker's");
        assert_eq!(own_command("/my-skill"), None);
        assert_eq!(own_command("hello /new"), None);
    }

    #[test]
    fn admins_keep_the_listed_commands_but_not_the_ones_for_everyone() {
        let mut c = channel("open", "mention", &[], &[]);
        c.admin_commands = vec!["model".into(), "new".into(), "help".into(), "my-skill".into()];
        let from = |user: &str, text: &str| {
            let mut m = msg(ChatKind::Direct, user, user, true);
            m.text = text.into();
            gated(&c, &m)
        };
        assert_eq!(from("5", "/model x").as_deref(), Some("Only this bot's admins can use /model."));
        assert_eq!(from("9", "/model x"), None, "9 is the admin");
        assert_eq!(from("5", "/reset").as_deref(), Some("Only this bot's admins can use /reset."), "by its alias");
        assert_eq!(from("5", "/my-skill go").as_deref(), Some("Only this bot's admins can use /my-skill."));
        assert_eq!(from("5", "/start"), None, "help is everyone's");
        assert_eq!(from("5", "/whoami"), None);
        assert_eq!(from("5", "/status"), None, "not listed");
        assert_eq!(from("5", "hello"), None);
        // A command carried in a message for later is gated as if sent alone.
        for carried in ["/bg /model y", "/btw /my-skill go", "/queue /reset", "/steer /model z"] {
            assert!(from("5", carried).is_some_and(|r| r.starts_with("Only this bot's admins")), "{carried}");
        }
        assert_eq!(from("9", "/bg /model y"), None);
        assert_eq!(from("5", "/bg what is /model"), None, "only its first word");
    }
}
