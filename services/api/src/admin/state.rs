//! What every admin handler is given.

use std::sync::Arc;
use std::time::Duration;

use hermes_config::HermesConfig;
use hermes_store::Store;

use crate::admin::signing::SessionKeys;

/// What the admin handlers are given.
pub(crate) type AdminState = hermes_http::StateHandle<Shared>;

pub(crate) struct Shared {
    pub config: Arc<HermesConfig>,
    pub store: Store,
    pub limiter: hermes_cache::RateLimiter,
    pub secrets: Option<hermes_store::SecretBox>,
    /// The provider-key pools' live state (health).
    pub pools: hermes_cache::KeyPools,
    /// Stops running turns (their workers listen).
    pub cancels: hermes_cache::CancelBus,
    /// Redis, for what a deleted tenant leaves there.
    pub cache: hermes_cache::Cache,
    /// Tenant exports this pod writes at once (each holds a database connection while its
    /// reader reads).
    pub exports: Arc<tokio::sync::Semaphore>,
    /// The workers' sandbox reports, for the operators' view.
    pub census: hermes_cache::SandboxCensus,
    /// This pod's event hub, for watching turns live (`None`: the live view reads Postgres).
    pub events: Option<hermes_queue::EventHub>,
    /// Tells workers a session has work (`None`: the reaper notices within its interval).
    pub broker: Option<hermes_queue::Broker>,
    /// `None`: no session keys and no master key, so nobody can sign in to the console
    /// (admin tokens still work).
    pub keys: Option<SessionKeys>,
    /// Where links point: `admin.public_url`, or the API's own address.
    pub public_url: String,
    /// Talks to chat platforms when binding bots.
    pub http: reqwest::Client,
    /// The installation's identity provider, when one is configured.
    pub oidc: Option<Arc<crate::admin::oidc_client::Oidc>>,
    /// Tenants' own identity providers, their discovery kept a while.
    pub tenant_oidc: crate::admin::oidc_tenants::TenantProviders,
    /// The reverse proxies whose `X-Forwarded-For` is believed.
    pub proxies: crate::admin::client_address::TrustedProxies,
    /// Bounds the password hashing that sign-ins do.
    pub passwords: crate::admin::password::PasswordGate,
}

impl Shared {
    /// The tenant's agent `raw` names, by id or by name; 404 `not_found` otherwise.
    pub(crate) async fn agent(
        &self,
        tenant: hermes_core::TenantId,
        raw: &str,
    ) -> Result<hermes_store::Agent, hermes_http::ApiError> {
        hermes_ops::agent(&self.store, tenant, raw).await.map_err(crate::admin::errors::ops_error)
    }

    /// The outbound policy for URLs a tenant gives (a model provider's): public addresses, or
    /// the hosts the operator trusts.
    pub(crate) fn outbound_policy(&self) -> hermes_net_policy::outbound::Policy {
        hermes_net_policy::outbound::Policy::trusting(self.config.outbound.trusted(&self.config.platforms))
    }

    /// Where an agent's HTTP MCP server may be: public addresses, and the hosts the operator
    /// allowed for MCP (`mcp.allow_private_hosts`).
    pub(crate) fn mcp_policy(&self) -> hermes_net_policy::outbound::Policy {
        hermes_net_policy::outbound::Policy::trusting(&self.config.mcp.allow_private_hosts)
    }

    pub(crate) fn session_lifetime(&self) -> Duration {
        Duration::from_secs(self.config.admin.session_minutes.max(1) * 60)
    }

    pub(crate) fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.config.admin.idle_minutes.max(1) * 60)
    }

    pub(crate) fn max_session(&self) -> Duration {
        Duration::from_secs(self.config.admin.max_session_hours.max(1) * 3600)
    }

    /// Whether the session cookie is marked `Secure`: always, except for a console reached
    /// over plain `http://` at an address other than loopback (browsers treat loopback as
    /// secure and keep a `Secure` cookie there; elsewhere they would drop it).
    pub(crate) fn secure_cookie(&self) -> bool {
        match self.public_url.strip_prefix("http://") {
            None => true,
            Some(rest) => ["localhost", "127.", "[::1]"].iter().any(|host| rest.starts_with(host)),
        }
    }
}
