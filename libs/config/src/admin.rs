//! The admin plane: console sessions, sign-in links and their lifetimes, sign-in limits, and
//! how long the audit log is kept.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AdminConfig {
    /// Where people reach the console, such as `https://hermes.example.com`: sign-in and
    /// invitation links are made with it. Unset: `http://` and `http.bind`.
    pub public_url: Option<String>,
    /// The keys that sign console session tokens, as `kid:base64-secret` separated by commas
    /// (each secret at least 32 bytes). The first signs; every one listed verifies, so a key is
    /// rotated by putting the new one first and removing the old one `session_minutes` later.
    /// Unset: one key derived from `secrets.master_key`; with neither, the console is off.
    pub session_keys: Option<String>,
    /// How long a session token lives; an active console renews it as it goes.
    pub session_minutes: u64,
    /// A session unused this long ends.
    pub idle_minutes: u64,
    /// A session ends this long after sign-in, however active.
    pub max_session_hours: u64,
    /// How long a one-time sign-in link works.
    pub link_minutes: u64,
    /// How long an invitation link works.
    pub invitation_days: u64,
    /// Sign-in attempts per minute from one address (every account together).
    pub sign_in_per_minute: u32,
    /// The reverse proxies in front of the API pods, as CIDRs or addresses (`10.0.0.0/8`).
    /// A request from one of them is from the right-most `X-Forwarded-For` hop that is not
    /// itself one of them; from anywhere else the header is ignored, so a client cannot pick
    /// the address its sign-ins are counted against. Empty: the connection's address.
    pub trusted_proxies: Vec<String>,
    /// Wrong passwords in a row that lock an account...
    pub lockout_after: u32,
    /// ...for this long.
    pub lockout_minutes: u64,
    /// Audit entries older than this are deleted by the scheduler's retention sweep.
    pub audit_retention_days: u32,
    /// Single sign-on through an OpenID Connect provider, for the whole installation.
    pub oidc: OidcConfig,
}

/// An OpenID Connect provider (authorization code flow with PKCE). People sign in with it by
/// their verified email; someone without an account is asked for an invitation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct OidcConfig {
    /// The provider's issuer URL; its discovery document is read from
    /// `{issuer}/.well-known/openid-configuration`. Unset: no single sign-on.
    pub issuer: Option<String>,
    pub client_id: String,
    /// From the environment (`HERMES__ADMIN__OIDC__CLIENT_SECRET`) or a Kubernetes Secret.
    pub client_secret: Option<String>,
    pub scopes: String,
    /// What the sign-in button says.
    pub button_label: String,
    /// Accept ID tokens that do not say `email_verified: true`. Only for a provider that
    /// never sends the claim and whose users cannot choose their email: with one where they
    /// can (Entra ID's `email`), anyone could sign in as anyone.
    pub trust_unverified_email: bool,
}

impl Default for OidcConfig {
    fn default() -> Self {
        Self {
            issuer: None,
            client_id: String::new(),
            client_secret: None,
            scopes: "openid email profile".into(),
            button_label: "Single sign-on".into(),
            trust_unverified_email: false,
        }
    }
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            public_url: None,
            session_keys: None,
            session_minutes: 15,
            idle_minutes: 30,
            max_session_hours: 12,
            link_minutes: 60,
            invitation_days: 7,
            sign_in_per_minute: 20,
            trusted_proxies: Vec::new(),
            lockout_after: 5,
            lockout_minutes: 15,
            audit_retention_days: 400,
            oidc: OidcConfig::default(),
        }
    }
}
