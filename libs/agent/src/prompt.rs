//! The stable system prompt: rendered once per session, stored on the session row and reused
//! byte for byte by every later turn (so provider prefix caches hit). Per-request layers go
//! in separate messages and are never stored in it.

use chrono::NaiveDate;

/// Identity used when the agent has no SOUL of its own.
pub const DEFAULT_IDENTITY: &str = "You are Hermes, an autonomous assistant hosted by Hermes Cloud for a team. \
You are helpful, direct and honest: you say what you did and what you could not do.";

const TOOL_GUIDANCE: &str = "You can call tools. Use them when they help you answer correctly instead of guessing; \
when a tool fails, read its error and try a corrected call. When you are done, answer in plain text.";

/// What goes into the stable prompt.
#[derive(Debug, Clone)]
pub struct PromptInputs<'a> {
    pub soul: Option<&'a str>,
    pub tool_names: &'a [&'a str],
    pub today: NaiveDate,
}

/// Renders the stable prompt.
pub fn render_stable_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut out = String::new();
    out.push_str(inputs.soul.map(str::trim).filter(|s| !s.is_empty()).unwrap_or(DEFAULT_IDENTITY));
    if !inputs.tool_names.is_empty() {
        out.push_str("\n\n");
        out.push_str(TOOL_GUIDANCE);
        out.push_str(" Available tools: ");
        out.push_str(&inputs.tool_names.join(", "));
        out.push('.');
    }
    out.push_str(&format!("\n\nToday's date: {}.", inputs.today.format("%Y-%m-%d")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn soul_replaces_the_default_identity_and_date_has_day_precision() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        let p = render_stable_prompt(&PromptInputs { soul: Some("You are Ada."), tool_names: &["terminal"], today });
        assert!(p.starts_with("You are Ada."));
        assert!(p.contains("Available tools: terminal."));
        assert!(p.ends_with("Today's date: 2026-11-30."));
        let p2 = render_stable_prompt(&PromptInputs { soul: None, tool_names: &[], today });
        assert!(p2.starts_with(DEFAULT_IDENTITY));
        assert!(!p2.contains("Available tools"));
    }
}
