//! Where OpenRouter may send an agent's calls (upstream's `provider_routing`): providers to try
//! in order, to allow only or to ignore, what to sort by, whether to fall back to others,
//! whether providers that keep prompts may serve it, and whether a provider must honour every
//! parameter. Sent as OpenRouter's `provider` object (`libs/llm/src/openai.rs`); other
//! endpoints have no such knob and are sent nothing.

use serde::{Deserialize, Serialize};

use crate::kinds::vocabulary;
use crate::model_settings::{BadSetting, Stored};

vocabulary! {
    /// What OpenRouter ranks providers by when no `order` decides.
    ProviderSort ("provider sort") {
        Price = "price",
        Throughput = "throughput",
        Latency = "latency",
    }
}

vocabulary! {
    /// Whether providers that may store or train on prompts may serve the call.
    DataCollection ("data collection") {
        Allow = "allow",
        Deny = "deny",
    }
}

/// OpenRouter's host: the only one routing is sent to (and whose keys are `openrouter`'s).
pub const OPENROUTER_HOST: &str = "openrouter.ai";

/// The most providers one list may name.
pub const MAX_PROVIDERS: usize = 32;

/// OpenRouter's provider preferences for one agent; empty: OpenRouter's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderRouting {
    /// Providers to try first, in this order (OpenRouter slugs such as `anthropic`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order: Vec<String>,
    /// The only providers that may serve the call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// Providers that may never serve it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<ProviderSort>,
    /// Whether providers beyond `order` may serve the call when those fail (OpenRouter: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_fallbacks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_collection: Option<DataCollection>,
    /// Only providers that honour every parameter sent (tools, reasoning, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_parameters: Option<bool>,
}

impl ProviderRouting {
    /// Whether nothing is asked (OpenRouter's defaults).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// What every call of the agent to OpenRouter keeps, side tasks included: the promise about
    /// who may keep its prompts. Orders and allow-lists name providers of the main model and
    /// could leave a side task's model with none.
    pub fn for_side_tasks(&self) -> Self {
        Self { data_collection: self.data_collection, ..Self::default() }
    }

    /// Refuses provider names OpenRouter could not know and lists that contradict each other.
    pub fn check(&self) -> Result<(), BadSetting> {
        let lists = [("order", &self.order), ("only", &self.only), ("ignore", &self.ignore)];
        for (field, names) in lists {
            if names.len() > MAX_PROVIDERS {
                return Err(BadSetting { field, why: format!("names at most {MAX_PROVIDERS} providers") });
            }
            for (i, name) in names.iter().enumerate() {
                if !is_slug(name) {
                    let why =
                        format!("{name:?} is not a provider slug (lower-case letters, digits, '-', '_', '.', '/')");
                    return Err(BadSetting { field, why });
                }
                if names[..i].contains(name) {
                    return Err(BadSetting { field, why: format!("names {name:?} twice") });
                }
            }
        }
        let ignored = |name: &&String| self.ignore.contains(name);
        if let Some(name) = self.only.iter().chain(&self.order).find(ignored) {
            return Err(BadSetting { field: "ignore", why: format!("{name:?} is also in `only` or `order`") });
        }
        Ok(())
    }
}

/// An OpenRouter provider slug (`anthropic`, `google-vertex`, `deepinfra/fp8`).
fn is_slug(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_./".contains(&b))
}

impl Stored for ProviderRouting {
    /// Field by field, failing closed: a `data_collection` this release cannot read is `deny`.
    fn from_stored(value: serde_json::Value) -> Self {
        let asked_privacy = value.get("data_collection").is_some_and(|v| !v.is_null());
        let mut routing = Self::readable_fields(value);
        if asked_privacy && routing.data_collection.is_none() {
            routing.data_collection = Some(DataCollection::Deny);
        }
        routing
    }

    fn every_field() -> Self {
        let one = || vec!["x".to_owned()];
        ProviderRouting {
            order: one(),
            only: one(),
            ignore: one(),
            sort: Some(ProviderSort::Price),
            allow_fallbacks: Some(true),
            data_collection: Some(DataCollection::Deny),
            require_parameters: Some(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routing(json: serde_json::Value) -> ProviderRouting {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn names_must_be_slugs_once_each_and_never_both_wanted_and_ignored() {
        let good = routing(serde_json::json!({
            "order": ["anthropic", "google-vertex"], "only": ["anthropic", "google-vertex", "deepinfra/fp8"],
            "ignore": ["together"], "sort": "throughput", "allow_fallbacks": false,
            "data_collection": "deny", "require_parameters": true
        }));
        assert_eq!(good.check(), Ok(()));
        for (bad, field) in [
            (serde_json::json!({"order": ["Anthropic"]}), "order"),
            (serde_json::json!({"only": [""]}), "only"),
            (serde_json::json!({"ignore": ["a b"]}), "ignore"),
            (serde_json::json!({"order": ["openai", "openai"]}), "order"),
            (serde_json::json!({"only": ["openai"], "ignore": ["openai"]}), "ignore"),
            (serde_json::json!({"order": (0..33).map(|i| format!("p{i}")).collect::<Vec<_>>()}), "order"),
        ] {
            assert_eq!(routing(bad.clone()).check().unwrap_err().field, field, "{bad}");
        }
        let err = serde_json::from_value::<ProviderRouting>(serde_json::json!({"sort": "cheapest"})).unwrap_err();
        assert!(err.to_string().contains("`price`, `throughput`, `latency`"), "{err}");
        let err = serde_json::from_value::<ProviderRouting>(serde_json::json!({"providers": ["x"]})).unwrap_err();
        assert!(err.to_string().contains("unknown field `providers`"), "{err}");
    }

    #[test]
    fn side_tasks_keep_only_the_data_collection_promise() {
        let full = routing(serde_json::json!({"only": ["anthropic"], "sort": "price", "data_collection": "deny"}));
        assert_eq!(full.for_side_tasks(), routing(serde_json::json!({"data_collection": "deny"})));
        assert!(routing(serde_json::json!({"order": ["openai"]})).for_side_tasks().is_empty());
        let newer = serde_json::json!({"sort": "latency", "zdr": true});
        assert_eq!(ProviderRouting::from_stored(newer), routing(serde_json::json!({"sort": "latency"})));
        // A newer value of one field loses only that field; privacy it cannot read is refused.
        let newer = serde_json::json!({"sort": "quality", "only": ["anthropic"], "data_collection": "zdr-only"});
        assert_eq!(
            ProviderRouting::from_stored(newer),
            routing(serde_json::json!({"only": ["anthropic"], "data_collection": "deny"}))
        );
    }
}
