//! The admin plane, served by the `api` role: people and their roles in tenants, console
//! sign-in (local passwords, one-time links, invitations), admin tokens for automation, the
//! audit log, the `/admin/v1` API, and the `/console` web UI built on it.
//!
//! Who may do what is decided in one place, `hermes_core::access`; who is calling, in
//! [`caller`]. Every write is recorded in the audit log with its actor, request and address.

mod approvals;
mod audit;
mod automation;
mod bots;
mod budgets;
mod caller;
mod client_address;
mod cluster;
mod console;
mod conversations;
mod credentials;
mod errors;
mod goals;
mod invitations;
mod live;
mod mcp;
mod members;
mod memory;
mod oidc;
mod oidc_client;
mod oidc_person;
mod oidc_tenants;
mod openapi;
pub mod password;
mod secrets;
mod session;
mod shown;
pub mod signing;
mod skills;
mod sso;
pub(crate) mod state;
mod tenant_call;
mod tenant_data;
mod tenants;
mod tokens;
mod usage;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post, put};

use hermes_config::HermesConfig;
use hermes_store::Store;

pub use signing::{KeyError, SessionKeys};

/// Why the admin plane cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Keys(#[from] KeyError),
    #[error("cannot build the identity provider's HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Proxies(#[from] client_address::BadProxy),
}

use crate::admin::state::{AdminState, Shared};
use crate::state::RoleState;

/// What the admin plane needs, built by the composition root.
#[derive(Clone)]
pub struct AdminContext {
    pub config: Arc<HermesConfig>,
    /// Seals provider keys (`None` without `secrets.master_key`: agents get no stored key).
    pub secrets: Option<hermes_store::SecretBox>,
    pub store: Store,
    pub cache: hermes_cache::Cache,
    /// The api pod's event hub, for the live view of running turns.
    pub events: Option<hermes_queue::EventHub>,
    /// Tells workers a session has work again (an answered approval).
    pub broker: Option<hermes_queue::Broker>,
}

/// The client that talks to chat platforms on a tenant's behalf: the outbound policy, with the
/// platforms' hosts the operator configured trusted (a self-hosted Bot API may be private).
pub fn platform_client(config: &HermesConfig) -> Result<reqwest::Client, reqwest::Error> {
    let policy = hermes_net_policy::outbound::Policy::trusting(config.outbound.trusted(&config.platforms));
    let (connect, total) = (std::time::Duration::from_secs(10), std::time::Duration::from_secs(30));
    hermes_net_policy::outbound::client_for(Arc::new(policy), connect, total)
}

/// The admin plane's state. Fails when `admin.session_keys` cannot be used.
pub(crate) fn state(ctx: AdminContext) -> Result<AdminState, StartError> {
    let keys = SessionKeys::from_config(&ctx.config)?;
    let oidc = oidc_client::Oidc::from_config(&ctx.config)?;
    if keys.is_none() {
        tracing::warn!(
            "console sign-in is off: set admin.session_keys or secrets.master_key (admin tokens still work)"
        );
    }
    Ok(AdminState::new(Shared {
        public_url: ctx.config.console_url(),
        http: platform_client(&ctx.config)?,
        oidc,
        tenant_oidc: oidc_tenants::TenantProviders::default(),
        proxies: client_address::TrustedProxies::parse(&ctx.config.admin.trusted_proxies)?,
        passwords: password::PasswordGate::for_this_machine(),
        limiter: ctx.cache.rate_limiter(),
        cancels: ctx.cache.cancel_bus(),
        census: ctx.cache.sandbox_census(),
        cache: ctx.cache.clone(),
        exports: std::sync::Arc::new(tokio::sync::Semaphore::new(tenant_data::EXPORTS_AT_ONCE)),
        pools: ctx.cache.key_pools(),
        secrets: ctx.secrets,
        events: ctx.events,
        broker: ctx.broker,
        config: ctx.config,
        store: ctx.store,
        keys,
    }))
}

