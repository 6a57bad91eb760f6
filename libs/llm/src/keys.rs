//! Where provider keys come from, and the rule that a key only ever goes to the hosts it was
//! issued for.

use std::future::Future;
use std::time::Duration;

/// A provider key, with the hosts it may be sent to.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// Stable id in the pool (for cooldowns and usage counts).
    pub id: String,
    pub secret: String,
    /// Host names (`api.openai.com`) or wildcards (`*.openai.azure.com`).
    pub allowed_hosts: Vec<String>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("id", &self.id)
            .field("allowed_hosts", &self.allowed_hosts)
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// Whether this key may be sent to `host`.
    pub fn allows(&self, host: &str) -> bool {
        hermes_core::hosts::allowed(&self.allowed_hosts, host)
    }
}

/// The hosts a well-known provider's keys belong to; `None` for custom providers, whose keys
/// are bound to the host they were configured with.
pub fn provider_hosts(provider: &str) -> Option<&'static [&'static str]> {
    Some(match provider {
        "openai" => &["api.openai.com"],
        "openrouter" => &[hermes_core::provider_routing::OPENROUTER_HOST],
        "anthropic" => &["api.anthropic.com"],
        "google" => &["generativelanguage.googleapis.com"],
        "groq" => &["api.groq.com"],
        "mistral" => &["api.mistral.ai"],
        "deepseek" => &["api.deepseek.com"],
        "together" => &["api.together.xyz"],
        "vercel" => &["ai-gateway.vercel.sh"],
        // The web toolset's services (their keys go into pools of these names too).
        "firecrawl" => &["api.firecrawl.dev"],
        "tavily" => &["api.tavily.com"],
        "exa" => &["api.exa.ai"],
        "brave" => &["api.search.brave.com"],
        // The media services' (image generation, speech).
        "fal" => &["fal.run", "*.fal.run"],
        "elevenlabs" => &["api.elevenlabs.io"],
        _ => return None,
    })
}

/// The well-known providers, by the name their pools have.
const KNOWN_PROVIDERS: [&str; 9] =
    ["openai", "openrouter", "anthropic", "google", "groq", "mistral", "deepseek", "together", "vercel"];

/// `provider` as a metric label: a well-known provider's name, else `custom` (a custom
/// provider's pool names its host, which tenants choose: a label per host would not stay
/// bounded, and would tell one tenant's setup to whoever reads the metrics).
pub fn provider_label(provider: &str) -> &'static str {
    KNOWN_PROVIDERS.iter().find(|known| **known == provider).copied().unwrap_or("custom")
}

/// The pool a base URL belongs to: a well-known provider by its host, else `custom:<host>`.
pub fn provider_for_url(base_url: &str) -> String {
    let host =
        reqwest::Url::parse(base_url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase)).unwrap_or_default();
    for name in KNOWN_PROVIDERS {
        if provider_hosts(name).is_some_and(|hosts| hosts.contains(&host.as_str())) {
            return name.to_owned();
        }
    }
    format!("custom:{host}")
}

/// Supplies keys from a tenant's pools (shared by every worker).
pub trait KeySource: Send + Sync {
    /// A usable key for `provider`, not one of `exclude`. `Ok(None)` when the provider needs
    /// no key; an error when it has keys but none is usable now (all cooling down or dead).
    fn acquire(
        &self,
        provider: &str,
        exclude: &[String],
    ) -> impl Future<Output = Result<Option<Credential>, crate::LlmError>> + Send;

    /// Takes `key_id` out of rotation for `cooldown`, or for good when `None`.
    fn report(&self, provider: &str, key_id: &str, cooldown: Option<Duration>) -> impl Future<Output = ()> + Send;
}

/// Keys for providers that need none, or one fixed key (tests, single-key setups).
#[derive(Debug, Clone, Default)]
pub struct StaticKeys(pub Option<Credential>);

impl KeySource for StaticKeys {
    async fn acquire(&self, _provider: &str, exclude: &[String]) -> Result<Option<Credential>, crate::LlmError> {
        Ok(self.0.clone().filter(|c| !exclude.contains(&c.id)))
    }

    async fn report(&self, _provider: &str, _key_id: &str, _cooldown: Option<Duration>) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_go_only_to_their_hosts() {
        let key = Credential {
            id: "k".into(),
            secret: "s".into(),
            allowed_hosts: vec!["api.openai.com".into(), "*.example.com".into()],
        };
        assert!(key.allows("api.openai.com"));
        assert!(key.allows("API.OpenAI.com"));
        assert!(key.allows("eu.example.com"));
        assert!(!key.allows("example.com"));
        assert!(!key.allows("api.openai.com.evil.io"));
        assert!(!key.allows("openrouter.ai"));
        assert!(
            !format!("{key:?}").contains('s') || !format!("{key:?}").contains("secret: "),
            "the secret is never printed"
        );
    }

    #[test]
    fn base_urls_map_to_their_pools() {
        assert_eq!(provider_for_url("https://api.openai.com/v1"), "openai");
        assert_eq!(provider_for_url("https://openrouter.ai/api/v1"), "openrouter");
        assert_eq!(provider_for_url("http://127.0.0.1:11434/v1"), "custom:127.0.0.1");
        assert_eq!(provider_label("openrouter"), "openrouter");
        assert_eq!(provider_label("custom:127.0.0.1"), "custom", "no tenant's host in a label");
        assert_eq!(provider_label("anything-else"), "custom");
    }
}
