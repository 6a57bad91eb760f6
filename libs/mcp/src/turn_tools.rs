//! The agent's MCP tools for one turn: each enabled server's listed tools (through its
//! filter) and wrappers, named. Apart from the pool because it builds on both the sessions
//! (`pool.rs`) and the tools (`tool.rs`), and the tools call back into the pool for their
//! session.

use std::sync::Arc;

use hermes_core::{AgentId, TenantId};
use hermes_tools::Tool;

use crate::pool::McpServers;
use crate::server_key::ServerKey;
use crate::spec::McpServerSpec;
use crate::tool::{McpTool, Offer, Server, TurnHooks};

/// A server that could not be offered this turn, and why (for the operator's log and the
/// model's note).
#[derive(Debug, Clone)]
pub struct Unavailable {
    pub server: String,
    pub reason: String,
}

impl McpServers {
    /// The agent's tools from its servers `specs` (name, configuration), for one turn: each
    /// enabled server's tools through its filter, and its wrappers, each under a name of its
    /// own (see [`crate::naming`]). A server that cannot be reached is left out and reported.
    /// `hooks.sampler` answers the sampling requests of servers that have sampling on while
    /// this turn calls them; `hooks.keeper` keeps the pictures their results carry.
    pub async fn tools(
        self: &Arc<Self>,
        tenant: TenantId,
        agent: AgentId,
        specs: Vec<(String, McpServerSpec)>,
        hooks: TurnHooks,
    ) -> (Vec<Arc<dyn Tool>>, Vec<Unavailable>) {
        let listed = specs.into_iter().filter(|(_, spec)| spec.enabled).map(|(name, spec)| {
            let key = ServerKey { tenant, agent, name };
            async move {
                let listed = self.listed(&key, &spec).await;
                (key, spec, listed)
            }
        });
        let mut offers: Vec<(Arc<Server>, Offer)> = Vec::new();
        let mut unavailable = Vec::new();
        for (key, spec, listed) in futures_util::future::join_all(listed).await {
            let (listed, offered) = match listed {
                Ok(found) => found,
                Err(e) => {
                    unavailable.push(Unavailable { server: key.name.clone(), reason: e.to_string() });
                    continue;
                }
            };
            let Ok(filter) = spec.filter() else { continue };
            let (resources, prompts) =
                (offered.resources && spec.tools.resources, offered.prompts && spec.tools.prompts);
            let sampler = hooks.sampler.clone().filter(|_| spec.sampling.enabled);
            let server = Arc::new(Server { pool: self.clone(), key, spec, sampler, keeper: hooks.keeper.clone() });
            for tool in listed.into_iter().filter(|t| filter.allows(&t.name)) {
                offers.push((server.clone(), Offer::Tool(tool)));
            }
            for wrapper in Offer::wrappers(resources, prompts) {
                offers.push((server.clone(), wrapper));
            }
        }
        (named(offers), unavailable)
    }
}

/// The offers as tools, each under the name [`crate::naming::assign`] gives it; one that gets
/// none is left out, with a warning.
fn named(offers: Vec<(Arc<Server>, Offer)>) -> Vec<Arc<dyn Tool>> {
    let names = {
        let wanted: Vec<(&str, &str)> = offers.iter().map(|(s, o)| (s.key.name.as_str(), o.suffix())).collect();
        crate::naming::assign(&wanted)
    };
    let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(offers.len());
    for ((server, offer), given) in offers.into_iter().zip(names) {
        match given {
            Some(given) => tools.push(Arc::new(McpTool::new(server, given.name, offer, given.tagged))),
            None => tracing::warn!(tenant = %server.key.tenant, server = %server.key.name, tool = offer.suffix(),
                "an MCP tool's name is another tool's too, even tagged; neither is offered"),
        }
    }
    tools
}
