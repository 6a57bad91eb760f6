//! Any SKILL.md (an agent writes them, tenants upload them) is parsed or refused without a
//! panic; what parses has a valid name.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(skill) = hermes_skills::skill_md::parse(text, None) {
        assert!(hermes_skills::skill_md::valid_name(&skill.name), "{:?}", skill.name);
    }
    let _ = hermes_skills::check(text, Vec::new(), Some("general"));
});
