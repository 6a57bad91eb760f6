//! Single sign-on with an OpenID Connect provider: the authorization code flow with PKCE
//! (S256), a `state` and a `nonce`, the ID token's signature checked against the provider's
//! published keys (RS*, PS*, ES*, EdDSA; never HMAC or none), its issuer, audience, expiry and
//! nonce. The flow's secrets ride in a short-lived signed cookie, so any `api` pod can finish
//! a flow another began. People sign in by verified email.
//!
//! Two kinds of provider: the installation's (`admin.oidc`), for people who already have an
//! account; and a tenant's own, which an operator sets for the tenant's email domains
//! (`hermes_store::admin::sso`). Starting with a work email picks the tenant's provider for its
//! domain; that provider signs in only people at its domains, never an operator, and lets a
//! person new to the tenant join it when the tenant says so.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, RwLock};

pub(crate) use crate::admin::oidc_tenants::TenantProviders;

use hermes_config::HermesConfig;

use crate::admin::caller::{RequestMeta, cookie};
use crate::admin::oidc_person::{self, Asserted};
use crate::admin::state::AdminState;

/// The flow cookie's name, and how long a flow may take.
const FLOW_COOKIE: &str = "hermes_oidc";
const FLOW_SECONDS: u64 = 600;
const FLOW_ISSUER: &str = "hermes-console-oidc";
/// The most an identity provider's answers may weigh.
const MAX_BODY: usize = 256 * 1024;

/// The provider's endpoints, from its discovery document.
#[derive(Debug, Clone, Deserialize)]
struct Metadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
}

/// A configured provider, its endpoints and keys cached once read.
pub(crate) struct Oidc {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    scopes: String,
    pub(crate) label: String,
    http: reqwest::Client,
    metadata: OnceCell<Metadata>,
    keys: RwLock<Option<JwkSet>>,
}

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

/// The ID token's claims that matter here.
#[derive(Debug, Deserialize)]
struct IdClaims {
    sub: String,
    nonce: Option<String>,
    email: Option<String>,
    email_verified: Option<bool>,
    name: Option<String>,
}

/// Why a sign-in through the provider failed: shown on the sign-in page by its code.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failure {
    Cancelled,
    Flow,
    Provider,
    Token,
    Unverified,
    NoAccount,
    /// No provider signs in this email's domain.
    NoProvider,
    /// A tenant's provider vouched for an email outside its domains.
    WrongDomain,
    /// Operators sign in with the installation's sign-in, never a tenant's provider (and
    /// through the installation's provider only if they opted in).
    Operator,
    /// The account is bound to another identity at this provider.
    Identity,
    /// The email's domain signs in through its team's own provider.
    TeamProvider,
}

impl Failure {
    fn code(self) -> &'static str {
        match self {
            Failure::Cancelled => "cancelled",
            Failure::Flow => "flow",
            Failure::Provider => "provider",
            Failure::Token => "token",
            Failure::Unverified => "unverified",
            Failure::NoAccount => "no_account",
            Failure::NoProvider => "no_provider",
            Failure::WrongDomain => "wrong_domain",
            Failure::Operator => "operator",
            Failure::Identity => "identity",
            Failure::TeamProvider => "team_provider",
        }
    }
}

impl Oidc {
    /// The installation's provider, if one is configured.
    pub(crate) fn from_config(config: &HermesConfig) -> Result<Option<Arc<Self>>, reqwest::Error> {
        let oidc = &config.admin.oidc;
        let Some(issuer) = oidc.issuer.as_deref().map(str::trim).filter(|s| !s.is_empty()) else { return Ok(None) };
        let secret = oidc.client_secret.clone().filter(|s| !s.is_empty());
        Self::new(config, issuer, &oidc.client_id, secret, &oidc.scopes, &oidc.button_label).map(|o| Some(Arc::new(o)))
    }

    /// A tenant's provider, for one sign-in.
    pub(crate) fn for_tenant(
        config: &HermesConfig,
        p: &hermes_store::admin::SsoProvider,
    ) -> Result<Self, reqwest::Error> {
        Self::new(config, &p.issuer, &p.client_id, p.client_secret.clone(), &p.scopes, "")
    }

