//! Where most tests of the API start: a fresh environment whose tenant `acme` has one agent on
//! the scripted model, and an API key for it.

use hermes_core::TenantId;
use hermes_store::Agent;

use super::{Roles, TestEnv};

/// Tenant acme in a fresh environment, its one agent and its key.
pub struct Team {
    pub env: TestEnv,
    pub tenant: TenantId,
    pub agent: Agent,
    pub key: String,
}

impl Team {
    /// Acme with agent `agent` (the terminal toolset, as [`TestEnv::agent`] makes it).
    pub async fn acme(agent: &str) -> Self {
        Self::start(Roles::default(), agent).await
    }

    /// [`acme`](Self::acme) in an environment running `roles` in-process.
    pub async fn start(roles: Roles, agent: &str) -> Self {
        let env = TestEnv::start_roles(roles).await;
        let (tenant, agent, key) = env.tenant("acme", agent).await;
        Self { env, tenant, agent, key }
    }
}

impl TestEnv {
    /// The texts of `session`'s stored messages, in order.
    pub async fn session_texts(&self, tenant: TenantId, session: hermes_core::SessionId) -> Vec<String> {
        let messages = self.store.conversations().session_messages(tenant, session).await.unwrap();
        messages.into_iter().map(|m| m.message.text()).collect()
    }

    /// A fresh environment with [`two_tenants`](Self::two_tenants) in it, and their keys.
    pub async fn with_two_tenants(names: [&str; 2], agent: &str) -> (Self, [String; 2]) {
        let env = Self::start().await;
        let keys = env.two_tenants(names, agent).await;
        (env, keys)
    }
}
