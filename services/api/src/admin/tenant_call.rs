//! What every `/admin/v1/tenants/{tenant}/...` handler starts from: the signed-in caller and
//! the tenant the path names. Each handler then asks for its own operation
//! ([`TenantCall::allow`]), before it reads the body ([`TenantCall::allow_with_body`]), so
//! another tenant's URL is a 404 whatever the body.

use axum::Json;
use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::Response;

use hermes_core::TenantId;
use hermes_core::access::AdminOp;
use hermes_http::{ApiError, ApiJson};
use hermes_store::admin::AuditedTx;
use hermes_store::{Agent, Store, StoreError};
use hermes_wire::List;

use crate::admin::caller::{Caller, InTenant};
use crate::admin::errors::store_error;
use crate::admin::state::AdminState;
use crate::documented::{AgentPath, TenantPath};

pub(crate) use crate::visible::Body;
use crate::visible::part;

/// A signed-in caller's request about the tenant its path names (not yet checked).
pub(crate) struct TenantCall {
    pub state: AdminState,
    pub caller: Caller,
    tenant: String,
}

impl<S: Send + Sync> FromRequestParts<S> for TenantCall
where
    AdminState: FromRef<S>,
{
    /// 401 without a caller, then whatever a bad path answers.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let caller: Caller = part(parts, state).await?;
        let Path(TenantPath { tenant }) = part::<Path<TenantPath>, _>(parts, state).await?;
        Ok(Self { state: AdminState::from_ref(state), caller, tenant })
    }
}

impl TenantCall {
    /// The tenant, when the caller's standing there allows `op` (see [`Caller::tenant`]).
    pub(crate) async fn allow(&self, op: AdminOp) -> Result<InTenant, ApiError> {
        self.caller.tenant(&self.state, &self.tenant, op).await
    }

    /// The tenant as [`Self::allow`] answers, then the body: another tenant's URL is a 404
    /// whatever the body.
    pub(crate) async fn allow_with_body<T>(&self, op: AdminOp, body: Body<T>) -> Result<(InTenant, T), ApiError> {
        let t = self.allow(op).await?;
        let ApiJson(body) = body?;
        Ok((t, body))
    }

    /// Begins this caller's audited change in `tenant` (see [`Caller::begin`]).
    pub(crate) async fn begin(&self, tenant: TenantId) -> Result<AuditedTx, ApiError> {
        self.caller.begin(&self.state, tenant).await
    }

    /// The tenant's objects `fetch` reads, as a list, when the caller may do `op`.
    pub(crate) async fn list<T>(
        &self,
        op: AdminOp,
        fetch: impl AsyncFnOnce(&Store, TenantId) -> Result<Vec<T>, StoreError>,
    ) -> Result<Json<List<T>>, ApiError> {
        self.list_shown(op, fetch, std::convert::identity).await
    }

    /// As [`Self::list`], each object as `show` shows it.
    pub(crate) async fn list_shown<S, T>(
        &self,
        op: AdminOp,
        fetch: impl AsyncFnOnce(&Store, TenantId) -> Result<Vec<S>, StoreError>,
        show: impl FnMut(S) -> T,
    ) -> Result<Json<List<T>>, ApiError> {
        let t = self.allow(op).await?;
        let found = fetch(&self.state.store, t.id).await.map_err(store_error)?;
        Ok(Json(List::of(found.into_iter().map(show).collect())))
    }
}

/// A signed-in caller's request about the agent `.../agents/{agent}/...` names (its id or its
/// name), in the tenant the path names; the rest as [`TenantCall`].
pub(crate) struct AgentCall {
    call: TenantCall,
    pub agent_ref: String,
}

impl<S: Send + Sync> FromRequestParts<S> for AgentCall
where
    AdminState: FromRef<S>,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let call = TenantCall::from_request_parts(parts, state).await?;
        let Path(AgentPath { agent }) = part::<Path<AgentPath>, _>(parts, state).await?;
        Ok(Self { call, agent_ref: agent })
    }
}

impl std::ops::Deref for AgentCall {
    type Target = TenantCall;

    fn deref(&self) -> &TenantCall {
        &self.call
    }
}

impl AgentCall {
    /// The tenant and its agent, when the caller may do `op` there: 404 for a tenant that is
    /// not theirs, then for no such agent.
    pub(crate) async fn allow_agent(&self, op: AdminOp) -> Result<(InTenant, Agent), ApiError> {
        let t = self.call.allow(op).await?;
        let agent = self.call.state.agent(t.id, &self.agent_ref).await?;
        Ok((t, agent))
    }
}
