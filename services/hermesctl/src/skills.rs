//! `hermesctl skill ...`: tenant-wide skills (imported from a SKILL.md folder, checked and
//! scanned like the agents' own), pins and an agent's skill log.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Subcommand;
use serde_json::json;

use hermes_store::{NewSkill, Store};

use crate::cli::{print, print_lines, tenant};

#[derive(Subcommand)]
pub enum SkillCmd {
    /// Import a skill folder (SKILL.md plus references/, templates/, scripts/, ...) for every
    /// agent of the tenant.
    Import {
        #[arg(long)]
        tenant: String,
        dir: PathBuf,
    },
    /// Pin a skill for an agent (the curator never marks it stale), or unpin it.
    Pin {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        agent: String,
        name: String,
        #[arg(long)]
        off: bool,
    },
    /// An agent's skill log: creations, edits, curator verdicts.
    Log {
        #[arg(long)]
        tenant: String,
        #[arg(long)]
        agent: String,
    },
}

fn read_folder(dir: &Path) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let skill_md =
        std::fs::read_to_string(dir.join("SKILL.md")).with_context(|| format!("{}/SKILL.md", dir.display()))?;
    let mut files = Vec::new();
    for sub in hermes_skills::FILE_DIRS {
        let mut stack = vec![dir.join(sub)];
        while let Some(path) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&path) else { continue };
            for entry in entries.flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    let relative = p.strip_prefix(dir)?.display().to_string();
                    let content = std::fs::read_to_string(&p).with_context(|| format!("{relative} is not text"))?;
                    files.push((relative, content));
                }
            }
        }
    }
    Ok((skill_md, files))
}

pub async fn run_skill(json_mode: bool, store: &Store, cmd: SkillCmd) -> anyhow::Result<()> {
    match cmd {
        SkillCmd::Import { tenant: name, dir } => {
            let t = tenant(store, &name).await?;
            let (skill_md, files) = read_folder(&dir)?;
            let category = dir.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str());
            let checked = match hermes_skills::check(&skill_md, files, category) {
                Ok(c) => c,
                Err(e) => bail!("{}: {e}", dir.display()),
            };
            let skill = NewSkill {
                name: checked.skill.name.clone(),
                category: checked.skill.category.clone(),
                description: checked.skill.description.clone(),
                meta: serde_json::to_value(&checked.skill)?,
                skill_md: checked.skill_md,
                content_hash: checked.content_hash,
                files: checked.files,
            };
            store.agents().save_tenant_skill(t.id, &skill, "operator").await?;
            print(
                json_mode,
                json!({"name": skill.name, "category": skill.category}),
                format!("imported {} for {}", skill.name, t.name),
            );
        }
        SkillCmd::Pin { tenant: name, agent, name: skill, off } => {
            let t = tenant(store, &name).await?;
            let a = store.agents().agent_by_name(t.id, &agent).await.with_context(|| format!("no agent {agent:?}"))?;
            store.agents().set_skill_pinned(t.id, a.id, &skill, !off).await?;
            print(json_mode, json!({"name": skill, "pinned": !off}), format!("{skill}: pinned = {}", !off));
        }
        SkillCmd::Log { tenant: name, agent } => {
            let t = tenant(store, &name).await?;
            let a = store.agents().agent_by_name(t.id, &agent).await.with_context(|| format!("no agent {agent:?}"))?;
            let events = store.agents().skill_events(t.id, a.id, 100).await?;
            print_lines(json_mode, &events, |e| {
                format!("{} {} {} by {} {}", e.created_at, e.name, e.action, e.actor, e.detail)
            });
        }
    }
    Ok(())
}
