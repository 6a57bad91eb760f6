//! The admin API's part of `/openapi.json` (the api role merges it into its own document).

use utoipa::OpenApi;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};

struct AdminSecurity;

impl utoipa::Modify for AdminSecurity {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        let token =
            HttpBuilder::new().scheme(HttpAuthScheme::Bearer).description(Some("An admin token (hat_...)")).build();
        components.add_security_scheme("admin_token", SecurityScheme::Http(token));
        let cookie = ApiKey::Cookie(ApiKeyValue::with_description(
            crate::caller::COOKIE,
            "A console session (with X-CSRF-Token on every request that changes something)",
        ));
        components.add_security_scheme("console_session", SecurityScheme::ApiKey(cookie));
    }
}

#[derive(OpenApi)]
#[openapi(
    modifiers(&AdminSecurity),
    security(("admin_token" = []), ("console_session" = [])),
    paths(
        crate::session::sign_in,
        crate::session::sign_in_with_link,
        crate::oidc::options,
        crate::oidc::start,
        crate::oidc::callback,
        crate::session::sign_out,
        crate::session::me,
        crate::session::set_password,
        crate::invitations::accept,
        crate::tenants::list,
        crate::tenants::create,
        crate::tenants::get,
        crate::tenants::set_quotas,
        crate::sso::get,
        crate::sso::set,
        crate::sso::remove,
        crate::tenants::create_operator_token,
        crate::members::list,
        crate::members::change_role,
        crate::members::remove,
        crate::members::invitations,
        crate::members::invite,
        crate::members::revoke_invitation,
        crate::tokens::list_tokens,
        crate::tokens::create_token,
        crate::tokens::revoke_token,
        crate::tokens::list_keys,
        crate::tokens::create_key,
        crate::tokens::revoke_key,
        crate::conversations::agents,
        crate::conversations::create_agent,
        crate::conversations::edit_agent,
        crate::skills::list,
        crate::skills::get,
        crate::skills::toggle,
        crate::skills::upload,
        crate::memory::view,
        crate::memory::rewrite,
        crate::conversations::sessions,
        crate::conversations::transcript,
        crate::conversations::delete_session,
        crate::conversations::export,
        crate::live::open_turns,
        crate::live::stop,
        crate::live::events,
        crate::bots::list,
        crate::bots::create,
        crate::bots::delete,
        crate::bots::pairings,
        crate::bots::approve,
        crate::usage::usage,
        crate::budgets::list,
        crate::budgets::set,
        crate::budgets::remove,
        crate::mcp::list,
        crate::mcp::set,
        crate::mcp::remove,
        crate::credentials::list,
        crate::credentials::add,
        crate::credentials::remove,
        crate::credentials::strategy,
        crate::automation::jobs,
        crate::automation::runs,
        crate::automation::act,
        crate::automation::hooks,
        crate::automation::deliveries,
        crate::automation::ping,
        crate::automation::resend,
        crate::approvals::waiting,
        crate::approvals::answer,
        crate::cluster::cluster,
        crate::audit::tenant_audit,
        crate::audit::installation_audit,
    )
)]
pub(crate) struct AdminDoc;
