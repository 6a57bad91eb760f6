use super::*;

const GOOD: &str = "---
name: code-review
description: >
  Review a change for correctness and security.
  Use for PRs.
version: 1.2.0
platforms: [linux, macOS]
required_environment_variables:
  - name: GITHUB_TOKEN
    prompt: A token to read PRs
metadata:
  hermes:
    tags: [engineering, review]
    category: Engineering
    requires_toolsets: [terminal]
    config:
      - key: severity_levels
        description: Labels
        default: blocker, nit
---
# Code Review

## Procedure
1. Read the diff.
";

#[test]
fn a_complete_skill_md_parses_with_every_field() {
    let s = parse(GOOD, None).unwrap();
    assert_eq!(s.name, "code-review");
    assert_eq!(s.description, "Review a change for correctness and security. Use for PRs.");
    assert_eq!(s.version.as_deref(), Some("1.2.0"));
    assert_eq!(s.category, "engineering");
    assert_eq!(s.tags, ["engineering", "review"]);
    assert_eq!(s.platforms, ["linux", "macos"]);
    assert_eq!(s.requires_toolsets, ["terminal"]);
    assert_eq!(s.config[0].key, "severity_levels");
    assert_eq!(s.required_environment_variables[0].name, "GITHUB_TOKEN");
    assert!(s.body.starts_with("# Code Review"));
}

#[test]
fn the_folder_names_the_category_when_the_frontmatter_does_not_and_versions_may_be_numbers() {
    let s = parse("---\nname: x\ndescription: d\nversion: 2\n---\nbody", Some("ops")).unwrap();
    assert_eq!((s.category.as_str(), s.version.as_deref()), ("ops", Some("2")));
    assert_eq!(parse("---\nname: x\ndescription: d\n---\nbody", None).unwrap().category, "general");
}

#[test]
fn malformed_files_are_refused_with_a_clear_reason() {
    let cases: [(&str, &str); 8] = [
        ("# no frontmatter", "must start with a YAML frontmatter"),
        ("---\nname: x\ndescription: d\n# never closed", "must start with a YAML frontmatter"),
        ("---\nname: [unclosed\n---\nbody", "not valid YAML"),
        ("---\nname: Bad_Name\ndescription: d\n---\nbody", "lowercase letters"),
        ("---\ndescription: d\n---\nbody", "name \"\""),
        ("---\nname: x\n---\nbody", "description is required"),
        ("---\nname: x\ndescription: d\n---\n\n  \n", "no instructions"),
        (
            "---\nname: x\ndescription: d\nrequired_environment_variables:\n  - name: 1BAD\n---\nbody",
            "not a variable name",
        ),
    ];
    for (text, want) in cases {
        let err = parse(text, None).unwrap_err().to_string();
        assert!(err.contains(want), "{text:?}: {err}");
    }
    let long = format!("---\nname: x\ndescription: {}\n---\nbody", "d".repeat(1_100));
    assert!(parse(&long, None).unwrap_err().to_string().contains("over 1024"));
}

#[test]
fn names_follow_the_agentskills_rules() {
    for good in ["a", "code-review", "sql2csv"] {
        assert!(valid_name(good), "{good}");
    }
    for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", &"a".repeat(65)] {
        assert!(!valid_name(bad), "{bad}");
    }
}
