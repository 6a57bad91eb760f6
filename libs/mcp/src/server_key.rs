//! [`ServerKey`], which server of whose agent. Its own file because the pool keys its
//! sessions by it, a session reports under it and a tool finds its session again by it.

use hermes_core::{AgentId, TenantId};

/// Which server of whose agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerKey {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub name: String,
}
