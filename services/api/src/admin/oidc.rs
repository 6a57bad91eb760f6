//! Single sign-on with an OpenID Connect provider, the console's side: the authorization code
//! flow with PKCE (S256), a `state` and a `nonce`, started and finished here; the provider is
//! talked to, and its ID token checked, by [`crate::admin::oidc_client`]. The flow's secrets
//! ride in a short-lived signed cookie, so any `api` pod can finish a flow another began.
//! People sign in by verified email.
//!
//! Two kinds of provider: the installation's (`admin.oidc`), for people who already have an
//! account; and a tenant's own, which an operator sets for the tenant's email domains
//! (`hermes_store::admin::sso`). Starting with a work email picks the tenant's provider for its
//! domain; that provider signs in only people at its domains, never an operator, and lets a
//! person new to the tenant join it when the tenant says so.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hermes_wire::admin::{SignInOptions, SsoOption};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::admin::caller::{RequestMeta, cookie};
use crate::admin::oidc_client::Failure;
use crate::admin::oidc_person::{self, Asserted, domain_of};
use crate::admin::state::AdminState;

/// The flow cookie's name, and how long a flow may take.
const FLOW_COOKIE: &str = "hermes_oidc";
const FLOW_SECONDS: u64 = 600;
const FLOW_ISSUER: &str = "hermes-console-oidc";

/// What the flow cookie carries between the redirect out and the redirect back.
#[derive(Debug, Serialize, Deserialize)]
struct Flow {
    state: String,
    nonce: String,
    verifier: String,
    next: String,
    exp: i64,
    iss: String,
    /// The tenant whose own provider this flow went to (`None`: the installation's).
    #[serde(default)]
    tenant: Option<uuid::Uuid>,
}

fn random() -> String {
    crate::admin::signing::random_token().unwrap_or_default()
}

fn redirect_uri(state: &AdminState) -> String {
    format!("{}/admin/v1/oidc/callback", state.public_url)
}

fn flow_cookie(state: &AdminState, value: &str, max_age: u64) -> HeaderValue {
    let secure = if state.secure_cookie() { "; Secure" } else { "" };
    let text = format!("{FLOW_COOKIE}={value}; Path=/admin/v1/oidc; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}");
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("hermes_oidc=; Max-Age=0"))
}

fn to_sign_in(failure: Failure) -> Response {
    Redirect::to(&format!("/console/sign-in?sso_error={}", failure.code())).into_response()
}

/// Where to start: `next`, a console path to land on afterwards; `email`, the person's work
/// email, whose domain may have its tenant's own provider.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub(crate) struct Start {
    next: Option<String>,
    email: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/oidc/start", tag = "admin: sign-in", params(Start), security(()),
    responses((status = 303, description = "To the identity provider: the tenant's own for the email's domain, else the installation's"),
        (status = 429, description = "Too many sign-in attempts from this address", body = hermes_wire::ErrorBody),
        (status = 404, description = "No identity provider is configured", body = hermes_wire::ErrorBody)))]
pub(crate) async fn start(State(state): State<AdminState>, meta: RequestMeta, Query(q): Query<Start>) -> Response {
    // Anyone may start a sign-in: each start counts against the caller's sign-in allowance.
    if let Err(limited) = crate::admin::session::limit_attempts(&state, &meta).await {
        return limited.into_response();
    }
    let not_configured = || {
        hermes_http::ApiError::not_found(hermes_core::ErrorCode::NotFound, "no identity provider is configured")
            .into_response()
    };
    let Some(keys) = &state.keys else { return not_configured() };
    let (oidc, tenant) = match q.email.as_deref() {
        Some(email) => {
            let Some(domain) = domain_of(email) else { return to_sign_in(Failure::NoProvider) };
            match state.store.admin().sso_for_domain(&domain, state.secrets.as_ref()).await {
                Ok(Some(provider)) => match state.tenant_oidc.get(&state.config, &provider) {
                    Ok(kept) => (kept, Some(provider.tenant.as_uuid())),
                    Err(_) => return to_sign_in(Failure::Provider),
                },
                Ok(None) => match &state.oidc {
                    Some(oidc) => (oidc.clone(), None),
                    None => return to_sign_in(Failure::NoProvider),
                },
                Err(e) => {
                    tracing::warn!(error = %e, "looking up a tenant's identity provider");
                    return to_sign_in(Failure::Provider);
                }
            }
        }
        None => match &state.oidc {
            Some(oidc) => (oidc.clone(), None),
            None => return not_configured(),
        },
    };
    let endpoint = match oidc.authorization_endpoint().await {
        Ok(endpoint) => endpoint,
        Err(e) => {
            tracing::warn!(error = %e, "identity provider discovery");
            return to_sign_in(Failure::Provider);
        }
    };
    let next =
        q.next.filter(|n| n.starts_with("/console") && !n.starts_with("//")).unwrap_or_else(|| "/console".into());
    let flow = Flow {
        state: random(),
        nonce: random(),
        verifier: random(),
        next,
        exp: chrono::Utc::now().timestamp() + FLOW_SECONDS as i64,
        iss: FLOW_ISSUER.into(),
        tenant,
    };
    let Ok(sealed) = keys.sign_any(&flow) else { return to_sign_in(Failure::Flow) };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(flow.verifier.as_bytes()));
    let Ok(mut url) = reqwest::Url::parse(endpoint) else { return to_sign_in(Failure::Provider) };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", oidc.client_id())
        .append_pair("redirect_uri", &redirect_uri(&state))
        .append_pair("scope", oidc.scopes())
        .append_pair("state", &flow.state)
        .append_pair("nonce", &flow.nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    if let Some(email) = q.email.as_deref() {
        url.query_pairs_mut().append_pair("login_hint", email.trim());
    }
    let mut response = Redirect::to(url.as_str()).into_response();
    response.headers_mut().insert(header::SET_COOKIE, flow_cookie(&state, &sealed, FLOW_SECONDS));
    response
}

