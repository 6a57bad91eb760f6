//! API-key authentication: the only way a handler obtains a tenant. Every authenticated
//! request is also counted against its key's and tenant's rate limits here.

use std::marker::PhantomData;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;

use hermes_http::{ApiError, ErrorCode};
use hermes_store::KeyAuth;

use crate::state::AppState;

/// The authenticated caller.
pub(crate) struct Caller(pub KeyAuth);

/// The key, as the audit log names who made a change through the tenant API.
pub(crate) fn key_audit(auth: &KeyAuth) -> hermes_ops::Audit {
    let id = auth.key_id.to_string();
    let label = format!("API key {id}");
    let actor = hermes_store::admin::Actor { kind: hermes_store::admin::ActorKind::ApiKey, id, label };
    hermes_ops::Audit { actor, request_id: None, source_address: None }
}

/// Refuses a key restricted to one agent (403) for what spans the tenant's agents (`what`:
/// "managing channels", "event hooks", ...).
pub(crate) fn tenant_wide(auth: &KeyAuth, what: &str) -> Result<(), ApiError> {
    match auth.agent_id {
        None => Ok(()),
        Some(_) => Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "permission_error",
            Some(ErrorCode::KeyRestricted),
            format!("this key may use only one agent; {what} needs a tenant-wide key"),
        )),
    }
}

/// What only a tenant-wide key manages, named as its 403 says ("managing channels").
pub(crate) trait TenantWideOnly {
    const MANAGING: &'static str;
}

/// The caller, whose key spans the tenant's agents, for managing `R`: a key restricted to one
/// agent is refused before the body is read, whatever the body.
pub(crate) struct TenantWide<R> {
    pub state: AppState,
    pub auth: KeyAuth,
    of: PhantomData<fn() -> R>,
}

impl<S: Send + Sync, R: TenantWideOnly> FromRequestParts<S> for TenantWide<R>
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(auth) = Caller::from_request_parts(parts, state).await?;
        tenant_wide(&auth, R::MANAGING)?;
        Ok(Self { state: AppState::from_ref(state), auth, of: PhantomData })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = &AppState::from_ref(state);
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| ApiError::unauthorized("missing API key: send Authorization: Bearer <key>"))?;
        let key = header
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| ApiError::unauthorized("malformed Authorization header: expected Bearer <key>"))?;
        // Boxed, like the rest of a request's short steps before its wait (see `chat`).
        match Box::pin(state.store.tenancy().authenticate_api_key(key)).await {
            Ok(Some(auth)) => {
                tracing::Span::current().record("tenant.id", tracing::field::display(auth.tenant_id));
                Box::pin(crate::limits::check_rate(state, &auth)).await?;
                Ok(Caller(auth))
            }
            Ok(None) => Err(ApiError::unauthorized("invalid API key")),
            Err(e) => Err(ApiError::internal(e)),
        }
    }
}
