//! The chat commands, listed once: the bot's menu, the gateway's `/help`, the admin gating
//! and both dispatchers (the gateway's and the worker's) read [`COMMANDS`]. It lives here,
//! not in the chat crate, so the worker reads it without linking the platforms' clients.

/// A slash command a person can send in a chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChatCommand {
    New,
    Stop,
    Agents,
    Background,
    Retry,
    Undo,
    Steer,
    Queue,
    Status,
    Title,
    Sessions,
    Resume,
    Goal,
    Subgoal,
    Cron,
    Compress,
    Rollback,
    ReloadMcp,
    Skills,
    Memory,
    Model,
    Reasoning,
    Fast,
    Usage,
    Voice,
    Approve,
    Deny,
    Whoami,
    Pair,
    Help,
    /// Kept last: the tests count the variants by it.
    SetHome,
}

/// Who may run a command in a channel that names admins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Everyone, whatever the channel's `admin_commands` say.
    Everyone,
    /// Everyone, unless the channel lists it in `admin_commands`.
    UnlessListed,
    /// The channel's admins: a new channel lists it in `admin_commands` (the column's
    /// default, latest in migrations/0056_admin_only_workspace_commands.sql; a store contract
    /// test keeps the two the same), and a channel may take it off.
    AdminsByDefault,
}

/// Who answers a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunsIn {
    /// The gateway, without the agent.
    Gateway,
    /// The worker, without the model (it needs the sandbox or the model context).
    Worker,
    /// The gateway when the command comes alone (or `/goal` with a control word such as
    /// `pause`); with a message it is a message for the agent (`/steer TEXT`, `/goal TEXT`).
    GatewayWhenBare,
}

/// One command: its names, its menu line, its part of `/help`, who may run it and where.
#[derive(Debug)]
pub struct CommandSpec {
    pub command: ChatCommand,
    /// Without the slash, as in the menu and in `admin_commands`.
    pub name: &'static str,
    /// Other names for it (`/start` for `/help`, `/reset` for `/new`).
    pub aliases: &'static [&'static str],
    /// The bot menu's description; `None` keeps it out of the menu.
    pub menu: Option<&'static str>,
    /// Its phrase in `/help`'s sentence, if `/help` names it.
    pub help: Option<&'static str>,
    pub access: Access,
    pub runs_in: RunsIn,
}

impl CommandSpec {
    /// Whether `name` (without the slash) is this command's name or an alias.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// A command the menu leaves out.
const fn hidden(command: ChatCommand, name: &'static str) -> CommandSpec {
    CommandSpec { menu: None, ..spec(command, name, "") }
}

const fn spec(command: ChatCommand, name: &'static str, menu: &'static str) -> CommandSpec {
    CommandSpec {
        command,
        name,
        aliases: &[],
        menu: Some(menu),
        help: None,
        access: Access::UnlessListed,
        runs_in: RunsIn::Gateway,
    }
}

impl CommandSpec {
    const fn aliases(self, aliases: &'static [&'static str]) -> Self {
        Self { aliases, ..self }
    }
    const fn help(self, phrase: &'static str) -> Self {
        Self { help: Some(phrase), ..self }
    }
    const fn access(self, access: Access) -> Self {
        Self { access, ..self }
    }
    const fn runs_in(self, runs_in: RunsIn) -> Self {
        Self { runs_in, ..self }
    }
}

use Access::{AdminsByDefault, Everyone};
use ChatCommand as C;
use RunsIn::{GatewayWhenBare, Worker};

