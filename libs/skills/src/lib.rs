//! Skills (agentskills.io `SKILL.md` folders): parsing and validation (`skill_md`), the security
//! scan (`scan`), who sees what (`filter`), and the bundled catalogue compiled in from the
//! repository's `skills/` folder (`bundled`). Storage is `hermes_store::skills`; the tools are
//! the worker's.

pub mod bundled;
pub mod filter;
pub mod scan;
pub mod skill_md;

pub use filter::Visibility;
pub use scan::{Finding, scan_file};
pub use skill_md::{ConfigEntry, EnvVar, Skill, SkillError, parse, valid_name};

/// Supporting files live in these folders of a skill.
pub const FILE_DIRS: [&str; 5] = ["references", "templates", "scripts", "assets", "examples"];
pub const MAX_FILE_BYTES: usize = 200_000;
pub const MAX_FILES: usize = 50;

/// Whether `path` may name a supporting file: relative, inside one of [`FILE_DIRS`], no `..`.
pub fn valid_file_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    parts.len() >= 2
        && FILE_DIRS.contains(&parts[0])
        && parts.iter().all(|p| !p.is_empty() && *p != "." && *p != ".." && !p.starts_with('.'))
        && path.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && path.len() <= 200
}

/// A hex digest of a skill's content (SKILL.md and files in path order), to tell edits apart.
pub fn content_hash(skill_md: &str, files: &[(String, String)]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(skill_md.as_bytes());
    let mut files: Vec<&(String, String)> = files.iter().collect();
    files.sort();
    for (path, content) in files {
        hasher.update([0]);
        hasher.update(path.as_bytes());
        hasher.update([0]);
        hasher.update(content.as_bytes());
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A skill that passed parsing, the file rules and the security scan, ready to store.
#[derive(Debug, Clone)]
pub struct Checked {
    pub skill: Skill,
    pub skill_md: String,
    pub files: Vec<(String, String)>,
    pub content_hash: String,
}

/// Why a skill cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Invalid(#[from] SkillError),
    #[error("{0}")]
    File(String),
    #[error("refused by the security scan: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Unsafe(Vec<Finding>),
}

/// Parses `skill_md`, checks the supporting files' paths and sizes, and scans everything.
pub fn check(skill_md: &str, files: Vec<(String, String)>, category: Option<&str>) -> Result<Checked, CheckError> {
    let skill = parse(skill_md, category)?;
    if files.len() > MAX_FILES {
        return Err(CheckError::File(format!("a skill has at most {MAX_FILES} supporting files")));
    }
    let declared: Vec<&str> = skill.required_environment_variables.iter().map(|v| v.name.as_str()).collect();
    let mut findings = scan_file("SKILL.md", skill_md, &declared);
    for (path, content) in &files {
        if !valid_file_path(path) {
            return Err(CheckError::File(format!(
                "{path:?}: supporting files live in {} (e.g. references/notes.md), without '..' or hidden names",
                FILE_DIRS.join("/, ")
            )));
        }
        if content.len() > MAX_FILE_BYTES {
            return Err(CheckError::File(format!("{path}: over {MAX_FILE_BYTES} bytes")));
        }
        findings.extend(scan_file(path, content, &declared));
    }
    if !findings.is_empty() {
        return Err(CheckError::Unsafe(findings));
    }
    let content_hash = content_hash(skill_md, &files);
    Ok(Checked { skill, skill_md: skill_md.to_owned(), files, content_hash })
}
