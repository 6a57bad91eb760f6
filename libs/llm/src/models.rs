//! What we know about models by name: their context window, and whether they read only text.

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

/// Whether `model` is known to read only text (images must be described to it), from its name.
/// Models we do not know are taken to see images, so a new vision model works at once; an
/// agent whose model cannot sets `image_input_mode` to `text`.
pub fn reads_only_text(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    // Vision variants of text-only families: "-vl", "vision", "pixtral", "llava" in the name.
    if ["-vl", "vl-", "vision", "pixtral", "llava", "-omni"].iter().any(|v| name.contains(v)) {
        return false;
    }
    let text_only = [
        "deepseek",
        "gpt-3.5",
        "o1-mini",
        "o3-mini",
        "qwen2.5",
        "qwen3",
        "qwq",
        "llama-3",
        "llama3",
        "mistral-large",
        "mistral-7b",
        "mixtral",
        "codestral",
        "hermes",
        "glm-4.5",
        "kimi-k2",
        "minimax-m",
    ];
    text_only.iter().any(|prefix| name.starts_with(prefix))
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
    fn text_only_families_but_not_their_vision_variants_nor_unknown_models() {
        for text in [
            "deepseek-chat",
            "deepseek/deepseek-v3",
            "qwen3-235b-a22b",
            "meta-llama/llama-3.3-70b",
            "NousResearch/Hermes-4-70B",
        ] {
            assert!(super::reads_only_text(text), "{text}");
        }
        for sees in [
            "gpt-4o",
            "anthropic/claude-sonnet-4",
            "gemini-2.5-pro",
            "qwen2.5-vl-72b",
            "llama-3.2-90b-vision",
            "some-new-model",
        ] {
            assert!(!super::reads_only_text(sees), "{sees}");
        }
    }
}
