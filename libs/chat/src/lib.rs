//! Chat platforms as both the gateway and `hermesctl` use them: the platforms' API clients,
//! splitting long replies to a platform's limit, the gateway's command menu, and telling a
//! paired person they are in.

pub mod binding;
pub mod markdown;
pub mod pairing;
pub mod slack;
pub mod split;
pub mod telegram;
pub mod wecom;
pub mod wecom_bot;

/// A file to send to a chat.
pub struct OutFile<'a> {
    pub name: &'a str,
    pub mime: &'a str,
    pub data: &'a [u8],
}

/// The chat command menu a bot registers (the gateway's own commands).
pub const COMMAND_MENU: [(&str, &str); 24] = [
    ("new", "Start a fresh conversation"),
    ("stop", "Stop what I'm doing"),
    ("retry", "Ask your last message again"),
    ("undo", "Take your last message back"),
    ("steer", "Add to what I'm doing now: /steer text"),
    ("queue", "Ask after I finish: /queue text"),
    ("status", "About this conversation"),
    ("title", "Rename this conversation"),
    ("sessions", "Your earlier conversations"),
    ("resume", "Go back to an earlier conversation"),
    ("goal", "Keep working toward a goal: /goal text (status, pause, resume, clear)"),
    ("subgoal", "Add a criterion to the goal: /subgoal text (remove N, clear)"),
    ("cron", "Scheduled jobs: /cron add|list|edit|pause|resume|run|remove"),
    ("compress", "Summarise this conversation now"),
    ("rollback", "Restore my workspace to a checkpoint"),
    ("skills", "What I know how to do"),
    ("memory", "What I remember"),
    ("model", "Show or switch my model"),
    ("usage", "Today's usage"),
    ("approve", "Allow the command I asked about (once, session, always)"),
    ("deny", "Refuse the command I asked about"),
    ("whoami", "Show your user and chat ids"),
    ("pair", "Admins: approve a pairing code"),
    ("help", "What I can do"),
];