/// Every command, in the menu's order (`/help` names them in the same order).
pub static COMMANDS: [CommandSpec; 31] = [
    spec(C::New, "new", "Start a fresh conversation").aliases(&["reset"]).help("/new starts a fresh conversation"),
    spec(C::Stop, "stop", "Stop what I'm doing").help("/stop stops my current work"),
    spec(C::Agents, "agents", "My background tasks at work").aliases(&["tasks"]),
    spec(C::Background, "background", "Ask in a separate conversation, answered when done: /background text")
        .aliases(&["bg", "btw"])
        .runs_in(GatewayWhenBare),
    spec(C::Retry, "retry", "Ask your last message again").help("/retry asks again"),
    spec(C::Undo, "undo", "Take your last message back").help("/undo takes your last message back"),
    spec(C::Steer, "steer", "Add to what I'm doing now: /steer text")
        .help("/steer or /queue add to what I'm doing")
        .runs_in(GatewayWhenBare),
    spec(C::Queue, "queue", "Ask after I finish: /queue text").aliases(&["q"]).runs_in(GatewayWhenBare),
    spec(C::Status, "status", "About this conversation").help("/status shows this conversation"),
    spec(C::Title, "title", "Rename this conversation").help("/title renames it"),
    spec(C::Sessions, "sessions", "Your earlier conversations")
        .help("/sessions and /resume N go back to an earlier one"),
    spec(C::Resume, "resume", "Go back to an earlier conversation"),
    spec(C::Goal, "goal", "Keep working toward a goal: /goal text (status, pause, resume, clear)")
        .access(AdminsByDefault)
        .runs_in(GatewayWhenBare),
    spec(C::Subgoal, "subgoal", "Add a criterion to the goal: /subgoal text (remove N, clear)").access(AdminsByDefault),
    spec(C::Cron, "cron", "Scheduled jobs: /cron add|list|edit|pause|resume|run|remove").access(AdminsByDefault),
    spec(C::Compress, "compress", "Summarise this conversation now").access(AdminsByDefault).runs_in(Worker),
    // The workspace and the MCP servers are every conversation's: admins' by default.
    spec(C::Rollback, "rollback", "Restore my workspace to a checkpoint").access(AdminsByDefault).runs_in(Worker),
    // Telegram's menu takes letters, digits and `_`; upstream's `/reload-mcp` is an alias.
    spec(C::ReloadMcp, "reload_mcp", "Reconnect my MCP servers and list their tools again")
        .aliases(&["reload-mcp"])
        .access(AdminsByDefault)
        .runs_in(Worker),
    spec(C::Skills, "skills", "What I know how to do").help("/skills lists what I know how to do"),
    spec(C::Memory, "memory", "What I remember").help("/memory shows what I remember").access(AdminsByDefault),
    spec(C::Model, "model", "Show or switch my model").help("/model shows my model").access(AdminsByDefault),
    spec(C::Reasoning, "reasoning", "How hard I think here: /reasoning none|low|medium|high|xhigh|default")
        .help("/reasoning sets how hard I think"),
    spec(C::Fast, "fast", "Priority processing here, where my model offers it: /fast on|off"),
    spec(C::Usage, "usage", "Today's usage").access(AdminsByDefault),
    spec(C::Voice, "voice", "Spoken answers: /voice on|tts|off|status").help("/voice on answers voice with voice"),
    spec(C::Approve, "approve", "Allow the command I asked about (once, session, always)"),
    spec(C::Deny, "deny", "Refuse the command I asked about"),
    spec(C::Whoami, "whoami", "Show your user and chat ids").help("/whoami shows your ids").access(Everyone),
    spec(C::Pair, "pair", "Admins: approve a pairing code").access(AdminsByDefault),
    spec(C::Help, "help", "What I can do").aliases(&["start"]).access(Everyone),
    hidden(C::SetHome, "sethome").access(AdminsByDefault),
];

/// The command `name` (without the slash) names, by its name or an alias.
pub fn named(name: &str) -> Option<&'static CommandSpec> {
    COMMANDS.iter().find(|spec| spec.is_named(name))
}

/// The command `text` starts with (`/name` as its first word) and the rest of the text.
pub fn parse(text: &str) -> Option<(&'static CommandSpec, &str)> {
    let text = text.trim_start();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    Some((named(word.strip_prefix('/')?)?, rest.trim()))
}

/// The bot menu: name and description, in order.
pub fn menu() -> impl Iterator<Item = (&'static str, &'static str)> {
    COMMANDS.iter().filter_map(|spec| Some((spec.name, spec.menu?)))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_command_is_listed_once_and_every_name_is_unique() {
        let commands: HashSet<ChatCommand> = COMMANDS.iter().map(|s| s.command).collect();
        assert_eq!(commands.len(), COMMANDS.len(), "a command listed twice");
        assert_eq!(COMMANDS.len(), ChatCommand::SetHome as usize + 1, "a command not listed");
        let names: Vec<&str> =
            COMMANDS.iter().flat_map(|s| std::iter::once(s.name).chain(s.aliases.iter().copied())).collect();
        assert_eq!(names.iter().collect::<HashSet<_>>().len(), names.len(), "{names:?}");
    }

    #[test]
    fn the_menu_keeps_its_order_and_leaves_sethome_out() {
        let names: Vec<&str> = menu().map(|(name, _)| name).collect();
        assert_eq!(
            names,
            [
                "new",
                "stop",
                "agents",
                "background",
                "retry",
                "undo",
                "steer",
                "queue",
                "status",
                "title",
                "sessions",
                "resume",
                "goal",
                "subgoal",
                "cron",
                "compress",
                "rollback",
                "reload_mcp",
                "skills",
                "memory",
                "model",
                "reasoning",
                "fast",
                "usage",
                "voice",
                "approve",
                "deny",
                "whoami",
                "pair",
                "help"
            ]
        );
        assert_eq!(menu().next(), Some(("new", "Start a fresh conversation")));
    }

    #[test]
    fn a_command_is_its_first_word_by_name_or_alias() {
        let (spec, rest) = parse("  /resume 2 ").unwrap();
        assert_eq!((spec.command, rest), (ChatCommand::Resume, "2"));
        assert_eq!(parse("/start").unwrap().0.command, ChatCommand::Help);
        assert_eq!(parse("/reset").unwrap().0.command, ChatCommand::New);
        assert_eq!(parse("/q after that").map(|(s, r)| (s.command, r)), Some((ChatCommand::Queue, "after that")));
        assert!(parse("new").is_none(), "a slash is needed");
        assert!(parse("/my-skill do it").is_none(), "skills are not commands");
        assert!(parse("/newer").is_none());
    }
}
