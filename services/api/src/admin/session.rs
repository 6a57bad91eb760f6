//! Signing in and out: a local account's password or a one-time link (an invitation:
//! [`crate::admin::invitations`]); who the signed-in caller is (`/me`, with the session's CSRF
//! token); and changing one's password.

use axum::Json;
use axum::extract::{FromRef, FromRequest, FromRequestParts, Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use hermes_core::ErrorCode;
use hermes_http::{ApiError, ApiJson, BodyLimit};
use hermes_store::admin::Person;

use crate::admin::caller::{Caller, Credential, RequestMeta, session_cookie};
use crate::admin::errors::{Result, store_error};
use crate::admin::password;
use crate::admin::signing::SessionClaims;
use crate::admin::state::AdminState;
use crate::documented::NotSignedIn;

/// A local account's sign-in.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SignIn {
    email: String,
    password: String,
}

/// A one-time sign-in link's token.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LinkSignIn {
    token: String,
}

/// A new password; the current one is needed when there is one.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NewPassword {
    current_password: Option<String>,
    new_password: String,
}

fn wrong_credentials() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "authentication_error",
        Some(ErrorCode::WrongCredentials),
        "wrong email or password",
    )
}

pub(crate) fn console_off() -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "server_error",
        Some(ErrorCode::AdminDisabled),
        "console sign-in is off: set admin.session_keys or secrets.master_key",
    )
}

/// A sign-in attempt: the request's facts and its body, counted against its address's sign-in
/// rate once the body is read (a malformed body is a 400 that costs no attempt).
pub(crate) struct Attempt<T> {
    pub state: AdminState,
    pub meta: RequestMeta,
    pub user_agent: String,
    pub body: T,
}

impl<S, T> FromRequest<S> for Attempt<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
    AdminState: FromRef<S>,
    BodyLimit: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let (mut parts, body) = req.into_parts();
        let Ok(meta) = RequestMeta::from_request_parts(&mut parts, state).await;
        let user_agent = user_agent(&parts.headers);
        let ApiJson(body) = ApiJson::from_request(Request::from_parts(parts, body), state).await?;
        let state = AdminState::from_ref(state);
        limit_attempts(&state, &meta).await?;
        Ok(Self { state, meta, user_agent, body })
    }
}

/// Refuses a caller past the sign-in rate of its address (every account together).
pub(crate) async fn limit_attempts(state: &AdminState, meta: &RequestMeta) -> Result<()> {
    let client = meta.client.map_or_else(|| "unknown".to_owned(), |ip| ip.to_string());
    let scope = format!("admin-sign-in:{client}");
    match state.limiter.check(&scope, state.config.admin.sign_in_per_minute).await {
        Ok(d) if !d.allowed => {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                Some(ErrorCode::RateLimitExceeded),
                "too many sign-in attempts from this address; wait a minute",
            );
            e.retry_after = Some(d.retry_after_ms.div_ceil(1000).max(1));
            Err(e)
        }
        Ok(_) => Ok(()),
        // Redis down: the per-account lockout (in Postgres) still holds.
        Err(e) => {
            tracing::warn!(error = %e, "sign-in rate limit unavailable");
            Ok(())
        }
    }
}

/// A fresh server-side session for `person`: its cookie and its CSRF token.
/// `scope`: valid in that tenant only (a tenant's own identity provider signed them in).
pub(crate) async fn issue_session(
    state: &AdminState,
    person: &Person,
    scope: Option<hermes_core::TenantId>,
    meta: &RequestMeta,
    agent: &str,
) -> Result<(header::HeaderValue, String)> {
    let keys = state.keys.as_ref().ok_or_else(console_off)?;
    let address = meta.source_address.as_deref().unwrap_or("");
    let live = state.store.admin().open_console_session(person.id, scope, state.max_session(), address, agent);
    let live = live.await.map_err(store_error)?;
    let csrf = crate::admin::signing::random_token().map_err(ApiError::internal)?;
    let lifetime = state.session_lifetime();
    let claims = SessionClaims::new(person.id, live.id, csrf.clone(), lifetime);
    let token = keys.sign(&claims).map_err(ApiError::internal)?;
    Ok((session_cookie(state, &token, lifetime.as_secs()), csrf))
}

