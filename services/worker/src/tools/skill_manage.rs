//! `skill_manage`: the agent's procedural memory. It creates skills, patches or rewrites them,
//! and adds or removes their files; everything passes `hermes_skills::check` (format, file
//! rules, security scan) before it is stored. A bundled or tenant skill is never changed in
//! place: the first change makes the agent's own copy, which shadows it. Deleting a shared
//! skill hides it from this agent.

use hermes_core::ToolsetName;
use serde_json::{Value, json};

use hermes_skills::CheckError;
use hermes_store::{SkillScope, StoreError};
use hermes_tools::{Choice, SimpleTool, ToolCtx, ToolError, ToolSpec, choices, object_schema};

use super::skills::SkillsContext;

pub(crate) struct SkillManageTool {
    pub ctx: SkillsContext,
    /// Who the change is logged as: `agent`, or `review` for the background reviewer.
    pub actor: &'static str,
}

choices! {
    enum SkillAction {
        Create = "create",
        Patch = "patch",
        Edit = "edit",
        Delete = "delete",
        WriteFile = "write_file",
        RemoveFile = "remove_file",
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::RespondToModel(format!("`{key}` is required for this action")))
}

fn refused(e: CheckError) -> ToolError {
    ToolError::RespondToModel(e.to_string())
}

fn unavailable(e: StoreError) -> ToolError {
    ToolError::Unavailable(format!("skills cannot be saved right now: {e}"))
}

/// Replaces the one occurrence of `old` in `text` (or every one with `all`).
fn patch_text(text: &str, old: &str, new: &str, all: bool) -> Result<String, ToolError> {
    if old.is_empty() {
        return Err(ToolError::RespondToModel("`old_string` is empty".into()));
    }
    match text.matches(old).count() {
        0 => Err(ToolError::RespondToModel("`old_string` was not found; copy it exactly from skill_view".into())),
        1 => Ok(text.replacen(old, new, 1)),
        _ if all => Ok(text.replace(old, new)),
        n => Err(ToolError::RespondToModel(format!(
            "`old_string` occurs {n} times; include more context so it is unique, or set replace_all"
        ))),
    }
}

impl SkillManageTool {
    /// The skill as it stands for this agent: its SKILL.md, files, category and scope.
    async fn current(&self, name: &str) -> Result<(String, Vec<(String, String)>, String, SkillScope), ToolError> {
        let store = &self.ctx.store;
        let agent = &self.ctx.agent;
        let record = store
            .agents()
            .find_skill(agent.tenant_id, agent.id, name)
            .await
            .map_err(unavailable)?
            .ok_or_else(|| ToolError::RespondToModel(format!("no skill named {name:?}; create it first")))?;
        let files = store.agents().skill_files(agent.tenant_id, record.id).await.map_err(unavailable)?;
        Ok((record.skill_md, files, record.category, record.scope))
    }

    async fn save(&self, checked: hermes_skills::Checked, action: &str) -> Result<Value, ToolError> {
        let agent = &self.ctx.agent;
        let new = crate::skills::new_skill(checked);
        self.ctx
            .store
            .agents()
            .save_agent_skill(agent.tenant_id, agent.id, &new, action, self.actor)
            .await
            .map_err(unavailable)?;
        tracing::info!(tenant.id = %agent.tenant_id, agent.id = %agent.id, skill = %new.name, action, actor = self.actor, "skill saved");
        metrics::counter!("hermes_skill_changes_total", "action" => action.to_owned()).increment(1);
        Ok(
            json!({"success": true, "name": new.name, "action": action, "files": new.files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>()}),
        )
    }

    async fn act(&self, args: &Value) -> Result<Value, ToolError> {
        let action_name = arg(args, "action")?;
        let action = SkillAction::from_name(action_name);
        let name = arg(args, "name")?.trim().to_owned();
        match action {
            Some(SkillAction::Create) => self.create(args, &name).await,
            Some(SkillAction::Patch) => self.patch(args, &name).await,
            Some(SkillAction::Edit) => self.edit(args, &name).await,
            Some(file_action @ (SkillAction::WriteFile | SkillAction::RemoveFile)) => {
                self.change_file(args, &name, file_action == SkillAction::WriteFile, action_name).await
            }
            Some(SkillAction::Delete) => self.delete(&name).await,
            None => Err(ToolError::RespondToModel(format!(
                "unknown action {action_name:?}; use create, patch, edit, delete, write_file or remove_file"
            ))),
        }
    }

