//! `skills_list` (the index: name, description, category) and `skill_view` (a skill's
//! instructions, or one of its files). Viewing a skill writes its supporting files into the
//! sandbox, so its scripts and templates can be used there, and counts the view.

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_core::ToolsetName;
use hermes_sandbox::proto::WriteFileRequest;
use hermes_sandbox::{SandboxKey, Sandboxes};
use hermes_store::{Agent, SkillUse, Store};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema};

use crate::skills::{Indexed, SANDBOX_SKILLS_DIR, SkillCatalog};

/// What the skills tools share.
#[derive(Clone)]
pub(crate) struct SkillsContext {
    pub store: Store,
    pub catalog: Arc<SkillCatalog>,
    pub agent: Agent,
    /// The turn's tool names, for `requires_tools` and fallbacks.
    pub tool_names: Vec<&'static str>,
    pub sandboxes: Arc<dyn Sandboxes>,
}

impl SkillsContext {
    pub async fn visible(&self) -> Result<Vec<Indexed>, ToolError> {
        self.catalog
            .visible(&self.store, &self.agent, &self.tool_names)
            .await
            .map_err(|e| ToolError::Unavailable(format!("skills are unavailable right now: {e}")))
    }

    fn has_sandbox(&self) -> bool {
        ToolsetName::SANDBOXED.iter().any(|t| t.enabled_in(&self.agent.toolsets))
    }
}

pub(crate) struct SkillsListTool(pub SkillsContext);

impl SimpleTool for SkillsListTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "skills_list",
        ToolsetName::Skills,
        "List the skills you can load: name, description and category. Load one with skill_view.",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(json!({ "category": { "type": "string", "description": "Only this category." } }), &[])
    }

    async fn run(&self, _ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let category = args.get("category").and_then(Value::as_str).map(str::to_lowercase);
        let mut skills: Vec<Value> = self
            .0
            .visible()
            .await?
            .iter()
            .filter(|s| category.as_deref().is_none_or(|c| s.record.category == c))
            .map(|s| json!({"name": s.record.name, "description": s.record.description, "category": s.record.category}))
            .collect();
        skills.sort_by(|a, b| {
            (a["category"].as_str(), a["name"].as_str()).cmp(&(b["category"].as_str(), b["name"].as_str()))
        });
        Ok(json!({"count": skills.len(), "skills": skills}).to_string())
    }
}

pub(crate) struct SkillViewTool(pub SkillsContext);

impl SkillViewTool {
    /// Which of the skill's `required_environment_variables` the agent's secret bindings
    /// provide (the sandbox holds placeholders for them) and which are missing, with the
    /// skill's own prompt for each; never a value.
    async fn environment(&self, ctx: &ToolCtx, wanted: &[hermes_skills::EnvVar]) -> Value {
        let bound = match self.0.store.agents().secret_bindings(ctx.tenant_id, ctx.agent_id).await {
            Ok(bindings) => bindings.into_iter().map(|b| b.env_name).collect::<Vec<_>>(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the agent's secret bindings");
                Vec::new()
            }
        };
        let (present, missing): (Vec<_>, Vec<_>) = wanted.iter().partition(|v| bound.contains(&v.name));
        let missing: Vec<Value> =
            missing.iter().map(|v| json!({"name": v.name, "prompt": v.prompt, "help": v.help})).collect();
        let note = (!missing.is_empty()).then_some(
            "an admin binds a team credential to each missing name (hermesctl secret bind, or the agent's page); \
             never ask the user to paste a secret into the chat",
        );
        json!({"bound": present.iter().map(|v| &v.name).collect::<Vec<_>>(), "missing": missing, "note": note})
    }

    /// Writes the skill's files under `/tmp/hermes-skills/<name>/`; returns that directory.
    async fn sync_files(&self, ctx: &ToolCtx, name: &str, files: &[(String, String)]) -> Option<String> {
        if files.is_empty() || !self.0.has_sandbox() {
            return None;
        }
        let key = SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace };
        let client = self.0.sandboxes.open(key).await.ok()?;
        let dir = format!("{SANDBOX_SKILLS_DIR}/{name}");
        for (path, content) in files {
            let request = WriteFileRequest { path: format!("{dir}/{path}"), content: content.clone() };
            if let Err(e) = client.grpc().write_file(request).await {
                tracing::warn!(skill = name, path, error = %e.message(), "cannot copy a skill file into the sandbox");
                return None;
            }
        }
        Some(dir)
    }
}

impl SimpleTool for SkillViewTool {
    const SPEC: ToolSpec = ToolSpec::new(
        "skill_view",
        ToolsetName::Skills,
        "Load a skill's full instructions (and the list of its files), or one of its files with \
                `file_path` (e.g. references/checklist.md).",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "name": { "type": "string" },
                "file_path": { "type": "string", "description": "A file of the skill, relative to its folder." }
            }),
            &["name"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let name = args.get("name").and_then(Value::as_str).map(str::trim).unwrap_or_default();
        let visible = self.0.visible().await?;
        let Some(found) = visible.iter().find(|s| s.record.name == name) else {
            let mut names: Vec<&str> = visible.iter().map(|s| s.record.name.as_str()).collect();
            names.sort_unstable();
            return Err(ToolError::RespondToModel(format!("no skill named {name:?}; available: {}", names.join(", "))));
        };
        let store = &self.0.store;
        let fail =
            |e: hermes_store::StoreError| ToolError::Unavailable(format!("skills are unavailable right now: {e}"));
        let files = store.agents().skill_files(ctx.tenant_id, found.record.id).await.map_err(fail)?;
        if let Err(e) = store
            .agents()
            .record_skill_use(ctx.tenant_id, ctx.agent_id, name, SkillUse::Viewed, chrono::Utc::now())
            .await
        {
            tracing::warn!(error = %e, "cannot count the skill view");
        }
        let path = args.get("file_path").or_else(|| args.get("path")).and_then(Value::as_str).map(str::trim);
        if let Some(path) = path.filter(|p| !p.is_empty() && *p != "SKILL.md") {
            return match files.iter().find(|(p, _)| p == path) {
                Some((_, content)) => Ok(json!({"name": name, "file_path": path, "content": content}).to_string()),
                None => Err(ToolError::RespondToModel(format!(
                    "{name} has no file {path:?}; its files: {}",
                    files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>().join(", ")
                ))),
            };
        }
        let mut answer = json!({
            "name": name,
            "category": found.record.category,
            "description": found.record.description,
            "version": found.skill.version,
            "source": found.record.scope,
            "state": found.state,
            "pinned": found.pinned,
            "content": found.record.skill_md,
            "files": files.iter().map(|(p, _)| p.as_str()).collect::<Vec<_>>(),
        });
        if !found.skill.config.is_empty() {
            answer["config"] = json!(found.skill.config);
        }
        let wanted = &found.skill.required_environment_variables;
        if !wanted.is_empty() {
            answer["environment"] = self.environment(ctx, wanted).await;
        }
        if let Some(dir) = self.sync_files(ctx, name, &files).await {
            answer["files_in_sandbox"] = json!(dir);
        }
        Ok(answer.to_string())
    }
}
