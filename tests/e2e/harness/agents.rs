//! Agents a test makes its own way (the scripted model's agent with its fields changed), and
//! the keys in a tenant's credential pools.

use hermes_core::{AgentId, TenantId};
use hermes_store::{Agent, NewAgent, NewCredential, PooledCredential, SecretBox};

use super::TestEnv;

impl TestEnv {
    /// An agent `name` asking for `model` on the scripted model's server, with no key and no
    /// tools: for a test to change what it is about, then [`add_agent`](Self::add_agent).
    pub fn new_agent(&self, name: &str, model: &str) -> NewAgent {
        NewAgent {
            name: name.into(),
            model: model.into(),
            provider_base_url: self.llm.base_url(),
            provider_key: None,
            soul: None,
            system_message: None,
            toolsets: vec![],
            provider_key_hosts: vec![],
            fallbacks: vec![],
            api_mode: None,
            auxiliary: None,
            context_window: None,
        }
    }

    /// What [`agent`](Self::agent) makes: `name` on the scripted model with the terminal toolset.
    pub fn terminal_agent(&self, name: &str) -> NewAgent {
        NewAgent { toolsets: vec!["terminal".into()], ..self.new_agent(name, "scripted-model") }
    }

    /// Stores `new` as `tenant`'s (a provider key sealed with the environment's master key).
    pub async fn add_agent(&self, tenant: TenantId, new: NewAgent) -> Agent {
        self.store.agents().create_agent(tenant, new, Some(&self.secrets())).await.unwrap()
    }

    /// Gives `agent` exactly these toolsets.
    pub async fn set_toolsets(&self, agent: AgentId, toolsets: &[&str]) {
        sqlx::query("UPDATE agents SET toolsets = $1 WHERE id = $2")
            .bind(toolsets)
            .bind(agent.as_uuid())
            .execute(&self.db)
            .await
            .unwrap();
    }

    /// Adds `secret`, labelled `label`, to `tenant`'s credential pool `pool`, to be sent only
    /// to `host`.
    pub async fn pool_key(
        &self,
        tenant: TenantId,
        pool: &str,
        label: &str,
        secret: &str,
        host: &str,
    ) -> PooledCredential {
        let key = NewCredential {
            provider: pool.into(),
            label: label.into(),
            secret: secret.into(),
            priority: 0,
            allowed_hosts: vec![host.into()],
        };
        self.store.tenancy().add_credential(tenant, key, &self.secrets()).await.unwrap()
    }

    /// Adds `secret` to `tenant`'s credential pool `pool`, allowed only for loopback (where the
    /// scripted services are): a team's own key.
    pub async fn team_key(&self, tenant: TenantId, pool: &str, secret: &str) {
        self.pool_key(tenant, pool, "team", secret, "127.0.0.1").await;
    }

    /// The box the environment's master key opens (what seals keys and credentials).
    pub fn secrets(&self) -> SecretBox {
        SecretBox::from_config(self.config.secrets.master_key.as_deref()).unwrap().expect("a master key")
    }
}
