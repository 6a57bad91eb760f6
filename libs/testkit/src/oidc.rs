//! A scripted OpenID Connect provider for tests: discovery, an authorization endpoint that
//! signs in whoever the test names (no login form), a token endpoint that checks the client's
//! secret, the redirect URI and the PKCE verifier (S256 only), and a JWKS. ID tokens are ES256
//! with a key made at start. Knobs let a test make it misbehave the way a hostile or broken
//! provider would.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

/// The client the provider knows.
pub const CLIENT_ID: &str = "hermes-console";
pub const CLIENT_SECRET: &str = "scripted-client-secret";

/// Who the next authorization signs in, and how the provider misbehaves.
#[derive(Debug, Clone)]
pub struct Login {
    pub email: String,
    pub email_verified: bool,
    /// Leave `email_verified` out of the ID token (as Entra ID does).
    pub omit_email_verified: bool,
    /// The ID token's `sub` (default: `sub-<email>`): another subject for the same email is a
    /// reassigned address.
    pub subject: Option<String>,
    pub name: String,
    /// Sign the ID token with a key the JWKS does not publish.
    pub foreign_key: bool,
    /// Put another nonce in the ID token than the one asked for.
    pub wrong_nonce: bool,
    /// Issue the ID token to another client (audience).
    pub wrong_audience: bool,
}

impl Login {
    pub fn as_user(email: &str) -> Self {
        Self {
            email: email.into(),
            email_verified: true,
            omit_email_verified: false,
            subject: None,
            name: "Scripted User".into(),
            foreign_key: false,
            wrong_nonce: false,
            wrong_audience: false,
        }
    }
}

struct Grant {
    challenge: String,
    redirect_uri: String,
    nonce: String,
    login: Login,
}

struct Inner {
    issuer: String,
    key: EcdsaKeyPair,
    stranger: EcdsaKeyPair,
    login: Mutex<Option<Login>>,
    grants: Mutex<HashMap<String, Grant>>,
    /// Token requests whose PKCE verifier did not match.
    refused_verifiers: Mutex<u32>,
    /// Discovery documents served.
    discoveries: std::sync::atomic::AtomicU32,
}

/// The running provider.
#[derive(Clone)]
pub struct OidcProvider {
    inner: Arc<Inner>,
    addr: SocketAddr,
}

fn new_key() -> std::io::Result<EcdsaKeyPair> {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
        .map_err(|e| std::io::Error::other(e.to_string()))
}

impl OidcProvider {
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner {
            issuer: format!("http://{addr}"),
            key: new_key()?,
            stranger: new_key()?,
            login: Mutex::new(None),
            grants: Mutex::new(HashMap::new()),
            refused_verifiers: Mutex::new(0),
            discoveries: std::sync::atomic::AtomicU32::new(0),
        });
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/jwks", get(jwks))
            .with_state(inner.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { inner, addr })
    }

    /// The issuer URL to configure.
    pub fn issuer(&self) -> String {
        self.inner.issuer.clone()
    }

    /// Whom the next authorization signs in (`None`: the user cancels, and the provider
    /// redirects back with `error=access_denied`).
    pub fn next_login(&self, login: Option<Login>) {
        *self.inner.login.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = login;
    }

    /// Token requests refused for a wrong PKCE verifier.
    pub fn refused_verifiers(&self) -> u32 {
        *self.inner.refused_verifiers.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many times the discovery document was read.
    pub fn discoveries(&self) -> u32 {
        self.inner.discoveries.load(std::sync::atomic::Ordering::Relaxed)
    }
}

async fn discovery(State(inner): State<Arc<Inner>>) -> Response {
    inner.discoveries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let issuer = &inner.issuer;
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
    }))
    .into_response()
}

async fn authorize(State(inner): State<Arc<Inner>>, Query(q): Query<HashMap<String, String>>) -> Response {
    let param = |k: &str| q.get(k).cloned().unwrap_or_default();
    if param("client_id") != CLIENT_ID || param("response_type") != "code" || param("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let redirect_uri = param("redirect_uri");
    let state = param("state");
    let login = inner.login.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    let Some(login) = login else {
        return Redirect::to(&format!("{redirect_uri}?error=access_denied&state={state}")).into_response();
    };
    let code = URL_SAFE_NO_PAD.encode(uuid_bytes());
    let grant =
        Grant { challenge: param("code_challenge"), redirect_uri: redirect_uri.clone(), nonce: param("nonce"), login };
    inner.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(code.clone(), grant);
    Redirect::to(&format!("{redirect_uri}?code={code}&state={state}")).into_response()
}

fn uuid_bytes() -> [u8; 16] {
    let mut raw = [0u8; 16];
    let _ = ring::rand::SecureRandom::fill(&SystemRandom::new(), &mut raw);
    raw
}

fn client_ok(headers: &HeaderMap, form: &HashMap<String, String>) -> bool {
    let basic = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok());
    match basic {
        Some(pair) => pair == format!("{CLIENT_ID}:{CLIENT_SECRET}"),
        None => {
            form.get("client_id").map(String::as_str) == Some(CLIENT_ID)
                && form.get("client_secret").map(String::as_str) == Some(CLIENT_SECRET)
        }
    }
}

async fn token(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes()).into_owned().collect();
    if !client_ok(&headers, &form) {
        return (StatusCode::UNAUTHORIZED, axum::Json(json!({"error": "invalid_client"}))).into_response();
    }
    let code = form.get("code").cloned().unwrap_or_default();
    let Some(grant) = inner.grants.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&code) else {
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_grant"}))).into_response();
    };
    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
    let challenge = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, verifier.as_bytes()));
    if challenge != grant.challenge || form.get("redirect_uri") != Some(&grant.redirect_uri) {
        *inner.refused_verifiers.lock().unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
        return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_grant"}))).into_response();
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let login = &grant.login;
    let mut claims = json!({
        "iss": inner.issuer,
        "sub": login.subject.clone().unwrap_or_else(|| format!("sub-{}", login.email)),
        "aud": if login.wrong_audience { "someone-else" } else { CLIENT_ID },
        "exp": now + 300,
        "iat": now,
        "nonce": if login.wrong_nonce { "not-the-nonce".to_owned() } else { grant.nonce.clone() },
        "email": login.email,
        "email_verified": login.email_verified,
        "name": login.name,
    });
    if login.omit_email_verified
        && let Some(claims) = claims.as_object_mut()
    {
        claims.remove("email_verified");
    }
    let key = if login.foreign_key { &inner.stranger } else { &inner.key };
    match sign(key, &claims) {
        Ok(id_token) => axum::Json(json!({
            "access_token": "scripted-access-token", "token_type": "Bearer", "expires_in": 300, "id_token": id_token,
        }))
        .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
    }
}

/// A compact JWS, ES256, with the provider's key id.
fn sign(key: &EcdsaKeyPair, claims: &Value) -> Result<String, String> {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "ES256", "typ": "JWT", "kid": "scripted-1"}).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    let sig = key.sign(&SystemRandom::new(), input.as_bytes()).map_err(|e| e.to_string())?;
    Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
}

async fn jwks(State(inner): State<Arc<Inner>>) -> Response {
    // An uncompressed P-256 point: 0x04, then x and y, 32 bytes each.
    let point = inner.key.public_key().as_ref();
    let (x, y) = (&point[1..33], &point[33..65]);
    axum::Json(json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": "scripted-1", "use": "sig", "alg": "ES256",
        "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
    }]}))
    .into_response()
}