/// What a password check that could not run answers: 429, try again in a second.
pub(crate) fn password_error(e: password::PasswordError) -> ApiError {
    match e {
        password::PasswordError::Busy => {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                Some(ErrorCode::SignInBusy),
                password::PasswordError::Busy.to_string(),
            );
            e.retry_after = Some(1);
            e
        }
        password::PasswordError::Hash(e) => ApiError::internal(e),
        short_or_long => ApiError::invalid_request(ErrorCode::InvalidValue, short_or_long.to_string()),
    }
}

/// A fresh session for `person`: the cookie, and what `/me` says.
pub(crate) async fn open_session(
    state: &AdminState,
    person: Person,
    meta: &RequestMeta,
    agent: &str,
) -> Result<Response> {
    let (cookie, csrf) = issue_session(state, &person, None, meta, agent).await?;
    let body = me_body(state, &person, None, Some(&csrf)).await?;
    let mut response = Json(body).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    Ok(response)
}

/// What `/me` says: within a session limited to one tenant, that tenant alone.
pub(crate) async fn me_body(
    state: &AdminState,
    person: &Person,
    scope: Option<hermes_core::TenantId>,
    csrf: Option<&str>,
) -> Result<hermes_wire::admin::Me> {
    let mut memberships = state.store.admin().memberships_of(person.id).await.map_err(store_error)?;
    if let Some(only) = scope {
        memberships.retain(|m| m.tenant_id == only);
    }
    Ok(hermes_wire::admin::Me {
        person: person.clone(),
        memberships,
        operator: person.operator && scope.is_none(),
        tenant_scope: scope,
        csrf_token: csrf.map(str::to_owned),
        session_minutes: state.config.admin.session_minutes,
        idle_minutes: state.config.admin.idle_minutes,
    })
}

pub(crate) fn user_agent(headers: &axum::http::HeaderMap) -> String {
    headers.get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned()
}

#[utoipa::path(post, path = "/admin/v1/sign-in", tag = "admin: sign-in", request_body = SignIn, security(()),
    responses((status = 200, description = "Signed in: the session cookie is set", body = hermes_wire::admin::Me),
        (status = 401, description = "Wrong email or password", body = hermes_wire::ErrorBody),
        (status = 403, description = "The account is locked after too many wrong passwords", body = hermes_wire::ErrorBody),
        (status = 429, description = "Too many attempts from this address", body = hermes_wire::ErrorBody)))]
pub(crate) async fn sign_in(Attempt { state, meta, user_agent, body }: Attempt<SignIn>) -> Result<Response> {
    let record = state.store.admin().sign_in_record(&body.email).await.map_err(store_error)?;
    if let Some(until) = record.as_ref().and_then(|r| r.locked_until).filter(|t| *t > chrono::Utc::now()) {
        return Err(locked(until));
    }
    let (person, hash) = match record {
        Some(r) if !r.person.disabled => (Some(r.person), r.password_hash),
        _ => (None, None),
    };
    if !state.passwords.verify(body.password, hash).await.map_err(password_error)? {
        if let Some(p) = person {
            let lock_for = std::time::Duration::from_secs(state.config.admin.lockout_minutes * 60);
            let locked_now =
                state.store.admin().record_failed_sign_in(p.id, state.config.admin.lockout_after, lock_for).await;
            if let Ok(Some(until)) = locked_now {
                return Err(locked(until));
            }
        }
        return Err(wrong_credentials());
    }
    let person = person.ok_or_else(wrong_credentials)?;
    state.store.admin().record_sign_in(person.id).await.map_err(store_error)?;
    open_session(&state, person, &meta, &user_agent).await
}

fn locked(until: chrono::DateTime<chrono::Utc>) -> ApiError {
    let mut e = ApiError::new(
        StatusCode::FORBIDDEN,
        "authentication_error",
        Some(ErrorCode::AccountLocked),
        format!("too many wrong passwords: the account is locked until {}", until.format("%H:%M UTC")),
    );
    e.retry_after = Some(u64::try_from((until - chrono::Utc::now()).num_seconds()).unwrap_or(1).max(1));
    e
}

#[utoipa::path(post, path = "/admin/v1/sign-in/link", tag = "admin: sign-in", request_body = LinkSignIn, security(()),
    responses((status = 200, description = "Signed in: the session cookie is set", body = hermes_wire::admin::Me),
        (status = 400, description = "The link is unknown, used or expired", body = hermes_wire::ErrorBody)))]
