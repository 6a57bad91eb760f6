//! The skills that ship with Hermes Cloud: the repository's `skills/<category>/<name>/` folders,
//! compiled in by `build.rs`.

use crate::{Skill, SkillError};

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// One bundled skill with its supporting files.
#[derive(Debug, Clone)]
pub struct BundledSkill {
    pub skill: Skill,
    pub skill_md: String,
    /// (path inside the skill folder, content).
    pub files: Vec<(String, String)>,
}

/// Every bundled skill, parsed; a folder that does not parse is an error naming it (the
/// tests keep the catalogue valid).
pub fn catalogue() -> Result<Vec<BundledSkill>, (String, SkillError)> {
    let mut skills: Vec<BundledSkill> = Vec::new();
    for (path, content) in BUNDLED_FILES {
        let parts: Vec<&str> = path.splitn(3, '/').collect();
        let [category, name, rest] = parts.as_slice() else { continue };
        if *rest == "SKILL.md" {
            let skill = crate::parse(content, Some(category)).map_err(|e| ((*path).to_owned(), e))?;
            if skill.name != *name {
                return Err((
                    (*path).to_owned(),
                    SkillError::Invalid(format!("name {:?} differs from its folder", skill.name)),
                ));
            }
            skills.push(BundledSkill { skill, skill_md: (*content).to_owned(), files: Vec::new() });
        }
    }
    for (path, content) in BUNDLED_FILES {
        let parts: Vec<&str> = path.splitn(3, '/').collect();
        let [_, name, rest] = parts.as_slice() else { continue };
        if *rest != "SKILL.md"
            && let Some(owner) = skills.iter_mut().find(|s| s.skill.name == *name)
        {
            owner.files.push(((*rest).to_owned(), (*content).to_owned()));
        }
    }
    Ok(skills)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_skill_parses_passes_the_scan_and_references_real_files() {
        let catalogue = catalogue().unwrap_or_else(|(path, e)| panic!("{path}: {e}"));
        assert!(catalogue.len() >= 12, "at least twelve bundled skills, found {}", catalogue.len());
        let mut names: Vec<&str> = catalogue.iter().map(|s| s.skill.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), catalogue.len(), "names are unique");
        for s in &catalogue {
            assert!(s.skill.description.chars().count() <= 200, "{}: keep descriptions short", s.skill.name);
            let declared: Vec<&str> = s.skill.required_environment_variables.iter().map(|v| v.name.as_str()).collect();
            let mut findings = crate::scan_file("SKILL.md", &s.skill_md, &declared);
            for (path, content) in &s.files {
                assert!(crate::valid_file_path(path), "{}: {path}", s.skill.name);
                findings.extend(crate::scan_file(path, content, &declared));
                assert!(s.skill_md.contains(path.as_str()), "{}: {path} is never referenced", s.skill.name);
            }
            assert!(findings.is_empty(), "{}: {findings:?}", s.skill.name);
        }
    }
}
