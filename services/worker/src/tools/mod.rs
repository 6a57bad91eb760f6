//! The toolkit: everything the per-turn tools are made from, built once when the worker starts
//! (`build::toolkit`) and handed to each tool's registrar, so a tool sees the services it
//! uses and not the whole worker; `registry` assembles each turn's tools from it.

pub(crate) mod browser;
pub(crate) mod build;
pub(crate) mod cron;
pub(crate) mod delegate;
pub(crate) mod delegate_background;
pub(crate) mod image;
pub(crate) mod mcp;
pub(crate) mod mcp_sampling;
pub(crate) mod memory;
pub(crate) mod registry;
pub(crate) mod search;
pub(crate) mod send_message;
pub(crate) mod skill_manage;
pub(crate) mod skills;
pub(crate) mod speech;
pub(crate) mod todo;
pub(crate) mod vision;
pub(crate) mod web;

use std::sync::Arc;

use hermes_cache::{Slots, WindowCounters};
use hermes_sandbox::Sandboxes;
use hermes_store::{SecretBox, Store};
use hermes_tools::{ResultSpill, ToolRegistry};

use crate::skills::SkillCatalog;
use crate::tools::delegate::Children;
use crate::tools::vision::ImageSources;

/// The configured limits the tools keep.
pub(crate) struct ToolLimits {
    /// Whether a turn starts its agent's sandbox before the model asks for it.
    pub prewarm: bool,
    pub exec_timeout_seconds: u64,
    /// MEMORY's and USER's caps, in characters.
    pub memory_chars: usize,
    pub user_chars: usize,
    /// Delegated children running at once per tenant, and how deep delegation goes.
    pub children_per_tenant: u32,
    pub delegation_max_depth: u32,
}

/// Shared by every turn's tools.
pub(crate) struct Toolkit {
    /// The built-in tools every turn chooses from.
    pub builtin: ToolRegistry,
    pub store: Store,
    pub sandboxes: Arc<dyn Sandboxes>,
    pub secrets: Option<SecretBox>,
    pub limits: ToolLimits,
    pub child_slots: Slots,
    /// Where background children's sessions are signalled.
    pub broker: hermes_queue::Broker,
    /// Rate windows in Redis (MCP sampling's).
    pub window_counters: WindowCounters,
    /// Each agent's skills, cached by index version.
    pub skills: Arc<SkillCatalog>,
    /// The web toolset's services (`None` when their clients could not be built).
    pub web: Option<Arc<hermes_web::Web>>,
    /// Each tenant's daily web allowance.
    pub web_allowance: Arc<dyn hermes_web::Allowance>,
    /// Live sessions with agents' MCP servers, kept between turns (`None` when the client
    /// could not be built).
    pub mcp: Option<Arc<hermes_mcp::McpServers>>,
    /// The `image_generate` tool's service (`None` when its clients could not be built).
    pub image_gen: Option<Arc<hermes_media::ImageGenerator>>,
    /// Speech: `text_to_speech` and voice replies (`None`: turned off, or no usable provider).
    pub speaker: Option<Arc<hermes_media::Speaker>>,
    /// The conversations' browsers, kept between turns.
    pub browsers: Option<Arc<hermes_browser::Browsers>>,
    /// Team secrets in sandboxes: placeholders and what the egress proxy swaps in (`None`: the
    /// proxy has no trusted roots for its onward TLS).
    pub sandbox_secrets: Option<Arc<crate::sandbox_secrets::SandboxSecrets>>,
}

impl Toolkit {
    /// Where `vision_analyze` and the pictures people send are read from.
    pub(crate) fn image_sources(&self) -> ImageSources {
        ImageSources { web: self.web.clone(), sandboxes: self.sandboxes.clone() }
    }

    /// What `delegate_task` runs its children with.
    pub(crate) fn children(&self) -> Children {
        Children {
            store: self.store.clone(),
            slots: self.child_slots.clone(),
            cap: self.limits.children_per_tenant,
            max_depth: self.limits.delegation_max_depth,
            broker: self.broker.clone(),
            sandboxes: self.sandboxes.clone(),
        }
    }

    /// Where long results are saved for `read_file` to page through, when `tools` (this
    /// turn's, as registered so far) has it.
    pub(crate) fn spill_for(&self, tools: &ToolRegistry) -> Option<Arc<dyn ResultSpill>> {
        tools
            .names()
            .contains(&"read_file")
            .then(|| Arc::new(hermes_toolbox::SandboxSpill::new(self.sandboxes.clone())) as Arc<dyn ResultSpill>)
    }
}
