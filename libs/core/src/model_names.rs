//! What we know of a model from its name alone, where crates that must not link the model
//! client need it too (a new agent's default toolsets: `vision` only for one that can see).

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