    fn new(
        config: &HermesConfig,
        issuer: &str,
        client_id: &str,
        client_secret: Option<String>,
        scopes: &str,
        label: &str,
    ) -> Result<Self, reqwest::Error> {
        // An operator named this host: it may live inside the cluster (Keycloak, Dex).
        let host = reqwest::Url::parse(issuer).ok().and_then(|u| u.host_str().map(str::to_owned));
        let trusted = config.outbound.trusted(&config.platforms).into_iter().chain(host);
        let policy = hermes_net_policy::outbound::Policy::trusting(trusted);
        let http = hermes_net_policy::outbound::client_for(
            std::sync::Arc::new(policy),
            Duration::from_secs(5),
            Duration::from_secs(15),
        )?;
        Ok(Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            client_id: client_id.to_owned(),
            client_secret,
            scopes: scopes.to_owned(),
            label: label.to_owned(),
            http,
            metadata: OnceCell::new(),
            keys: RwLock::new(None),
        })
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let resp = self.http.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("{url}: HTTP {}", resp.status()));
        }
        let body = hermes_net_policy::outbound::read_capped(resp, MAX_BODY).await.map_err(|e| format!("{url}: {e}"))?;
        serde_json::from_slice(&body).map_err(|e| format!("{url}: {e}"))
    }

    async fn metadata(&self) -> Result<&Metadata, String> {
        self.metadata
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.issuer);
                let found: Metadata = self.get_json(&url).await?;
                if found.issuer.trim_end_matches('/') != self.issuer {
                    return Err(format!(
                        "the discovery document names issuer {:?}, not {:?}",
                        found.issuer, self.issuer
                    ));
                }
                Ok(found)
            })
            .await
    }

    /// The key `kid` names, reading the provider's keys again once when it is unknown (the
    /// provider rotated them).
    async fn key(&self, kid: &str) -> Result<DecodingKey, String> {
        for refresh in [false, true] {
            if refresh || self.keys.read().await.is_none() {
                let meta = self.metadata().await?;
                let set: JwkSet = self.get_json(&meta.jwks_uri).await?;
                *self.keys.write().await = Some(set);
            }
            if let Some(jwk) = self.keys.read().await.as_ref().and_then(|set| set.find(kid)) {
                return DecodingKey::from_jwk(jwk).map_err(|e| e.to_string());
            }
        }
        Err(format!("the provider publishes no key {kid:?}"))
    }

    /// Checks an ID token: signed by the provider with an asymmetric algorithm, for us, from
    /// it, unexpired, with our nonce.
    async fn verify(&self, id_token: &str, nonce: &str) -> Result<IdClaims, Failure> {
        let header = jsonwebtoken::decode_header(id_token).map_err(|_| Failure::Token)?;
        let asymmetric = matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        );
        if !asymmetric {
            return Err(Failure::Token);
        }
        let key = self.key(header.kid.as_deref().unwrap_or_default()).await.map_err(|e| {
            tracing::warn!(error = %e, "identity provider key");
            Failure::Token
        })?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[self.issuer.as_str(), &format!("{}/", self.issuer)]);
        validation.set_audience(&[self.client_id.as_str()]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = 60;
        let claims = jsonwebtoken::decode::<IdClaims>(id_token, &key, &validation)
            .map_err(|e| {
                tracing::warn!(error = %e, "an ID token was refused");
                Failure::Token
            })?
            .claims;
        if claims.nonce.as_deref() != Some(nonce) {
            tracing::warn!("an ID token was refused: wrong nonce");
            return Err(Failure::Token);
        }
        Ok(claims)
    }

    async fn exchange(&self, code: &str, verifier: &str, redirect_uri: &str) -> Result<String, Failure> {
        let meta = self.metadata().await.map_err(|_| Failure::Provider)?;
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
            ("client_id", self.client_id.as_str()),
        ];
        let mut req = self.http.post(&meta.token_endpoint);
        if let Some(secret) = &self.client_secret {
            req = req.basic_auth(&self.client_id, Some(secret));
        }
        let resp = req.form(&form).send().await.map_err(|e| {
            tracing::warn!(error = %e, "identity provider token endpoint");
            Failure::Provider
        })?;
        if !resp.status().is_success() {
            tracing::warn!(status = %resp.status(), "the identity provider refused the code");
            return Err(Failure::Provider);
        }
        let body = hermes_net_policy::outbound::read_capped(resp, MAX_BODY).await.map_err(|_| Failure::Provider)?;
        let tokens: serde_json::Value = serde_json::from_slice(&body).map_err(|_| Failure::Provider)?;
        tokens["id_token"].as_str().map(str::to_owned).ok_or(Failure::Provider)
    }
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
        (status = 429, description = "Too many sign-in attempts from this address", body = crate::admin::schemas::ErrorBody),
        (status = 404, description = "No identity provider is configured", body = crate::admin::schemas::ErrorBody)))]
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
            let Some(domain) = crate::admin::sso::domain_of(email) else { return to_sign_in(Failure::NoProvider) };
            match state.store.sso_for_domain(&domain, state.secrets.as_ref()).await {
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
    let meta = match oidc.metadata().await {
        Ok(m) => m,
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
    let Ok(mut url) = reqwest::Url::parse(&meta.authorization_endpoint) else { return to_sign_in(Failure::Provider) };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &oidc.client_id)
        .append_pair("redirect_uri", &redirect_uri(&state))
        .append_pair("scope", &oidc.scopes)
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
            let found = state.store.sso_provider(tenant, state.secrets.as_ref()).await;
            let provider = found.map_err(|_| Failure::Provider)?.ok_or(Failure::NoProvider)?;
            (state.tenant_oidc.get(&state.config, &provider).map_err(|_| Failure::Provider)?, Some(provider))
        }
        None => (state.oidc.clone().ok_or(Failure::Provider)?, None),
    };
    let id_token = oidc.exchange(&code, &flow.verifier, &redirect_uri(state)).await?;
    let claims = oidc.verify(&id_token, &flow.nonce).await?;
    let email = claims.email.as_deref().filter(|e| !e.is_empty()).ok_or(Failure::Unverified)?;
    let asserted = Asserted {
        issuer: &oidc.issuer,
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
    state.store.record_sign_in(person.id).await.map_err(|_| Failure::Provider)?;
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
    responses((status = 200, description = "How one may sign in here", body = crate::admin::schemas::SignInOptions)))]
pub(crate) async fn options(State(state): State<AdminState>) -> axum::Json<serde_json::Value> {
    let sso = state.oidc.as_ref().map(|o| serde_json::json!({ "label": o.label, "start": "/admin/v1/oidc/start" }));
    // Tenants with their own provider: the page asks for a work email, then starts there.
    let by_email = state.keys.is_some() && state.store.any_tenant_sso().await.unwrap_or(false);
    axum::Json(serde_json::json!({ "password": state.keys.is_some(), "sso": sso, "sso_by_email": by_email }))
}
