//! How an agent's model is asked to answer: sampling (`temperature`, `top_p`), the output cap,
//! reasoning effort (upstream's `/reasoning`), Anthropic's thinking budget and priority
//! processing (upstream's `/fast`). An agent sets defaults (`agents.model_settings`), a session
//! may override them by chat command, and an API request may override them within the limits
//! its agent sets ([`ClientLimits`], `agents.client_limits`). Each transport maps them to its provider
//! (`libs/llm`); a setting a provider has no knob for is not sent.

use serde::{Deserialize, Serialize};

use crate::kinds::vocabulary;

vocabulary! {
    /// How hard a reasoning model thinks before it answers (OpenAI's `reasoning_effort`,
    /// OpenRouter's `reasoning.effort`, Anthropic's thinking budget or adaptive effort).
    ReasoningEffort ("reasoning effort") {
        /// No reasoning (thinking off).
        None = "none",
        Minimal = "minimal",
        Low = "low",
        Medium = "medium",
        High = "high",
        /// The most a model offers (`xhigh`, or `max`/`high` where that is the top).
        Xhigh = "xhigh",
    }
}

impl ReasoningEffort {
    /// Anthropic's `budget_tokens` for manual extended thinking (upstream's table);
    /// `None` turns thinking off.
    pub const fn thinking_budget(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::Minimal | Self::Low => Some(4_000),
            Self::Medium => Some(8_000),
            Self::High => Some(16_000),
            Self::Xhigh => Some(32_000),
        }
    }
}

/// The most `temperature` may be (OpenAI's range; Anthropic's is 0 to 1 and is clamped there).
pub const MAX_TEMPERATURE: f64 = 2.0;
/// The least thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u32 = 1_024;
/// The most output tokens anyone may ask for in one call.
pub const MAX_OUTPUT_TOKENS: u32 = 1_000_000;

/// Sampling and reasoning settings; unset fields take the next layer's (agent, then the
/// provider's defaults).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The output cap of each model call (continuations of a cut-off answer may raise it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Anthropic's manual thinking budget in tokens, instead of the effort's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Priority processing where the model offers it (OpenAI's `service_tier: priority`,
    /// Anthropic's fast mode); billed higher by the provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast: Option<bool>,
}

/// Settings as a row holds them, read by any release: fields this one does not know (a newer
/// release's) are left out, and a value that does not read is the default. API input stays
/// strict (`deny_unknown_fields`).
pub trait Stored: serde::de::DeserializeOwned + Serialize + Default {
    /// A value with every field set, whose keys are the fields this release knows.
    fn every_field() -> Self;

    fn from_stored(value: serde_json::Value) -> Self {
        Self::readable_fields(value)
    }

    /// Field by field: a field this release cannot read (a newer release's value) is left out,
    /// and the others are kept.
    fn readable_fields(value: serde_json::Value) -> Self {
        let known = serde_json::to_value(Self::every_field()).unwrap_or_default();
        let serde_json::Value::Object(fields) = value else { return Self::default() };
        let readable = |(k, v): &(String, serde_json::Value)| {
            let alone = serde_json::Value::Object([(k.clone(), v.clone())].into_iter().collect());
            known.get(k).is_some() && serde_json::from_value::<Self>(alone).is_ok()
        };
        let kept: serde_json::Map<String, serde_json::Value> = fields.into_iter().filter(readable).collect();
        serde_json::from_value(serde_json::Value::Object(kept)).unwrap_or_default()
    }
}

impl Stored for ModelSettings {
    fn every_field() -> Self {
        ModelSettings {
            temperature: Some(0.0),
            top_p: Some(1.0),
            max_output_tokens: Some(1),
            reasoning_effort: Some(ReasoningEffort::None),
            thinking_budget: Some(MIN_THINKING_BUDGET),
            fast: Some(false),
        }
    }
}

impl Stored for ClientLimits {
    fn every_field() -> Self {
        ClientLimits { max_output_tokens: Some(1), max_reasoning_effort: Some(ReasoningEffort::None), allow_fast: true }
    }
}

/// A setting out of its range, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {why}")]
pub struct BadSetting {
    pub field: &'static str,
    pub why: String,
}

