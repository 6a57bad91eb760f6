//! Who is calling the admin API, decided once per request by [`authenticate`] (a middleware):
//! a console session (its cookie's token verified, its server-side row touched, its CSRF
//! token checked on every state-changing request) or an admin token (`Authorization: Bearer
//! hat_...`). Handlers take [`Caller`], then ask it for a tenant and an operation; the answer
//! is the permission table's ([`hermes_core::access::allows`]), and a tenant the caller has
//! no standing in does not exist (404).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRef, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use uuid::Uuid;

use hermes_core::access::{AdminOp, Standing};
use hermes_core::{ErrorCode, TenantId};
use hermes_http::ApiError;
use hermes_store::admin::{Actor, ActorKind, Audit, AuditedTx, Person, TokenAuth};

use crate::admin::client_address::TrustedProxies;
use crate::admin::errors::store_error;
use crate::admin::signing::SessionClaims;
use crate::admin::state::AdminState;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "hermes_console";
/// The header the console sends its CSRF token in.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// Where a request came from: the client's address (sign-in limits count against it) and, for
/// the audit log, that address with any `X-Forwarded-For` it sent.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestMeta {
    pub request_id: Option<String>,
    pub client: Option<std::net::IpAddr>,
    pub source_address: Option<String>,
}

impl RequestMeta {
    fn of(headers: &HeaderMap, peer: Option<SocketAddr>, proxies: &TrustedProxies) -> Self {
        let request_id = headers.get(hermes_http::REQUEST_ID_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let client = proxies.client(peer, headers);
        let forwarded = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(200).collect::<String>());
        let source_address = match (client, forwarded) {
            (Some(ip), Some(fwd)) => Some(format!("{ip} (x-forwarded-for {fwd})")),
            (Some(ip), None) => Some(ip.to_string()),
            (None, _) => None,
        };
        Self { request_id, client, source_address }
    }
}

/// How the caller authenticated.
#[derive(Debug, Clone)]
pub(crate) enum Credential {
    /// A console session: its server-side id and CSRF token, and the one tenant it is valid
    /// in when a tenant's own identity provider opened it.
    Session {
        id: hermes_core::ConsoleSessionId,
        csrf: String,
        scope: Option<TenantId>,
    },
    Token(TokenAuth),
}

/// An authenticated admin caller.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    /// The person, for sessions and a person's tokens.
    pub person: Option<Person>,
    pub credential: Credential,
    pub meta: RequestMeta,
}

/// Where the caller stands in a tenant the request names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InTenant {
    pub id: TenantId,
    pub standing: Standing,
}

impl InTenant {
    /// `Ok` when the standing allows `op`; 403 naming the operation otherwise.
    pub(crate) fn check(&self, op: AdminOp) -> Result<(), ApiError> {
        hermes_ops::check(self.standing, op).map_err(crate::admin::errors::ops_error)
    }
}

pub(crate) fn not_signed_in() -> ApiError {
    ApiError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        "authentication_error",
        Some(ErrorCode::NotSignedIn),
        "sign in to the console, or send an admin token: Authorization: Bearer hat_...",
    )
}

fn tenant_not_found() -> ApiError {
    ApiError::not_found(ErrorCode::TenantNotFound, "no such tenant")
}

impl Caller {
    /// What this caller's changes are recorded as.
    pub(crate) fn audit(&self) -> Audit {
        let actor = match (&self.credential, &self.person) {
            (Credential::Token(t), _) => Actor {
                kind: ActorKind::Token,
                id: t.id.to_string(),
                label: match &self.person {
                    Some(p) => format!("{} ({})", t.name, p.email),
                    None => t.name.clone(),
                },
            },
            (Credential::Session { .. }, Some(p)) => {
                Actor { kind: ActorKind::Person, id: p.id.to_string(), label: p.email.clone() }
            }
            (Credential::Session { .. }, None) => {
                Actor { kind: ActorKind::System, id: String::new(), label: String::new() }
            }
        };
        Audit { actor, request_id: self.meta.request_id.clone(), source_address: self.meta.source_address.clone() }
    }

    /// Begins a change this caller makes in `tenant`: its writes and its audit entry commit
    /// together ([`AuditedTx::commit`]), or not at all.
    pub(crate) async fn begin(&self, state: &AdminState, tenant: TenantId) -> Result<AuditedTx, ApiError> {
        state.store.audited(tenant, self.audit()).await.map_err(store_error)
    }

