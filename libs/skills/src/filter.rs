//! Which skills an agent sees: those for its platform (sandboxes are Linux), whose required
//! toolsets and tools it has, minus fallbacks for toolsets or tools it has (they stand in for
//! what is missing), minus the ones it disabled or the curator archived.

use crate::Skill;

/// The platform skills run on: every sandbox backend is Linux.
pub const PLATFORM: &str = "linux";

/// What decides an agent's view.
#[derive(Debug, Clone, Default)]
pub struct Visibility<'a> {
    pub toolsets: &'a [String],
    pub tools: &'a [&'a str],
    pub disabled: &'a [String],
}

impl Visibility<'_> {
    pub fn shows(&self, skill: &Skill) -> bool {
        let has_toolset = |t: &String| self.toolsets.iter().any(|x| x == t);
        let has_tool = |t: &String| self.tools.contains(&t.as_str());
        (skill.platforms.is_empty() || skill.platforms.iter().any(|p| p == PLATFORM))
            && skill.requires_toolsets.iter().all(has_toolset)
            && skill.requires_tools.iter().all(has_tool)
            && !skill.fallback_for_toolsets.iter().any(has_toolset)
            && !skill.fallback_for_tools.iter().any(has_tool)
            && !self.disabled.contains(&skill.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(front: &str) -> Skill {
        crate::parse(&format!("---\nname: s\ndescription: d\n{front}---\nbody\n"), None).unwrap()
    }

    #[test]
    fn each_rule_hides_or_shows_a_skill() {
        let toolsets = vec!["terminal".to_owned(), "web".to_owned()];
        let tools = ["terminal", "web_search"];
        let none: Vec<String> = vec![];
        let agent = Visibility { toolsets: &toolsets, tools: &tools, disabled: &none };
        assert!(agent.shows(&skill("")), "no conditions: always shown");
        assert!(!agent.shows(&skill("platforms: [macos]\n")), "macOS-only skills are hidden on Linux sandboxes");
        assert!(agent.shows(&skill("platforms: [macos, linux]\n")));
        assert!(agent.shows(&skill("metadata:\n  hermes:\n    requires_toolsets: [terminal]\n")));
        assert!(!agent.shows(&skill("metadata:\n  hermes:\n    requires_toolsets: [code_execution]\n")));
        assert!(!agent.shows(&skill("requires_tools: [browser_navigate]\n")), "top-level conditions count too");
        assert!(
            !agent.shows(&skill("metadata:\n  hermes:\n    fallback_for_toolsets: [web]\n")),
            "a fallback hides when the real thing is there"
        );
        assert!(agent.shows(&skill("metadata:\n  hermes:\n    fallback_for_toolsets: [browser]\n")));
        assert!(!agent.shows(&skill("fallback_for_tools: [web_search]\n")));
        let disabled = vec!["s".to_owned()];
        assert!(!Visibility { disabled: &disabled, ..agent }.shows(&skill("")), "disabled by the agent");
    }
}