fn bad<T>(field: &'static str, why: impl Into<String>) -> Result<T, BadSetting> {
    Err(BadSetting { field, why: why.into() })
}

impl ModelSettings {
    /// Refuses values no provider accepts.
    pub fn check(&self) -> Result<(), BadSetting> {
        if let Some(t) = self.temperature
            && !(0.0..=MAX_TEMPERATURE).contains(&t)
        {
            return bad("temperature", format!("must be 0 to {MAX_TEMPERATURE}"));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return bad("top_p", "must be above 0 and at most 1");
        }
        if let Some(n) = self.max_output_tokens
            && !(1..=MAX_OUTPUT_TOKENS).contains(&n)
        {
            return bad("max_output_tokens", format!("must be 1 to {MAX_OUTPUT_TOKENS}"));
        }
        if let Some(b) = self.thinking_budget
            && !(MIN_THINKING_BUDGET..=MAX_OUTPUT_TOKENS).contains(&b)
        {
            return bad("thinking_budget", format!("must be {MIN_THINKING_BUDGET} to {MAX_OUTPUT_TOKENS}"));
        }
        Ok(())
    }

    /// These settings with every field `over` sets taken from it.
    pub fn overlaid(self, over: &ModelSettings) -> ModelSettings {
        ModelSettings {
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            max_output_tokens: over.max_output_tokens.or(self.max_output_tokens),
            reasoning_effort: over.reasoning_effort.or(self.reasoning_effort),
            thinking_budget: over.thinking_budget.or(self.thinking_budget),
            fast: over.fast.or(self.fast),
        }
    }

    /// Whether nothing is set.
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }

    /// The thinking budget asked for: the explicit one, else the effort's; `None`: no
    /// thinking (an effort of `none` turns it off even with a budget).
    pub fn thinking(&self) -> Option<u32> {
        match self.reasoning_effort {
            Some(ReasoningEffort::None) => None,
            Some(effort) => self.thinking_budget.or(effort.thinking_budget()),
            None => self.thinking_budget,
        }
    }
}

/// What API callers may ask of an agent per request: unset, the agent's own settings bound
/// nothing more than the provider does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientLimits {
    /// The most output tokens a request may ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The highest reasoning effort a request may ask for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_reasoning_effort: Option<ReasoningEffort>,
    /// Whether requests may ask for priority processing (billed higher).
    #[serde(default)]
    pub allow_fast: bool,
}

impl ClientLimits {
    /// Refuses limits out of range.
    pub fn check(&self) -> Result<(), BadSetting> {
        if let Some(n) = self.max_output_tokens
            && !(1..=MAX_OUTPUT_TOKENS).contains(&n)
        {
            return bad("max_output_tokens", format!("must be 1 to {MAX_OUTPUT_TOKENS}"));
        }
        Ok(())
    }

    /// The most reasoning callers may ask of an agent whose own settings are `agent`: the
    /// limit set, else the agent's own effort, else `medium` (so an agent nobody limited is not
    /// raised to `xhigh` by any caller).
    pub fn effort_ceiling(&self, agent: &ModelSettings) -> ReasoningEffort {
        self.max_reasoning_effort.or(agent.reasoning_effort).unwrap_or(ReasoningEffort::Medium)
    }

    /// Whether callers may ask for priority processing: allowed, or the agent's own setting.
    pub fn fast_allowed(&self, agent: &ModelSettings) -> bool {
        self.allow_fast || agent.fast == Some(true)
    }

    /// `asked` (stored before the limits changed) brought within these limits.
    pub fn clamp(&self, agent: &ModelSettings, mut asked: ModelSettings) -> ModelSettings {
        let ceiling = self.effort_ceiling(agent);
        asked.reasoning_effort = asked.reasoning_effort.map(|e| e.min(ceiling));
        if asked.fast == Some(true) && !self.fast_allowed(agent) {
            asked.fast = None;
        }
        if let (Some(most), Some(n)) = (self.max_output_tokens, asked.max_output_tokens) {
            asked.max_output_tokens = Some(n.min(most));
        }
        asked.thinking_budget = None;
        asked
    }