    /// Whether the caller acts as a platform operator (never in a session a tenant's provider
    /// opened).
    pub(crate) fn is_operator(&self) -> bool {
        match &self.credential {
            Credential::Token(t) => t.operator,
            Credential::Session { scope: None, .. } => self.person.as_ref().is_some_and(|p| p.operator),
            Credential::Session { scope: Some(_), .. } => false,
        }
    }

    /// The one tenant this caller's session is valid in, if it is limited to one.
    pub(crate) fn scope(&self) -> Option<TenantId> {
        match &self.credential {
            Credential::Session { scope, .. } => *scope,
            Credential::Token(_) => None,
        }
    }

    /// The tenant `raw` names, where the caller stands there, and whether that allows `op`:
    /// 404 when the caller has no standing in it (it does not exist, to them), 403 when the
    /// standing does not allow `op`.
    pub(crate) async fn tenant(&self, state: &AdminState, raw: &str, op: AdminOp) -> Result<InTenant, ApiError> {
        let raw: Uuid = raw.parse().map_err(|_| tenant_not_found())?;
        let in_tenant = match (&self.credential, &self.person) {
            (Credential::Token(t), _) if t.tenant.is_some() => match t.tenant {
                Some(id) if id.as_uuid() == raw => InTenant { id, standing: Standing::Member(t.role) },
                _ => return Err(tenant_not_found()),
            },
            (Credential::Session { scope: Some(only), .. }, _) if only.as_uuid() != raw => {
                return Err(tenant_not_found());
            }
            (_, Some(person)) => {
                let (id, role) = match state.store.admin().tenant_for_person(person.id, raw).await {
                    Ok(found) => found,
                    Err(hermes_store::StoreError::NotFound) => return Err(tenant_not_found()),
                    Err(e) => return Err(store_error(e)),
                };
                let standing = match (self.is_operator(), role) {
                    (true, _) | (false, None) => Standing::Operator,
                    (false, Some(role)) => Standing::Member(role),
                };
                InTenant { id, standing }
            }
            _ => return Err(tenant_not_found()),
        };
        in_tenant.check(op)?;
        Ok(in_tenant)
    }

    /// `Ok` when the caller is an operator (installation operations).
    pub(crate) fn installation(&self, op: AdminOp) -> Result<(), ApiError> {
        if self.is_operator() {
            return Ok(());
        }
        Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "permission_error",
            Some(ErrorCode::PermissionDenied),
            format!("only platform operators may do `{op}`"),
        ))
    }
}

/// `Option<Caller>` as the middleware left it.
#[derive(Clone)]
struct Authenticated(Option<Caller>);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Authenticated>() {
            Some(Authenticated(Some(caller))) => Ok(caller.clone()),
            _ => Err(not_signed_in()),
        }
    }
}

/// The caller when one is signed in, for routes that also serve people who are not.
pub(crate) struct MaybeCaller(pub Option<Caller>);

impl<S: Send + Sync> FromRequestParts<S> for MaybeCaller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(parts.extensions.get::<Authenticated>().and_then(|a| a.0.clone())))
    }
}

/// Request facts for handlers that need no sign-in (signing in).
impl<S: Send + Sync> FromRequestParts<S> for RequestMeta
where
    AdminState: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let state = AdminState::from_ref(state);
        let peer = parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
        Ok(RequestMeta::of(&parts.headers, peer, &state.proxies))
    }
}

/// The value of cookie `name`, if sent.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` carrying `token` for `max_age` seconds (0 clears it).
pub(crate) fn session_cookie(state: &AdminState, token: &str, max_age: u64) -> HeaderValue {
    let secure = if state.secure_cookie() { "; Secure" } else { "" };
    let value = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}");
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("hermes_console=; Path=/; Max-Age=0"))
}

fn csrf_rejected(why: &str) -> ApiError {
    ApiError::new(axum::http::StatusCode::FORBIDDEN, "permission_error", Some(ErrorCode::CsrfRejected), why.to_owned())
}

/// Whether two tokens are equal, compared as their SHA-256 digests so the time taken says
/// nothing about how much of the token matched.
fn same(a: &str, b: &str) -> bool {
    use sha2::{Digest, Sha256};
    Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes())
}

