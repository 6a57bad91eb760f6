//! What many handlers' `#[utoipa::path]` annotations say alike, said once: their common error
//! answers (types implementing `IntoResponses`, named in `responses(...)` beside the tuples)
//! and path parameters (`IntoParams`, also what the handlers extract). The document names
//! their error bodies as it always did: `#/components/schemas/ErrorBody`.

use std::collections::BTreeMap;

use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{IntoResponses, ToSchema};

use hermes_wire::ErrorBody;

/// Error answers: each a type whose `IntoResponses` documents one status with its
/// description and an [`ErrorBody`] as JSON.
macro_rules! error_responses {
    ($($(#[$doc:meta])* $name:ident: $status:tt, $description:tt;)*) => {$(
        $(#[$doc])*
        pub(crate) struct $name;

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                error_response(stringify!($status), $description)
            }
        }
    )*};
}

/// The answer `status` gives: `description`, and an [`ErrorBody`] as JSON.
fn error_response(status: &str, description: &str) -> BTreeMap<String, RefOr<Response>> {
    let body = ContentBuilder::new().schema(Some(Ref::from_schema_name(ErrorBody::name()))).build();
    let response = ResponseBuilder::new().description(description).content("application/json", body).build();
    BTreeMap::from([(status.to_owned(), RefOr::T(response))])
}

error_responses! {
    /// The tenant API's 400 for a body or parameter it refuses.
    BadRequest: 400, "Invalid request";
    /// The tenant API's 401: no API key, or one that does not work.
    NoApiKey: 401, "Missing or invalid API key";
    /// The tenant API's 404: another tenant's object looks like a missing one.
    NotFound: 404, "Not found (or another tenant's)";
    /// The tenant API's 429 of its per-tenant request limits.
    RateLimited: 429, "Rate limit reached";
    /// `/v1/cron/jobs/{id}` (and the admin API's `.../cron/{id}`) when the caller has no such job.
    NoSuchJob: 404, "No such job";
    /// `/v1/webhooks/{id}` when the caller has no such hook.
    NoSuchWebhook: 404, "No such webhook";
    /// `/v1/event-hooks/{id}` when the tenant has no such endpoint.
    NoSuchHook: 404, "No such event hook";
    /// The admin API's 404 for a tenant the caller has no standing in.
    TenantNotFound: 404, "No such tenant (or not yours)";
    /// The admin API's 403 for installation operations.
    OperatorsOnly: 403, "Operators only";
    /// `.../channels/{id}` when the tenant has no such bot.
    NoSuchChannel: 404, "No such channel";
    /// The admin API's `.../sessions/{id}` when the tenant has no such session.
    NoSuchSession: 404, "No such session";
    /// The admin API's `.../turns/{id}/...` when the tenant has no such turn.
    NoSuchTurn: 404, "No such turn";
    /// The admin API's `.../hooks/{id}` when the tenant has no such event endpoint.
    NoSuchEndpoint: 404, "No such endpoint";
    /// The admin API's `.../agents/{agent}` when the tenant has no such agent.
    NoSuchAgent: 404, "No such agent";
    /// The admin API's 404 for an agent, the tenant's or another's.
    NoSuchTenantOrAgent: 404, "No such tenant or agent";
    /// The admin API's 404 for a member, the tenant's or another's.
    NoSuchTenantOrMember: 404, "No such tenant or member";
    /// The admin API's 404 for a tenant an operator names (operators see every tenant).
    NoSuchTenant: 404, "No such tenant";
    /// `.../sso` when the tenant has no single sign-on of its own.
    NoOwnProvider: 404, "No such tenant, or it has no provider of its own";
    /// The tenant API's 403 for a key restricted to one agent, on objects of the whole tenant.
    KeyForOneAgent: 403, "The key is restricted to one agent";
    /// The admin API's 403 for a role below the agents' editors.
    MayNotEditAgents: 403, "The caller's role may not edit agents";
    /// The admin API's 403 for a role below the spending caps' editors.
    MayNotSetBudgets: 403, "The caller's role may not set budgets";
    /// The admin API's 403 for a role below the skills' editors.
    MayNotEditSkills: 403, "The caller's role may not edit skills";
    /// A turn refused because the tenant's (or the agent's) hard cap is spent.
    CapReached: 402, "A spending cap is reached";
    /// `/admin/v1/me...` and sign-out without a console session.
    NotSignedIn: 401, "Not signed in";
    /// A pairing code to approve that no one is waiting with.
    NoSuchCode: 400, "No such code is waiting";
    /// A channel's pairing approvals after too many wrong codes.
    PairingLocked: 429, "Too many wrong codes: approvals are locked for a while";
    /// A bot to bind that a channel has already.
    BotBound: 409, "The bot is bound already";
}

/// Path segments: each a type with the one field its route names, described for the document,
/// and that field's value as a `String`.
macro_rules! path_segments {
    ($($(#[$doc:meta])* $name:ident { $field:ident: $description:tt })*) => {$(
        $(#[$doc])*
        #[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
        #[into_params(parameter_in = Path)]
        pub(crate) struct $name {
            #[doc = $description]
            pub $field: String,
        }

        impl From<$name> for String {
            fn from(segment: $name) -> String {
                segment.$field
            }
        }
    )*};
}

path_segments! {
    /// `/...{id}`: a tenant API object (a run, a session, a response), or an admin API one.
    ObjectPath { id: "The object's id" }
    /// `/v1/cron/jobs/{id}`.
    JobPath { id: "Job id or name" }
    /// `/v1/webhooks/{id}`.
    WebhookPath { id: "Webhook id" }
    /// `/v1/event-hooks/{id}`.
    HookPath { id: "Event hook id" }
    /// `/admin/v1/tenants/{tenant}/...`.
    TenantPath { tenant: "Tenant id" }
    /// `/admin/v1/tenants/{tenant}/agents/{agent}/...` (after [`TenantPath`]).
    AgentPath { agent: "Agent id or name" }
    /// `.../channels/{id}` (the tenant API's and the admin API's).
    ChannelPath { id: "Channel id" }
    /// The admin API's `.../sessions/{id}`.
    SessionPath { id: "Session id" }
    /// The admin API's `.../hooks/{id}`.
    EndpointPath { id: "Event endpoint id" }
    /// `/api/jobs/{id}` and the admin API's `.../cron/{id}`, as they have always described it.
    JobIdPath { id: "Job id" }
    /// The admin API's `.../members/{person}`.
    PersonPath { person: "Person id" }
    /// The admin API's `.../turns/{id}/...`.
    TurnPath { id: "Turn id" }
    /// `/v1/files/{id}`.
    FileIdPath { id: "The file's id" }
    /// The admin API's `.../skills/{name}` of an agent.
    SkillPath { name: "Skill name" }
}
