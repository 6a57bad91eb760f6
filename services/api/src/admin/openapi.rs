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
            crate::admin::caller::COOKIE,
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
        crate::admin::session::sign_in,
        crate::admin::session::sign_in_with_link,
        crate::admin::oidc::options,
        crate::admin::oidc::start,
        crate::admin::oidc::callback,
        crate::admin::session::sign_out,
        crate::admin::session::me,
        crate::admin::session::set_password,
        crate::admin::invitations::accept,
        crate::admin::tenants::list,
        crate::admin::tenants::create,
        crate::admin::tenants::get,
        crate::admin::tenants::set_quotas,
        crate::admin::tenant_data::export,
        crate::admin::tenant_data::delete,
        crate::admin::sso::get,
        crate::admin::sso::set,
        crate::admin::sso::remove,
        crate::admin::tenants::create_operator_token,
        crate::admin::members::list,
        crate::admin::members::change_role,
        crate::admin::members::remove,
        crate::admin::members::invitations,
        crate::admin::members::invite,
        crate::admin::members::revoke_invitation,
        crate::admin::tokens::list_tokens,
        crate::admin::tokens::create_token,
        crate::admin::tokens::revoke_token,
        crate::admin::tokens::list_keys,
        crate::admin::tokens::create_key,
        crate::admin::tokens::revoke_key,
        crate::admin::conversations::agents,
        crate::admin::conversations::sandbox_images,
        crate::admin::conversations::create_agent,
        crate::admin::conversations::edit_agent,
        crate::admin::conversations::toolsets,
        crate::admin::skills::list,
        crate::admin::skills::get,
        crate::admin::skills::toggle,
        crate::admin::skills::upload,
        crate::admin::memory::view,
        crate::admin::memory::rewrite,
        crate::admin::conversations::sessions,
        crate::admin::conversations::transcript,
        crate::admin::conversations::delete_session,
        crate::admin::conversations::export,
        crate::admin::goals::get,
        crate::admin::goals::set,
        crate::admin::goals::change,
        crate::admin::goals::delete,
        crate::admin::live::open_turns,
        crate::admin::live::stop,
        crate::admin::live::events,
        crate::admin::bots::list,
        crate::admin::bots::create,
        crate::admin::bots::update,
        crate::admin::bots::delete,
        crate::admin::bots::pairings,
        crate::admin::bots::approve,
        crate::admin::usage::usage,
        crate::admin::budgets::list,
        crate::admin::budgets::set,
        crate::admin::budgets::remove,
        crate::admin::secrets::list,
        crate::admin::secrets::bind,
        crate::admin::secrets::unbind,
        crate::admin::mcp::list,
        crate::admin::mcp::set,
        crate::admin::mcp::remove,
        crate::admin::credentials::list,
        crate::admin::credentials::add,
        crate::admin::credentials::remove,
        crate::admin::credentials::strategy,
        crate::admin::automation::jobs,
        crate::admin::automation::runs,
        crate::admin::automation::act,
        crate::admin::automation::hooks,
        crate::admin::automation::deliveries,
        crate::admin::automation::ping,
        crate::admin::automation::resend,
        crate::admin::approvals::waiting,
        crate::admin::approvals::answer,
        crate::admin::cluster::cluster,
        crate::admin::audit::tenant_audit,
        crate::admin::audit::installation_audit,
    )
)]
pub(crate) struct AdminDoc;
