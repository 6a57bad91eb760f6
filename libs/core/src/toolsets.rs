//! The toolsets an agent can enable, and their tools: what `GET /v1/toolsets` and `hermesctl`
//! describe. The tools themselves live in `hermes_toolbox` and the worker; a test there keeps
//! this list in step with them.

use crate::kinds::vocabulary;

vocabulary! {
    /// A toolset's name, as `agents.toolsets` and cron jobs' `enabled_toolsets` store it.
    ToolsetName ("toolset") {
        Terminal = "terminal",
        File = "file",
        CodeExecution = "code_execution",
        Todo = "todo",
        Memory = "memory",
        SessionSearch = "session_search",
        Skills = "skills",
        Clarify = "clarify",
        Delegation = "delegation",
        Messaging = "messaging",
        Cronjob = "cronjob",
        Web = "web",
        Mcp = "mcp",
        Vision = "vision",
        ImageGen = "image_gen",
        Tts = "tts",
        Browser = "browser",
    }
}

impl ToolsetName {
    /// What it gives the agent, and its tools.
    pub fn toolset(self) -> &'static Toolset {
        // TOOLSETS has one entry per name, in declaration order (a test checks).
        &TOOLSETS[self as usize]
    }

    /// Whether a stored list of toolset names enables this one.
    pub fn enabled_in<S: AsRef<str>>(self, names: &[S]) -> bool {
        names.iter().any(|n| n.as_ref() == self.as_str())
    }

    /// The toolsets that need the agent's sandbox.
    pub const SANDBOXED: [ToolsetName; 4] =
        [ToolsetName::Terminal, ToolsetName::File, ToolsetName::CodeExecution, ToolsetName::Browser];

    /// The service of the operator's this toolset needs to work (`None`: nothing more than the
    /// agent's own model and sandbox).
    pub const fn needs(self) -> Option<OperatorService> {
        match self {
            ToolsetName::Web => Some(OperatorService::WebSearch),
            ToolsetName::ImageGen => Some(OperatorService::ImageGen),
            ToolsetName::Tts => Some(OperatorService::Tts),
            ToolsetName::Browser => Some(OperatorService::BrowserImage),
            _ => None,
        }
    }
}

vocabulary! {
    /// What an optional toolset needs the operator to set up on the installation.
    OperatorService ("operator service") {
        /// A web search service with the operator's credentials (`[web]`: SearXNG, Firecrawl,
        /// Tavily, Exa or Brave).
        WebSearch = "web_search",
        /// An image generation service (`[image_gen]`: FAL.ai or an OpenAI-compatible API).
        ImageGen = "image_gen",
        /// A text-to-speech service that can be called (`[tts]`).
        Tts = "tts",
        /// A sandbox image with the browser in it (`browser.in_sandbox_image`).
        BrowserImage = "browser_image",
    }
}

/// A toolset: its name (in `agents.toolsets`), what it gives the agent, and its tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Toolset {
    pub id: ToolsetName,
    pub description: &'static str,
    pub tools: &'static [&'static str],
}

impl Toolset {
    pub const fn name(&self) -> &'static str {
        self.id.as_str()
    }
}

pub const TOOLSETS: &[Toolset] = &[
    Toolset {
        id: ToolsetName::Terminal,
        description: "Shell commands in the agent's own sandbox, in the foreground or as background processes.",
        tools: &["terminal", "process"],
    },
    Toolset {
        id: ToolsetName::File,
        description: "Read, write, patch and search files in the sandbox's workspace, and unpack archives.",
        tools: &["read_file", "write_file", "patch", "search_files", "unpack_archive"],
    },
    Toolset {
        id: ToolsetName::CodeExecution,
        description: "Python scripts in the sandbox that call the agent's tools over a local RPC.",
        tools: &["execute_code"],
    },
    Toolset { id: ToolsetName::Todo, description: "A task list for the session.", tools: &["todo"] },
    Toolset {
        id: ToolsetName::Memory,
        description: "Curated memory: the agent's notes and each user's profile, shown in every session.",
        tools: &["memory"],
    },
    Toolset {
        id: ToolsetName::SessionSearch,
        description: "Full-text search over the user's earlier conversations.",
        tools: &["session_search"],
    },
    Toolset {
        id: ToolsetName::Skills,
        description: "Load skills (procedures) and write new ones.",
        tools: &["skills_list", "skill_view", "skill_manage"],
    },
    Toolset {
        id: ToolsetName::Clarify,
        description: "Ask the user a question and wait for the answer.",
        tools: &["clarify"],
    },
    Toolset {
        id: ToolsetName::Delegation,
        description: "Hand self-contained tasks to sub-agents that work in parallel.",
        tools: &["delegate_task"],
    },
    Toolset {
        id: ToolsetName::Messaging,
        description: "Post to other chats through the team's bots (never inside a cron run).",
        tools: &["send_message"],
    },
    Toolset {
        id: ToolsetName::Cronjob,
        description: "Schedule runs of the agent (never available inside a cron run).",
        tools: &["cronjob"],
    },
    Toolset {
        id: ToolsetName::Web,
        description: "Search the web and read pages (Markdown, PDFs as text), within the team's daily quota.",
        tools: &["web_search", "web_extract"],
    },
    Toolset {
        id: ToolsetName::Mcp,
        description: "The tools of the agent's MCP servers (mcp_<server>_<tool>), as each server lists them.",
        tools: &[],
    },
    Toolset {
        id: ToolsetName::Vision,
        description: "Look at an image (a URL, a workspace file, a data URL) with a vision model and answer a question about it.",
        tools: &["vision_analyze"],
    },
    Toolset {
        id: ToolsetName::ImageGen,
        description: "Generate an image from a prompt (the installation's FAL.ai or OpenAI-compatible image service) and show it in the chat.",
        tools: &["image_generate"],
    },
    Toolset {
        id: ToolsetName::Tts,
        description: "Speak text aloud (Edge TTS, OpenAI or ElevenLabs, as the installation is set up); chats get a voice message.",
        tools: &["text_to_speech"],
    },
    Toolset {
        id: ToolsetName::Browser,
        description: "A headless Chromium in the agent's sandbox: open pages, read them as an accessibility snapshot, click, type, answer dialogs, screenshots.",
        tools: &[
            "browser_navigate",
            "browser_snapshot",
            "browser_click",
            "browser_type",
            "browser_scroll",
            "browser_press",
            "browser_back",
            "browser_get_images",
            "browser_console",
            "browser_dialog",
            "browser_vision",
            "browser_cdp",
        ],
    },
];

/// The toolsets `asked` (all when `None`) that `allowed` keeps: what a job made by someone
/// kept to `allowed` runs with (a narrowed API key, a chat turn's limits).
pub fn within(asked: Option<Vec<String>>, allowed: &[String]) -> Vec<String> {
    match asked {
        Some(asked) => asked.into_iter().filter(|t| allowed.contains(t)).collect(),
        None => allowed.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_toolset_name_has_its_entry_in_order() {
        assert_eq!(TOOLSETS.len(), ToolsetName::ALL.len());
        for name in ToolsetName::ALL {
            assert_eq!(name.toolset().id, *name);
        }
    }
}