    /// `create`: a whole new SKILL.md, under a name nobody's skill has yet.
    async fn create(&self, args: &Value, name: &str) -> Result<Value, ToolError> {
        let agent = &self.ctx.agent;
        let content = arg(args, "content")?;
        let category = args.get("category").and_then(Value::as_str);
        let checked = hermes_skills::check(content, Vec::new(), category).map_err(refused)?;
        if checked.skill.name != name {
            return Err(ToolError::RespondToModel(format!(
                "the frontmatter names the skill {:?} but `name` is {name:?}; make them equal",
                checked.skill.name
            )));
        }
        if let Some(existing) =
            self.ctx.store.agents().find_skill(agent.tenant_id, agent.id, name).await.map_err(unavailable)?
        {
            let whose = match existing.scope {
                SkillScope::Agent => "you already have",
                SkillScope::Tenant => "your team has",
                SkillScope::Bundled => "Hermes ships",
            };
            return Err(ToolError::RespondToModel(format!(
                "{whose} a skill named {name:?}: use patch or edit to change it, or pick another name"
            )));
        }
        self.save(checked, "create").await
    }

    /// `patch`: an exact replacement in SKILL.md or in one of its files.
    async fn patch(&self, args: &Value, name: &str) -> Result<Value, ToolError> {
        let (skill_md, mut files, category, _) = self.current(name).await?;
        let (old, new) = (arg(args, "old_string")?, arg(args, "new_string")?);
        let all = args.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
        let skill_md = match args.get("file_path").and_then(Value::as_str).filter(|p| *p != "SKILL.md") {
            Some(path) => {
                let file = files
                    .iter_mut()
                    .find(|(p, _)| p == path)
                    .ok_or_else(|| ToolError::RespondToModel(format!("{name} has no file {path:?}")))?;
                file.1 = patch_text(&file.1, old, new, all)?;
                skill_md
            }
            None => patch_text(&skill_md, old, new, all)?,
        };
        let checked = hermes_skills::check(&skill_md, files, Some(&category)).map_err(refused)?;
        self.save(checked, "patch").await
    }

    /// `edit`: SKILL.md rewritten whole, under the same name.
    async fn edit(&self, args: &Value, name: &str) -> Result<Value, ToolError> {
        let (_, files, category, _) = self.current(name).await?;
        let checked = hermes_skills::check(arg(args, "content")?, files, Some(&category)).map_err(refused)?;
        if checked.skill.name != name {
            return Err(ToolError::RespondToModel("edit cannot rename a skill; create a new one instead".into()));
        }
        self.save(checked, "edit").await
    }

    /// `write_file` (with `write`) or `remove_file`: one of the skill's files replaced or removed.
    async fn change_file(&self, args: &Value, name: &str, write: bool, action: &str) -> Result<Value, ToolError> {
        let (skill_md, mut files, category, _) = self.current(name).await?;
        let path = arg(args, "file_path")?.trim().to_owned();
        files.retain(|(p, _)| *p != path);
        if write {
            files.push((path, arg(args, "file_content")?.to_owned()));
        }
        let checked = hermes_skills::check(&skill_md, files, Some(&category)).map_err(refused)?;
        self.save(checked, action).await
    }

    /// `delete`: the agent's own skill is deleted; a shared one is hidden from the agent.
    async fn delete(&self, name: &str) -> Result<Value, ToolError> {
        let store = &self.ctx.store;
        let agent = &self.ctx.agent;
        if store.agents().delete_agent_skill(agent.tenant_id, agent.id, name, self.actor).await.map_err(unavailable)? {
            return Ok(json!({"success": true, "name": name, "action": "delete"}));
        }
        self.current(name).await?;
        store.agents().disable_skill(agent.tenant_id, agent.id, name, true, self.actor).await.map_err(unavailable)?;
        Ok(json!({"success": true, "name": name, "action": "disable",
                  "message": "It is a shared skill: it is now hidden from you instead of deleted."}))
    }
}

impl SimpleTool for SkillManageTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "skill_manage",
        ToolsetName::Skills,
        "Save procedures that worked as skills you can load later (your procedural memory). \
                Create one after a complex task succeeded (5+ tool calls), after working past errors, when the \
                user corrected your approach, or when you found a non-trivial workflow. `create` takes a whole \
                SKILL.md: YAML frontmatter (name, description saying what it does and when to use it, version, \
                metadata.hermes.category/tags) then sections When to Use, Procedure, Pitfalls, Verification. \
                Prefer `patch` (exact old_string -> new_string) for fixes; `edit` rewrites SKILL.md; \
                `write_file`/`remove_file` manage references/, templates/, scripts/. Changing a shared skill \
                makes your own copy.",
    )
    .sequential();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "action": SkillAction::schema(),
                "name": { "type": "string", "description": "The skill's name (lowercase-with-hyphens)." },
                "content": { "type": "string", "description": "The whole SKILL.md (create, edit)." },
                "category": { "type": "string" },
                "old_string": { "type": "string" },
                "new_string": { "type": "string" },
                "replace_all": { "type": "boolean" },
                "file_path": { "type": "string", "description": "e.g. references/notes.md (patch, write_file, remove_file)." },
                "file_content": { "type": "string" }
            }),
            &["action", "name"],
        )
    }

    async fn run(&self, _ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        self.act(&args).await.map(|v| v.to_string())
    }
}
