//! The toolsets an agent can enable, and their tools: what `GET /v1/toolsets` and `hermesctl`
//! describe. The tools themselves live in `hermes_toolbox` and the worker; a test there keeps
//! this list in step with them.

/// A toolset: its name (in `agents.toolsets`), what it gives the agent, and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolset {
    pub name: &'static str,
    pub description: &'static str,
    pub tools: &'static [&'static str],
}

pub const TOOLSETS: &[Toolset] = &[
    Toolset {
        name: "terminal",
        description: "Shell commands in the agent's own sandbox, in the foreground or as background processes.",
        tools: &["terminal", "process"],
    },
    Toolset {
        name: "file",
        description: "Read, write, patch and search files in the sandbox's workspace.",
        tools: &["read_file", "write_file", "patch", "search_files"],
    },
    Toolset {
        name: "code_execution",
        description: "Python scripts in the sandbox that call the agent's tools over a local RPC.",
        tools: &["execute_code"],
    },
    Toolset { name: "todo", description: "A task list for the session.", tools: &["todo"] },
    Toolset {
        name: "memory",
        description: "Curated memory: the agent's notes and each user's profile, shown in every session.",
        tools: &["memory"],
    },
    Toolset {
        name: "session_search",
        description: "Full-text search over the user's earlier conversations.",
        tools: &["session_search"],
    },
    Toolset {
        name: "skills",
        description: "Load skills (procedures) and write new ones.",
        tools: &["skills_list", "skill_view", "skill_manage"],
    },
    Toolset { name: "clarify", description: "Ask the user a question and wait for the answer.", tools: &["clarify"] },
    Toolset {
        name: "delegation",
        description: "Hand self-contained tasks to sub-agents that work in parallel.",
        tools: &["delegate_task"],
    },
    Toolset {
        name: "messaging",
        description: "Post to other chats through the team's bots (never inside a cron run).",
        tools: &["send_message"],
    },
    Toolset {
        name: "cronjob",
        description: "Schedule runs of the agent (never available inside a cron run).",
        tools: &["cronjob"],
    },
];
