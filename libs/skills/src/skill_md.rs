//! `SKILL.md`: YAML frontmatter between `---` lines, then Markdown. The frontmatter follows
//! agentskills.io with Hermes's extensions under `metadata.hermes` (tags, category, config,
//! requires/fallback conditions; those conditions are also accepted at the top level).
//! Anything malformed is refused with a message that says where and what to fix.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest description (agentskills.io allows 1,024 characters).
pub const MAX_DESCRIPTION_CHARS: usize = 1_024;
pub const MAX_NAME_CHARS: usize = 64;
/// Largest SKILL.md accepted.
pub const MAX_SKILL_BYTES: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("SKILL.md must start with a YAML frontmatter block between two '---' lines")]
    NoFrontmatter,
    #[error("the frontmatter is not valid YAML: {0}")]
    Yaml(String),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ConfigEntry {
    pub key: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub default: Option<Value>,
    #[serde(default)]
    pub prompt: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct EnvVar {
    pub name: String,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub help: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
struct Conditions {
    #[serde(default)]
    requires_toolsets: Vec<String>,
    #[serde(default)]
    fallback_for_toolsets: Vec<String>,
    #[serde(default)]
    requires_tools: Vec<String>,
    #[serde(default)]
    fallback_for_tools: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct HermesMeta {
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    config: Vec<ConfigEntry>,
    #[serde(flatten)]
    conditions: Conditions,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Metadata {
    #[serde(default)]
    hermes: HermesMeta,
}

#[derive(Debug, Clone, Deserialize)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
    #[serde(default)]
    version: Option<Value>,
    #[serde(default)]
    platforms: Vec<String>,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    required_environment_variables: Vec<EnvVar>,
    #[serde(flatten)]
    conditions: Conditions,
}

/// A parsed, valid skill (stored as JSON without its body, for filtering).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub version: Option<String>,
    pub category: String,
    pub tags: Vec<String>,
    /// OS names (`linux`, `macos`, `windows`); empty: all.
    pub platforms: Vec<String>,
    pub requires_toolsets: Vec<String>,
    pub fallback_for_toolsets: Vec<String>,
    pub requires_tools: Vec<String>,
    pub fallback_for_tools: Vec<String>,
    pub config: Vec<ConfigEntry>,
    pub required_environment_variables: Vec<EnvVar>,
    /// The Markdown after the frontmatter.
    #[serde(skip, default)]
    pub body: String,
}

/// Whether `name` is a valid skill name: lowercase letters, digits and single hyphens, starting
/// with a letter or digit.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

fn split(text: &str) -> Result<(&str, &str), SkillError> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let rest = text.strip_prefix("---").ok_or(SkillError::NoFrontmatter)?;
    let rest = rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n')).ok_or(SkillError::NoFrontmatter)?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = &rest[offset + line.len()..];
            return Ok((&rest[..offset], body));
        }
        offset += line.len();
    }
    Err(SkillError::NoFrontmatter)
}

fn clean_list(items: Vec<String>) -> Vec<String> {
    items.into_iter().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()
}

/// Parses and validates a SKILL.md. `category` is used when the frontmatter names none.
pub fn parse(text: &str, category: Option<&str>) -> Result<Skill, SkillError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(SkillError::Invalid(format!(
            "SKILL.md is over {MAX_SKILL_BYTES} bytes; move detail into references/"
        )));
    }
    let (yaml, body) = split(text)?;
    let front: Frontmatter = serde_saphyr::from_str(yaml).map_err(|e| SkillError::Yaml(e.to_string()))?;
    let name = front.name.map(|n| n.trim().to_owned()).unwrap_or_default();
    if !valid_name(&name) {
        return Err(SkillError::Invalid(format!(
            "name {name:?} must be 1-{MAX_NAME_CHARS} lowercase letters, digits and single hyphens (e.g. code-review)"
        )));
    }
    let description = front.description.map(|d| d.split_whitespace().collect::<Vec<_>>().join(" ")).unwrap_or_default();
    if description.is_empty() {
        return Err(SkillError::Invalid("description is required: say what the skill does and when to use it".into()));
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(SkillError::Invalid(format!("description is over {MAX_DESCRIPTION_CHARS} characters")));
    }
    if body.trim().is_empty() {
        return Err(SkillError::Invalid("the skill has no instructions after the frontmatter".into()));
    }
    let hermes = front.metadata.hermes;
    let category = hermes
        .category
        .or_else(|| category.map(str::to_owned))
        .map(|c| c.trim().to_lowercase())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "general".into());
    if !valid_name(&category) {
        return Err(SkillError::Invalid(format!(
            "category {category:?} must be lowercase letters, digits and hyphens"
        )));
    }
    let version = match front.version {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    };
    let pick = |a: Vec<String>, b: Vec<String>| clean_list(if a.is_empty() { b } else { a });
    let (top, meta) = (front.conditions, hermes.conditions);
    if let Some(bad) = hermes.config.iter().find(|c| c.key.trim().is_empty()) {
        return Err(SkillError::Invalid(format!("a metadata.hermes.config entry has no key: {bad:?}")));
    }
    if let Some(bad) = front.required_environment_variables.iter().find(|v| !is_env_name(&v.name)) {
        return Err(SkillError::Invalid(format!(
            "required_environment_variables: {:?} is not a variable name",
            bad.name
        )));
    }
    Ok(Skill {
        name,
        description,
        version,
        category,
        tags: clean_list(hermes.tags),
        platforms: clean_list(front.platforms).into_iter().map(|p| p.to_lowercase()).collect(),
        requires_toolsets: pick(meta.requires_toolsets, top.requires_toolsets),
        fallback_for_toolsets: pick(meta.fallback_for_toolsets, top.fallback_for_toolsets),
        requires_tools: pick(meta.requires_tools, top.requires_tools),
        fallback_for_tools: pick(meta.fallback_for_tools, top.fallback_for_tools),
        config: hermes.config,
        required_environment_variables: front.required_environment_variables,
        body: body.trim_start_matches(['\r', '\n']).to_owned(),
    })
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
#[path = "skill_md_tests.rs"]
mod tests;
