//! What we know about models by name: their context window, and whether they read only text
//! (that one in `hermes_core`, where choosing a new agent's toolsets needs it too).

/// The context window of `model` in tokens, from its name (provider prefixes ignored);
/// 128K for models we do not know.
pub fn context_window(model: &str) -> u64 {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    let table: &[(&str, u64)] = &[
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-3.5", 16_385),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gemini", 1_048_576),
        ("llama-4", 1_000_000),
        ("llama-3", 128_000),
        ("qwen3", 131_072),
        ("qwen2.5", 32_768),
        ("deepseek", 128_000),
        ("mistral-large", 128_000),
        ("hermes", 128_000),
    ];
    table.iter().find(|(prefix, _)| name.starts_with(prefix)).map_or(128_000, |(_, w)| *w)
}

pub use hermes_core::model_names::reads_only_text;

/// `model` without a vendor prefix (`anthropic/claude-opus-4-6` → `claude-opus-4-6`), lower case.
fn bare(model: &str) -> String {
    let m = model.to_ascii_lowercase();
    m.rsplit('/').next().unwrap_or(&m).to_owned()
}

/// Whether OpenAI offers `model` priority processing (`service_tier: priority`): its
/// flagship families, not the Codex ones (upstream's rule).
pub fn offers_priority_tier(model: &str) -> bool {
    let m = bare(model);
    !m.contains("codex") && ["gpt-", "o1", "o3", "o4"].iter().any(|p| m.starts_with(p))
}

/// Whether `model` is an OpenAI reasoning model (which reasons unasked, so its encrypted
/// reasoning must be asked for to survive between calls).
pub fn reasons_by_default(model: &str) -> bool {
    let m = bare(model);
    !m.starts_with("gpt-5-chat") && ["o1", "o3", "o4", "gpt-5", "codex"].iter().any(|p| m.starts_with(p))
}

/// Which knobs OpenAI-form servers take for `model` at `provider`: `(sampling, reasoning)`.
/// OpenAI refuses sampling for its reasoning models and reasoning for the others; any other
/// server is sent what was asked.
pub fn openai_knobs(provider: &str, model: &str) -> (bool, bool) {
    if provider == "openai" {
        let reasons = reasons_by_default(model);
        (!reasons, reasons)
    } else {
        (true, true)
    }
}

/// How a model on Anthropic's Messages API is asked to think.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingStyle {
    /// `thinking: {type: enabled, budget_tokens}` (Claude before 4.6, and non-Claude models
    /// speaking the API).
    Budget,
    /// `thinking: {type: adaptive}` with `output_config.effort` (Claude 4.6 and later: unknown
    /// Claude models are taken to be new, as upstream does).
    Adaptive,
}

/// Claude families that think only with a budget.
const BUDGET_THINKING_CLAUDE: &[&str] = &[
    "claude-3",
    "claude-opus-4-0",
    "claude-opus-4.0",
    "claude-opus-4-1",
    "claude-opus-4.1",
    "claude-sonnet-4-0",
    "claude-sonnet-4.0",
    "claude-opus-4-2025",
    "claude-sonnet-4-2025",
    "claude-opus-4-5",
    "claude-opus-4.5",
    "claude-sonnet-4-5",
    "claude-sonnet-4.5",
    "claude-haiku-4-5",
    "claude-haiku-4.5",
];

/// How `model` thinks on the Messages API.
pub fn thinking_style(model: &str) -> ThinkingStyle {
    let m = bare(model);
    if m.starts_with("claude") && !BUDGET_THINKING_CLAUDE.iter().any(|p| m.contains(p)) {
        ThinkingStyle::Adaptive
    } else {
        ThinkingStyle::Budget
    }
}

/// Whether `model` is a Claude model (which OpenAI-compatible gateways cache only when asked,
/// with Anthropic's `cache_control` breakpoints).
pub fn is_claude(model: &str) -> bool {
    bare(model).starts_with("claude")
}

/// Whether `model` is of Claude's 4.6 generation (adaptive thinking, but still sampling, and
/// no `xhigh` effort).
pub fn is_claude_4_6(model: &str) -> bool {
    let m = bare(model);
    m.starts_with("claude") && (m.contains("4-6") || m.contains("4.6"))
}

/// Whether `model` takes Anthropic's fast mode (`speed: fast`): Opus 4.6 only.
pub fn offers_fast_mode(model: &str) -> bool {
    let m = bare(model);
    m.contains("opus-4-6") || m.contains("opus-4.6")
}

#[cfg(test)]
mod tests {
    #[test]
    fn windows_by_name_with_a_default() {
        assert_eq!(super::context_window("anthropic/claude-sonnet-4"), 200_000);
        assert_eq!(super::context_window("gpt-4o-mini"), 128_000);
        assert_eq!(super::context_window("qwen2.5:7b"), 32_768);
        assert_eq!(super::context_window("some-new-model"), 128_000);
    }

    #[test]
    fn model_families_by_name() {
        use super::ThinkingStyle::*;
        assert_eq!(super::thinking_style("claude-sonnet-4-5-20250929"), Budget);
        assert_eq!(super::thinking_style("anthropic/claude-opus-4.6"), Adaptive);
        assert_eq!(super::thinking_style("claude-fable-5"), Adaptive, "unknown Claude models are new ones");
        assert_eq!(super::thinking_style("MiniMax-M2"), Budget);
        assert!(super::offers_priority_tier("gpt-5.1") && super::offers_priority_tier("openai/o3"));
        assert!(!super::offers_priority_tier("gpt-5-codex") && !super::offers_priority_tier("claude-opus-4-6"));
        assert!(super::offers_fast_mode("claude-opus-4-6") && !super::offers_fast_mode("claude-opus-4-7"));
    }
}
