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