/// What the provider sends back.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub(crate) struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/oidc/callback", tag = "admin: sign-in", params(Callback), security(()),
    responses((status = 303, description = "Signed in (to the console), or back to the sign-in page saying why not")))]
pub(crate) async fn callback(
    State(state): State<AdminState>,
    meta: RequestMeta,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let mut response = finish(&state, &meta, &headers, q).await.unwrap_or_else(to_sign_in);
    response.headers_mut().append(header::SET_COOKIE, flow_cookie(&state, "", 0));
    response
}

async fn finish(state: &AdminState, meta: &RequestMeta, headers: &HeaderMap, q: Callback) -> Result<Response, Failure> {
    let Some(keys) = &state.keys else { return Err(Failure::Provider) };
    if q.error.is_some() {
        return Err(Failure::Cancelled);
    }
    let sealed = cookie(headers, FLOW_COOKIE).ok_or(Failure::Flow)?;
    let flow: Flow = keys.verify_any(sealed, FLOW_ISSUER, &["exp", "iss"]).ok_or(Failure::Flow)?;
    let (Some(code), Some(returned)) = (q.code, q.state) else { return Err(Failure::Flow) };
    if Sha256::digest(returned.as_bytes()) != Sha256::digest(flow.state.as_bytes()) {
        return Err(Failure::Flow);
    }
    let (oidc, provider) = match flow.tenant {
        Some(tenant) => {
            #[expect(clippy::disallowed_methods, reason = "the tenant our own signed flow cookie names")]
            let tenant = hermes_core::TenantId::from_authenticated(tenant);
            let found = state.store.admin().sso_provider(tenant, state.secrets.as_ref()).await;
            let provider = found.map_err(|_| Failure::Provider)?.ok_or(Failure::NoProvider)?;
            (state.tenant_oidc.get(&state.config, &provider).map_err(|_| Failure::Provider)?, Some(provider))
        }
        None => (state.oidc.clone().ok_or(Failure::Provider)?, None),
    };
    let id_token = oidc.exchange(&code, &flow.verifier, &redirect_uri(state)).await?;
    let claims = oidc.verify(&id_token, &flow.nonce).await?;
    let email = claims.email.as_deref().filter(|e| !e.is_empty()).ok_or(Failure::Unverified)?;
    let asserted = Asserted {
        issuer: oidc.issuer(),
        subject: &claims.sub,
        email,
        email_verified: claims.email_verified,
        name: claims.name.as_deref(),
    };
    let person = match provider.as_ref() {
        Some(provider) => oidc_person::tenant_person(state, meta, provider, &asserted).await?,
        None => oidc_person::installation_person(state, &asserted).await?,
    };
    let person = oidc_person::vouch(state, meta, person, &asserted, provider.as_ref()).await?;
    state.store.admin().record_sign_in(person.id).await.map_err(|_| Failure::Provider)?;
    // A tenant's provider vouches for its own tenant only.
    let scope = provider.as_ref().map(|p| p.tenant);
    let agent = crate::admin::session::user_agent(headers);
    let (session, _) =
        crate::admin::session::issue_session(state, &person, scope, meta, &agent).await.map_err(|_| Failure::Flow)?;
    let mut response = Redirect::to(&flow.next).into_response();
    response.headers_mut().insert(header::SET_COOKIE, session);
    Ok(response)
}

#[utoipa::path(get, path = "/admin/v1/sign-in/options", tag = "admin: sign-in", security(()),
    responses((status = 200, description = "How one may sign in here", body = SignInOptions)))]
pub(crate) async fn options(State(state): State<AdminState>) -> axum::Json<SignInOptions> {
    let sso = state.oidc.as_ref().map(|o| SsoOption { label: o.label.clone(), start: "/admin/v1/oidc/start".into() });
    // Tenants with their own provider: the page asks for a work email, then starts there.
    let by_email = state.keys.is_some() && state.store.admin().any_tenant_sso().await.unwrap_or(false);
    axum::Json(SignInOptions { password: state.keys.is_some(), sso, sso_by_email: by_email })
}