/// The `/admin/v1` and `/console` routes, every request signed in by `caller::authenticate`.
pub(crate) fn routes(state: &AdminState) -> Router<RoleState> {
    Router::new()
        .route("/admin/v1/sign-in", post(session::sign_in))
        .route("/admin/v1/sign-in/link", post(session::sign_in_with_link))
        .route("/admin/v1/sign-in/options", get(oidc::options))
        .route("/admin/v1/oidc/start", get(oidc::start))
        .route("/admin/v1/oidc/callback", get(oidc::callback))
        .route("/admin/v1/sign-out", post(session::sign_out))
        .route("/admin/v1/me", get(session::me))
        .route("/admin/v1/me/password", put(session::set_password))
        .route("/admin/v1/invitations/accept", post(invitations::accept))
        .route("/admin/v1/tenants", get(tenants::list).post(tenants::create))
        .route("/admin/v1/tokens", post(tenants::create_operator_token))
        .route("/admin/v1/cluster", get(cluster::cluster))
        .route("/admin/v1/tenants/{tenant}", get(tenants::get).delete(tenant_data::delete))
        .route("/admin/v1/tenants/{tenant}/export", get(tenant_data::export))
        .route("/admin/v1/tenants/{tenant}/quotas", put(tenants::set_quotas))
        .route("/admin/v1/tenants/{tenant}/sso", get(sso::get).put(sso::set).delete(sso::remove))
        .route("/admin/v1/tenants/{tenant}/members", get(members::list))
        .route(
            "/admin/v1/tenants/{tenant}/members/{person}",
            axum::routing::patch(members::change_role).delete(members::remove),
        )
        .route("/admin/v1/tenants/{tenant}/invitations", get(members::invitations).post(members::invite))
        .route("/admin/v1/tenants/{tenant}/invitations/{id}", axum::routing::delete(members::revoke_invitation))
        .route("/admin/v1/tenants/{tenant}/tokens", get(tokens::list_tokens).post(tokens::create_token))
        .route("/admin/v1/tenants/{tenant}/tokens/{id}", axum::routing::delete(tokens::revoke_token))
        .route("/admin/v1/tenants/{tenant}/keys", get(tokens::list_keys).post(tokens::create_key))
        .route("/admin/v1/tenants/{tenant}/keys/{id}", axum::routing::delete(tokens::revoke_key))
        .route("/admin/v1/tenants/{tenant}/agents", get(conversations::agents).post(conversations::create_agent))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}", axum::routing::patch(conversations::edit_agent))
        .route("/admin/v1/tenants/{tenant}/sandbox-images", get(conversations::sandbox_images))
        .route("/admin/v1/tenants/{tenant}/toolsets", get(conversations::toolsets))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/memory", get(memory::view).put(memory::rewrite))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers", get(mcp::list))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}", put(mcp::set).delete(mcp::remove))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/secrets", get(secrets::list))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/secrets/{name}", put(secrets::bind).delete(secrets::unbind))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/skills", get(skills::list))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/skills/{name}", get(skills::get))
        .route("/admin/v1/tenants/{tenant}/agents/{agent}/skills/{name}/{action}", post(skills::toggle))
        .route("/admin/v1/tenants/{tenant}/skills/{name}", put(skills::upload))
        .route("/admin/v1/tenants/{tenant}/sessions", get(conversations::sessions))
        .route(
            "/admin/v1/tenants/{tenant}/sessions/{id}",
            get(conversations::transcript).delete(conversations::delete_session),
        )
        .route("/admin/v1/tenants/{tenant}/sessions/{id}/export", get(conversations::export))
        .route(
            "/admin/v1/tenants/{tenant}/sessions/{id}/goal",
            get(goals::get).put(goals::set).patch(goals::change).delete(goals::delete),
        )
        .route("/admin/v1/tenants/{tenant}/turns", get(live::open_turns))
        .route("/admin/v1/tenants/{tenant}/turns/{id}/stop", post(live::stop))
        .route("/admin/v1/tenants/{tenant}/turns/{id}/events", get(live::events))
        .route("/admin/v1/tenants/{tenant}/channels", get(bots::list).post(bots::create))
        .route("/admin/v1/tenants/{tenant}/channels/{id}", axum::routing::delete(bots::delete).patch(bots::update))
        .route("/admin/v1/tenants/{tenant}/channels/{id}/pairings", get(bots::pairings))
        .route("/admin/v1/tenants/{tenant}/channels/{id}/pairings/approve", post(bots::approve))
        .route("/admin/v1/tenants/{tenant}/usage", get(usage::usage))
        .route("/admin/v1/tenants/{tenant}/budgets", get(budgets::list))
        .route("/admin/v1/tenants/{tenant}/budgets/{scope}/{period}", put(budgets::set).delete(budgets::remove))
        .route("/admin/v1/tenants/{tenant}/credentials", get(credentials::list).post(credentials::add))
        .route("/admin/v1/tenants/{tenant}/credentials/{id}", axum::routing::delete(credentials::remove))
        .route("/admin/v1/tenants/{tenant}/credentials/pools/{provider}", put(credentials::strategy))
        .route("/admin/v1/tenants/{tenant}/cron", get(automation::jobs))
        .route("/admin/v1/tenants/{tenant}/cron/{id}/runs", get(automation::runs))
        .route("/admin/v1/tenants/{tenant}/cron/{id}/{action}", post(automation::act))
        .route("/admin/v1/tenants/{tenant}/hooks", get(automation::hooks))
        .route("/admin/v1/tenants/{tenant}/hooks/{id}/deliveries", get(automation::deliveries))
        .route("/admin/v1/tenants/{tenant}/hooks/{id}/ping", post(automation::ping))
        .route("/admin/v1/tenants/{tenant}/hooks/{id}/deliveries/{delivery}/resend", post(automation::resend))
        .route("/admin/v1/tenants/{tenant}/approvals", get(approvals::waiting))
        .route("/admin/v1/tenants/{tenant}/approvals/{id}", post(approvals::answer))
        .route("/admin/v1/tenants/{tenant}/audit", get(audit::tenant_audit))
        .route("/admin/v1/audit", get(audit::installation_audit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), caller::authenticate))
        .merge(console::router())
}

/// The admin API's OpenAPI paths and components, for the api role's `/openapi.json`. Every
/// operation that names no security of its own takes an admin token or a console session.
pub fn openapi() -> utoipa::openapi::OpenApi {
    use utoipa::OpenApi;
    use utoipa::openapi::security::SecurityRequirement;
    let mut doc = openapi::AdminDoc::openapi();
    let either = vec![
        SecurityRequirement::new("admin_token", Vec::<String>::new()),
        SecurityRequirement::new("console_session", Vec::<String>::new()),
    ];
    for item in doc.paths.paths.values_mut() {
        for op in
            [&mut item.get, &mut item.post, &mut item.put, &mut item.patch, &mut item.delete].into_iter().flatten()
        {
            if op.security.is_none() {
                op.security = Some(either.clone());
            }
        }
    }
    doc
}
