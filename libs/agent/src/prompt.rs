//! The stable system prompt: rendered once per session, stored on the session row and reused
//! byte for byte by every later turn (so provider prefix caches hit). Its layers, in Hermes's
//! order: identity (SOUL or the default), tool guidance (with tool-use enforcement for
//! GPT/Codex models), the agent's custom system message, the frozen MEMORY and USER snapshots,
//! the skills index, the project context file, the date (day precision, so the prefix holds
//! all day), and a platform hint. Per-call layers (budget warnings) are never part of it.
//!
//! Every byte here is paid on every call, so each layer says what it must and no more.

use chrono::NaiveDate;
use hermes_core::SessionSource;

use crate::context_files::{ContextFile, MAX_CONTEXT_CHARS, truncate_head_tail};
use hermes_threats as threats;

/// Identity used when the agent has no SOUL of its own.
pub const DEFAULT_IDENTITY: &str = "You are Hermes, an autonomous assistant hosted by Hermes Cloud for a team. \
You are helpful, direct and honest: you say what you did and what you could not do.";

const TOOL_GUIDANCE: &str = "Use your tools when they help you get things right instead of guessing. When a tool \
fails, read the error and change your approach rather than repeating the call. When you are done, answer in plain text.";

/// Added for model families that tend to describe actions instead of taking them.
pub const TOOL_ENFORCEMENT: &str =
    "You MUST use your tools to take action: do not describe what you would do or plan to do without doing it.";

/// One line per capability, included only when its tool is enabled.
const CAPABILITY_GUIDANCE: &[(&str, &str)] = &[
    (
        "terminal",
        "`terminal` runs shell commands in your own Linux sandbox; files in /workspace persist between sessions.",
    ),
    (
        "read_file",
        "Prefer the file tools over shell commands for files: `read_file` to read, `patch` for edits (exact text), \
`write_file` for new files, `search_files` to find code.",
    ),
    (
        "memory",
        "You have persistent memory across sessions: save durable facts (user preferences, environment details, \
stable conventions) with `memory`, compactly; it is shown to you at the start of every session.",
    ),
    (
        "session_search",
        "When the user refers to an earlier conversation, use `session_search` to recall it before \
asking them to repeat themselves.",
    ),
    (
        "delegate_task",
        "For independent sub-tasks, `delegate_task` runs up to three sub-agents in parallel; give each all the \
context it needs, since it cannot see this conversation.",
    ),
    (
        "skill_view",
        "Before replying, check the skills index below; if a skill clearly matches the task, load it with \
`skill_view` and follow it.",
    ),
];

/// A skill in the index (name and description only: the body is loaded on demand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    pub category: String,
    pub name: String,
    pub description: String,
}

/// What goes into the stable prompt.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    pub soul: Option<&'a str>,
    /// The provider's model id (selects model-family guidance).
    pub model: &'a str,
    pub tool_names: &'a [&'a str],
    /// The agent's own standing instructions.
    pub custom_system: Option<&'a str>,
    /// The MEMORY block (`memory::render_block`), frozen at session start.
    pub memory: Option<&'a str>,
    /// The USER PROFILE block, frozen at session start.
    pub user_profile: Option<&'a str>,
    pub skills: &'a [SkillEntry],
    pub context_file: Option<&'a ContextFile>,
    pub today: NaiveDate,
    /// Where the conversation happens (`None`: a background task, such as the review).
    pub source: Option<SessionSource>,
}

/// Model families that need the tool-use enforcement line.
pub fn needs_tool_enforcement(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    name.starts_with("gpt")
        || name.contains("codex")
        || name.starts_with("o1")
        || name.starts_with("o3")
        || name.starts_with("o4")
}

fn platform_hint(source: SessionSource) -> Option<&'static str> {
    match source {
        SessionSource::Telegram => {
            Some("You are chatting on Telegram: keep replies short; use simple Markdown (bold, italics, code).")
        }
        SessionSource::Slack => {
            Some("You are chatting in Slack: keep replies short; use Slack's mrkdwn (*bold*, `code`).")
        }
        SessionSource::Wecom => Some("You are chatting in WeCom: keep replies short and use plain text."),
        SessionSource::Cron => {
            Some("You are running a scheduled job with no one to ask: do the task and report the result.")
        }
        // The webhook's own instructions say what to do; API clients and sub-agents set their own tone.
        SessionSource::Api | SessionSource::Webhook | SessionSource::Subagent => None,
    }
}

fn section(out: &mut String, text: &str) {
    let text = text.trim();
    if !text.is_empty() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(text);
    }
}

/// Renders the stable prompt.
pub fn render_stable_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut out = String::new();
    let soul = inputs.soul.map(|s| threats::sanitize(&truncate_head_tail(s.trim(), MAX_CONTEXT_CHARS)).0);
    section(&mut out, soul.as_deref().filter(|s| !s.is_empty()).unwrap_or(DEFAULT_IDENTITY));
    if !inputs.tool_names.is_empty() {
        let mut guidance = String::from(TOOL_GUIDANCE);
        for (tool, line) in CAPABILITY_GUIDANCE {
            if inputs.tool_names.contains(tool) {
                guidance.push(' ');
                guidance.push_str(line);
            }
        }
        if needs_tool_enforcement(inputs.model) {
            guidance.push(' ');
            guidance.push_str(TOOL_ENFORCEMENT);
        }
        section(&mut out, &guidance);
    }
    if let Some(custom) = inputs.custom_system {
        section(&mut out, custom);
    }
    // Rendered blocks with their own headers (`memory::render_block`).
    for block in [inputs.memory, inputs.user_profile].into_iter().flatten() {
        section(&mut out, block);
    }
    if !inputs.skills.is_empty() {
        let mut index = String::from("## Skills\n<available_skills>\n");
        let mut skills: Vec<&SkillEntry> = inputs.skills.iter().collect();
        skills.sort_by(|a, b| (&a.category, &a.name).cmp(&(&b.category, &b.name)));
        let mut current = None;
        for s in skills {
            if current != Some(&s.category) {
                index.push_str(&format!("{}:\n", s.category));
                current = Some(&s.category);
            }
            index.push_str(&format!("  - {}: {}\n", s.name, s.description));
        }
        index.push_str("</available_skills>");
        section(&mut out, &index);
    }
    if let Some(file) = inputs.context_file {
        section(
            &mut out,
            &format!("# Project Context\nFollow this project context file.\n\n## {}\n{}", file.name, file.content),
        );
    }
    section(&mut out, &format!("Current date: {}.", inputs.today.format("%Y-%m-%d")));
    if let Some(hint) = inputs.source.and_then(platform_hint) {
        section(&mut out, hint);
    }
    out
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