    /// The settings of a request that asked for `asked` of an agent whose own settings are
    /// `defaults`, if these limits allow it. Fields are named as the API names them.
    pub fn allow(&self, defaults: &ModelSettings, asked: &ModelSettings) -> Result<ModelSettings, BadSetting> {
        asked.check()?;
        if let (Some(most), Some(n)) = (self.max_output_tokens, asked.max_output_tokens)
            && n > most
        {
            return bad("max_tokens", format!("this agent allows at most {most}"));
        }
        let ceiling = self.effort_ceiling(defaults);
        if asked.reasoning_effort.is_some_and(|effort| effort > ceiling) {
            return bad("reasoning_effort", format!("this agent allows at most `{ceiling}`"));
        }
        if asked.fast == Some(true) && !self.fast_allowed(defaults) {
            return bad("service_tier", "this agent does not allow priority processing");
        }
        if asked.thinking_budget.is_some() {
            return bad("thinking_budget", "set by the agent only");
        }
        Ok(defaults.overlaid(asked))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_overlaid_and_held_to_the_agents_limits() {
        let defaults = ModelSettings {
            temperature: Some(0.2),
            reasoning_effort: Some(ReasoningEffort::Low),
            ..Default::default()
        };
        let limits = ClientLimits {
            max_output_tokens: Some(4_000),
            max_reasoning_effort: Some(ReasoningEffort::Medium),
            allow_fast: false,
        };
        // Unlimited, callers may not raise the effort beyond the agent's own.
        let open = ClientLimits::default();
        let high = ModelSettings { reasoning_effort: Some(ReasoningEffort::High), ..Default::default() };
        assert_eq!(open.allow(&defaults, &high).unwrap_err().field, "reasoning_effort");
        assert_eq!(open.clamp(&defaults, high).reasoning_effort, Some(ReasoningEffort::Low));
        assert_eq!(open.effort_ceiling(&ModelSettings::default()), ReasoningEffort::Medium);
        let asked = ModelSettings { top_p: Some(0.9), max_output_tokens: Some(1_000), ..Default::default() };
        let got = limits.allow(&defaults, &asked).unwrap();
        assert_eq!((got.temperature, got.top_p, got.max_output_tokens), (Some(0.2), Some(0.9), Some(1_000)));
        assert_eq!(got.reasoning_effort, Some(ReasoningEffort::Low), "the agent's default stays");
        for (asked, field) in [
            (ModelSettings { max_output_tokens: Some(5_000), ..Default::default() }, "max_tokens"),
            (ModelSettings { reasoning_effort: Some(ReasoningEffort::High), ..Default::default() }, "reasoning_effort"),
            (ModelSettings { fast: Some(true), ..Default::default() }, "service_tier"),
            (ModelSettings { temperature: Some(2.5), ..Default::default() }, "temperature"),
            (ModelSettings { top_p: Some(0.0), ..Default::default() }, "top_p"),
        ] {
            assert_eq!(limits.allow(&defaults, &asked).unwrap_err().field, field);
        }
        let stored: ModelSettings =
            serde_json::from_value(serde_json::json!({"temperature": 0.2, "reasoning_effort": "low"})).unwrap();
        assert_eq!(stored, defaults);
        let err = serde_json::from_value::<ModelSettings>(serde_json::json!({"temprature": 1})).unwrap_err();
        assert!(err.to_string().contains("unknown field `temprature`"), "{err}");
        // A row a newer release wrote still reads, its new field left out.
        let newer = serde_json::json!({"temperature": 0.2, "reasoning_effort": "low", "verbosity": "high"});
        assert_eq!(ModelSettings::from_stored(newer), defaults);
        assert_eq!(ClientLimits::from_stored(serde_json::json!("garbage")), ClientLimits::default());
    }

    #[test]
    fn thinking_follows_the_effort_unless_a_budget_is_set_and_none_turns_it_off() {
        let with =
            |effort, budget| ModelSettings { reasoning_effort: effort, thinking_budget: budget, ..Default::default() };
        assert_eq!(with(Some(ReasoningEffort::High), None).thinking(), Some(16_000));
        assert_eq!(with(Some(ReasoningEffort::High), Some(2_048)).thinking(), Some(2_048));
        assert_eq!(with(None, Some(3_000)).thinking(), Some(3_000));
        assert_eq!(with(Some(ReasoningEffort::None), Some(3_000)).thinking(), None);
        assert_eq!(with(None, None).thinking(), None);
    }
}
