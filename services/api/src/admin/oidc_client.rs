//! A client of one OpenID Connect provider: its discovery document and signing keys (read
//! once, the keys again when it rotates them), the code-for-token exchange, and the ID token's
//! checks: signature against the published keys (RS*, PS*, ES*, EdDSA; never HMAC or none),
//! issuer, audience, expiry and nonce. Why a sign-in failed is named here too ([`Failure`]), for
//! the flow in [`crate::admin::oidc`] and the person checks in [`crate::admin::oidc_person`].

use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use tokio::sync::{OnceCell, RwLock};

use hermes_config::HermesConfig;

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
    /// What the console's sign-in button says (the installation's provider).
    pub(crate) label: String,
    http: reqwest::Client,
    metadata: OnceCell<Metadata>,
    keys: RwLock<Option<JwkSet>>,
}

/// The ID token's claims that matter here.
#[derive(Debug, Deserialize)]
pub(crate) struct IdClaims {
    pub sub: String,
    nonce: Option<String>,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub name: Option<String>,
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
    /// How the sign-in page names it (`?sso_error=`).
    pub(crate) fn code(self) -> &'static str {
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

    /// The provider's issuer, as its ID tokens name it.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    pub(crate) fn scopes(&self) -> &str {
        &self.scopes
    }

    /// Where the person is sent to sign in (from the discovery document, read once).
    pub(crate) async fn authorization_endpoint(&self) -> Result<&str, String> {
        Ok(&self.metadata().await?.authorization_endpoint)
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
    pub(crate) async fn verify(&self, id_token: &str, nonce: &str) -> Result<IdClaims, Failure> {
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

    /// Trades the code the provider sent back for its ID token.
    pub(crate) async fn exchange(&self, code: &str, verifier: &str, redirect_uri: &str) -> Result<String, Failure> {
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
