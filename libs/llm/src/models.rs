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

#[cfg(test)]
mod tests {
    #[test]
    fn windows_by_name_with_a_default() {
        assert_eq!(super::context_window("anthropic/claude-sonnet-4"), 200_000);
        assert_eq!(super::context_window("gpt-4o-mini"), 128_000);
        assert_eq!(super::context_window("qwen2.5:7b"), 32_768);
        assert_eq!(super::context_window("some-new-model"), 128_000);
    }
}
