//! Where most tests of the API start: a fresh environment whose tenant `acme` has one agent on
//! the scripted model, and an API key for it.

use hermes_core::TenantId;
use hermes_store::Agent;

use super::TestEnv;

/// Tenant acme in a fresh environment (every role in-process), its one agent and its key.
pub struct Team {
    pub env: TestEnv,
    pub tenant: TenantId,
    pub agent: Agent,
    pub key: String,
}

impl Team {
    /// Acme with agent `agent` (the terminal toolset, as [`TestEnv::agent`] makes it).
    pub async fn acme(agent: &str) -> Self {
        let env = TestEnv::start().await;
        let (tenant, agent, key) = env.tenant("acme", agent).await;
        Self { env, tenant, agent, key }
    }
}