/// A cookie-authenticated request that changes something must come from the console itself:
/// the browser says so (`Sec-Fetch-Site`, when it sends one), and the request carries the
/// session's CSRF token, which another site cannot read.
fn check_csrf(method: &Method, headers: &HeaderMap, csrf: &str) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Err(csrf_rejected("a cross-site request may not change anything"));
    }
    match headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()) {
        Some(sent) if same(sent, csrf) => Ok(()),
        _ => Err(csrf_rejected("missing or wrong CSRF token: send the session's token in X-CSRF-Token")),
    }
}

/// The admin routes' middleware: authenticates, checks CSRF, renews a session token that is
/// past half its life, and clears a cookie whose session is over.
pub(crate) async fn authenticate(State(state): State<AdminState>, mut request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0);
    let meta = RequestMeta::of(request.headers(), peer, &state.proxies);
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(|v| v.trim().to_owned());
    let mut set_cookie = None;
    let caller = if let Some(token) = bearer {
        match state.store.admin().authenticate_admin_token(&token).await {
            Ok(Some(auth)) => {
                let person = match auth.person {
                    Some(id) => state.store.admin().person(id).await.ok(),
                    None => None,
                };
                Some(Caller { person, credential: Credential::Token(auth), meta })
            }
            Ok(None) => {
                return ApiError::new(
                    axum::http::StatusCode::UNAUTHORIZED,
                    "authentication_error",
                    Some(ErrorCode::NotSignedIn),
                    "invalid, expired or revoked admin token",
                )
                .into_response();
            }
            Err(e) => return store_error(e).into_response(),
        }
    } else if let Some(token) = cookie(request.headers(), COOKIE).filter(|t| !t.is_empty()).map(str::to_owned) {
        match session_of(&state, &token).await {
            Ok(Some(LiveCookie { claims, person, scope, renewed })) => {
                if let Err(refused) = check_csrf(request.method(), request.headers(), &claims.csrf) {
                    return refused.into_response();
                }
                set_cookie = renewed;
                Some(Caller {
                    person: Some(person),
                    credential: Credential::Session { id: claims.sid, csrf: claims.csrf, scope },
                    meta,
                })
            }
            Ok(None) => {
                set_cookie = Some(session_cookie(&state, "", 0));
                None
            }
            Err(e) => return e.into_response(),
        }
    } else {
        None
    };
    request.extensions_mut().insert(Authenticated(caller));
    let mut response = next.run(request).await;
    if let Some(cookie) = set_cookie
        && !response.headers().contains_key(header::SET_COOKIE)
    {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// What a live session's cookie carries and names.
struct LiveCookie {
    claims: SessionClaims,
    person: Person,
    /// The one tenant the session is valid in, if it is limited to one.
    scope: Option<TenantId>,
    /// A renewed cookie, when the token is past half its life.
    renewed: Option<HeaderValue>,
}

/// The live session a cookie's token names.
async fn session_of(state: &AdminState, token: &str) -> Result<Option<LiveCookie>, ApiError> {
    let Some(keys) = &state.keys else { return Ok(None) };
    let Some(claims) = keys.verify(token) else { return Ok(None) };
    let live = match state.store.admin().touch_console_session(claims.sid, state.idle_timeout()).await {
        Ok(Some(live)) if live.person == claims.sub => live,
        Ok(_) => return Ok(None),
        Err(e) => return Err(store_error(e)),
    };
    let person = match state.store.admin().person(live.person).await {
        Ok(p) => p,
        Err(hermes_store::StoreError::NotFound) => return Ok(None),
        Err(e) => return Err(store_error(e)),
    };
    let lifetime = state.session_lifetime();
    let left = claims.exp - chrono::Utc::now().timestamp();
    let renewed = if left < i64::try_from(lifetime.as_secs() / 2).unwrap_or(i64::MAX) {
        let until_end = (live.expires_at - chrono::Utc::now()).to_std().unwrap_or_default();
        let fresh = SessionClaims::new(claims.sub, claims.sid, claims.csrf.clone(), lifetime.min(until_end));
        keys.sign(&fresh).ok().map(|t| session_cookie(state, &t, lifetime.min(until_end).as_secs()))
    } else {
        None
    };
    Ok(Some(LiveCookie { claims, person, scope: live.tenant, renewed }))
}
