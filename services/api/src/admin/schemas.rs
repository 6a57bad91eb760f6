//! The admin API's response shapes, as the OpenAPI document describes them. Handlers build
//! their bodies from the store's types with `serde_json`; the end-to-end conformance test
//! holds real responses to these.

#![allow(dead_code, reason = "the types exist to be described, never built")]

use serde_json::Value;
use utoipa::ToSchema;

/// A person (never a password).
#[derive(ToSchema)]
pub(crate) struct Person {
    id: String,
    email: String,
    display_name: String,
    operator: bool,
    has_password: bool,
    /// False for an account made from an invitation link, until an identity provider that
    /// verified the address or an operator's sign-in link signs it in.
    email_proven: bool,
    /// An operator who may sign in through the installation's identity provider.
    operator_sso: bool,
    disabled: bool,
    created_at: String,
}

#[derive(ToSchema)]
pub(crate) struct Membership {
    tenant_id: String,
    tenant_name: String,
    /// `owner`, `admin` or `member`.
    role: String,
}

/// The signed-in caller.
#[derive(ToSchema)]
pub(crate) struct Me {
    person: Person,
    memberships: Vec<Membership>,
    operator: bool,
    /// The one tenant this session is valid in, when the tenant's own identity provider opened
    /// it; `null` otherwise.
    tenant_scope: Option<String>,
    /// Send it back in `X-CSRF-Token` on every request that changes something (console
    /// sessions only; `null` for tokens).
    csrf_token: Option<String>,
    session_minutes: u64,
    idle_minutes: u64,
}

/// A member: the person's fields, their role and since when.
#[derive(ToSchema)]
pub(crate) struct Member {
    id: String,
    email: String,
    display_name: String,
    operator: bool,
    has_password: bool,
    email_proven: bool,
    operator_sso: bool,
    disabled: bool,
    created_at: String,
    role: String,
    member_since: String,
}

#[derive(ToSchema)]
pub(crate) struct MemberList {
    object: String,
    data: Vec<Member>,
}

#[derive(ToSchema)]
pub(crate) struct RoleChanged {
    person_id: String,
    before: String,
    role: String,
}

#[derive(ToSchema)]
pub(crate) struct Invitation {
    id: String,
    email: String,
    role: String,
    expires_at: String,
    accepted_at: Option<String>,
    revoked_at: Option<String>,
    created_at: String,
}

#[derive(ToSchema)]
pub(crate) struct InvitationList {
    object: String,
    data: Vec<Invitation>,
}

#[derive(ToSchema)]
pub(crate) struct InvitationMade {
    invitation: Invitation,
    /// The link to send the invitee; it works once, until the invitation expires.
    link: String,
}

#[derive(ToSchema)]
pub(crate) struct Actor {
    /// `person`, `token`, `cli`, `chat` or `system`.
    kind: String,
    id: String,
    label: String,
}

#[derive(ToSchema)]
pub(crate) struct AuditEntry {
    id: i64,
    tenant_id: Option<String>,
    at: String,
    actor: Actor,
    /// Such as `member.role_changed`, `api_key.created`.
    action: String,
    object_kind: String,
    object_id: String,
    /// The object before and after, secrets masked.
    before: Option<Value>,
    after: Option<Value>,
    request_id: Option<String>,
    source_address: Option<String>,
}

#[derive(ToSchema)]
pub(crate) struct AuditList {
    object: String,
    data: Vec<AuditEntry>,
    /// The `cursor` of the next page; `null` on the last.
    next: Option<i64>,
}

/// A list of objects.
#[derive(ToSchema)]
pub(crate) struct ObjectList {
    object: String,
    data: Vec<Value>,
}

/// A page of objects.
#[derive(ToSchema)]
pub(crate) struct ObjectPage {
    object: String,
    data: Vec<Value>,
    has_more: bool,
}

/// A session and a page of its messages (OpenAI message form, with `seq`).
#[derive(ToSchema)]
pub(crate) struct Transcript {
    session: Value,
    messages: Vec<Value>,
    has_more: bool,
}

#[derive(ToSchema)]
pub(crate) struct SsoOption {
    label: String,
    /// Where the sign-in button goes.
    start: String,
}

/// How one may sign in.
#[derive(ToSchema)]
pub(crate) struct SignInOptions {
    /// Local accounts (and one-time links).
    password: bool,
    /// The identity provider, when one is configured.
    sso: Option<SsoOption>,
}

/// What stopping a turn did.
#[derive(ToSchema)]
pub(crate) struct Stopped {
    id: String,
    /// `cancelled` (it had not started) or `stopping` (its worker stops it now).
    status: String,
}

/// An agent's curated memory.
#[derive(ToSchema)]
pub(crate) struct Memory {
    agent_id: String,
    /// Whether the agent has the memory toolset (only then does its prompt carry memory).
    enabled: bool,
    /// Whose USER profile is shown (empty: none).
    user: String,
    memory: Vec<String>,
    user_profile: Vec<String>,
    memory_char_limit: u64,
    user_char_limit: u64,
}

#[derive(ToSchema)]
pub(crate) struct MemoryWritten {
    target: String,
    entries: Vec<String>,
}

/// One group's usage.
#[derive(ToSchema)]
pub(crate) struct UsageLine {
    /// The day, the agent's name, the model or the source.
    key: String,
    calls: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cached_tokens: i64,
    cost_usd: f64,
    /// Calls of models without a price (not in `cost_usd`).
    unpriced_calls: i64,
    turns: i64,
    tool_ms: i64,
    sandbox_ms: i64,
}

#[derive(ToSchema)]
pub(crate) struct UsageReport {
    from: String,
    to: String,
    by: String,
    lines: Vec<UsageLine>,
    total: UsageLine,
}

/// A tenant's webhook triggers and event endpoints.
#[derive(ToSchema)]
pub(crate) struct Hooks {
    webhooks: Vec<Value>,
    event_hooks: Vec<Value>,
}