pub(crate) async fn sign_in_with_link(
    Attempt { state, meta, user_agent, body }: Attempt<LinkSignIn>,
) -> Result<Response> {
    let person =
        state.store.admin().redeem_sign_in_link(&body.token).await.map_err(store_error)?.ok_or_else(link_invalid)?;
    let person = state.store.admin().person(person).await.map_err(store_error)?;
    // Links are an operator's (hermesctl), sent to the address's owner: that proves it.
    let by = as_themselves(&person, &meta);
    let proof = state.store.admin().prove_email(person.id, "an operator's sign-in link", &by);
    let person = match proof.await.map_err(store_error)? {
        true => state.store.admin().person(person.id).await.map_err(store_error)?,
        false => person,
    };
    open_session(&state, person, &meta, &user_agent).await
}

/// A person acting for themselves, for the audit log.
pub(crate) fn as_themselves(person: &Person, meta: &RequestMeta) -> hermes_store::admin::Audit {
    hermes_store::admin::Audit {
        actor: hermes_store::admin::Actor {
            kind: hermes_store::admin::ActorKind::Person,
            id: person.id.to_string(),
            label: person.email.clone(),
        },
        request_id: meta.request_id.clone(),
        source_address: meta.source_address.clone(),
    }
}

pub(crate) fn link_invalid() -> ApiError {
    ApiError::invalid_request(
        ErrorCode::LinkInvalid,
        "this link is unknown, already used or expired: ask for a new one",
    )
}

#[utoipa::path(post, path = "/admin/v1/sign-out", tag = "admin: sign-in",
    responses((status = 204, description = "Signed out: the session ends at once"),
        NotSignedIn))]
pub(crate) async fn sign_out(State(state): State<AdminState>, caller: Caller) -> Result<Response> {
    if let Credential::Session { id, .. } = caller.credential {
        state.store.admin().end_console_session(id).await.map_err(store_error)?;
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(header::SET_COOKIE, session_cookie(&state, "", 0));
    Ok(response)
}

#[utoipa::path(get, path = "/admin/v1/me", tag = "admin: sign-in",
    responses((status = 200, description = "The signed-in person, their tenants and the session's CSRF token", body = hermes_wire::admin::Me),
        NotSignedIn))]
pub(crate) async fn me(State(state): State<AdminState>, caller: Caller) -> Result<Response> {
    let person = caller.person.clone().ok_or_else(crate::admin::caller::not_signed_in)?;
    let csrf = match &caller.credential {
        Credential::Session { csrf, .. } => Some(csrf.as_str()),
        Credential::Token(_) => None,
    };
    let mut response = Json(me_body(&state, &person, caller.scope(), csrf).await?).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    Ok(response)
}

#[utoipa::path(put, path = "/admin/v1/me/password", tag = "admin: sign-in", request_body = NewPassword,
    responses((status = 204, description = "Set; the person's other sessions are ended"),
        (status = 400, description = "Too short or too long", body = hermes_wire::ErrorBody),
        (status = 401, description = "Not signed in, or the current password is wrong", body = hermes_wire::ErrorBody)))]
pub(crate) async fn set_password(
    State(state): State<AdminState>,
    caller: Caller,
    ApiJson(body): ApiJson<NewPassword>,
) -> Result<StatusCode> {
    let Credential::Session { id: session, .. } = caller.credential else {
        return Err(ApiError::invalid_request(ErrorCode::InvalidRequest, "passwords are changed in the console"));
    };
    let person = caller.person.clone().ok_or_else(crate::admin::caller::not_signed_in)?;
    let record = state.store.admin().sign_in_record(&person.email).await.map_err(store_error)?;
    if let Some(stored) = record.and_then(|r| r.password_hash) {
        let current = body.current_password.unwrap_or_default();
        if !state.passwords.verify(current, Some(stored)).await.map_err(password_error)? {
            return Err(wrong_credentials());
        }
    }
    let hash = state.passwords.hash(body.new_password).await.map_err(|e| match e {
        e @ (password::PasswordError::TooShort | password::PasswordError::TooLong) => {
            password_error(e).with_param("new_password")
        }
        e => password_error(e),
    })?;
    // The same transaction ends the person's other sessions and revokes their tokens.
    state
        .store
        .admin()
        .set_password_hash(person.id, &hash, Some(session), &caller.audit())
        .await
        .map_err(store_error)?;
    Ok(StatusCode::NO_CONTENT)
}
