//! Skills as the worker serves them: a per-worker cache of each agent's visible skills, kept
//! until the tenant's skill index version changes (one cheap read per turn, no scanning), the
//! index in the stable prompt and `/skill-name` in chat. The skills tools are in
//! `tools/skills.rs` and `tools/skill_manage.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hermes_agent::prompt::SkillEntry;
use hermes_core::{AgentId, ChatMessage, TenantId};
use hermes_skills::{Skill, Visibility};
use hermes_store::{Agent, SkillRecord, SkillUse, Store, StoreError};

/// Where a skill's supporting files are written in the sandbox when it is viewed.
pub(crate) const SANDBOX_SKILLS_DIR: &str = "/tmp/hermes-skills";

/// One skill an agent may see, parsed once per index version.
#[derive(Debug, Clone)]
pub(crate) struct Indexed {
    pub record: SkillRecord,
    pub skill: Skill,
    pub state: hermes_core::SkillState,
    pub pinned: bool,
}

/// The skill index versions (bundled, tenant) a cached index is valid for.
pub(crate) type Versions = (i64, i64);
/// An agent's skills as of an index version.
type CachedIndex = (Versions, Arc<Vec<Indexed>>);

/// Each agent's skills, cached per worker by index version.
#[derive(Default)]
pub(crate) struct SkillCatalog {
    cache: Mutex<HashMap<(TenantId, AgentId), CachedIndex>>,
}

impl SkillCatalog {
    /// Every skill `agent` can see (before filtering), from the cache while `versions` are the
    /// index's (a turn reads them with its inputs).
    async fn all_at(
        &self,
        store: &Store,
        tenant: TenantId,
        agent: AgentId,
        versions: Versions,
    ) -> Result<Arc<Vec<Indexed>>, StoreError> {
        if let Ok(cache) = self.cache.lock()
            && let Some((at, entries)) = cache.get(&(tenant, agent))
            && *at == versions
        {
            return Ok(entries.clone());
        }
        let mut entries = Vec::new();
        for visible in store.agents().visible_skills(tenant, agent).await? {
            match serde_json::from_value::<Skill>(visible.skill.meta.clone()) {
                Ok(skill) => {
                    entries.push(Indexed { record: visible.skill, skill, state: visible.state, pinned: visible.pinned })
                }
                Err(e) => {
                    tracing::warn!(skill = %visible.skill.name, error = %e, "stored skill metadata is unreadable")
                }
            }
        }
        let entries = Arc::new(entries);
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert((tenant, agent), (versions, entries.clone()));
        }
        Ok(entries)
    }

    /// The skills `agent` sees now: for its toolsets and tools, not disabled, not archived.
    pub async fn visible(&self, store: &Store, agent: &Agent, tool_names: &[&str]) -> Result<Vec<Indexed>, StoreError> {
        let versions = store.agents().skill_index_version(agent.tenant_id).await?;
        self.visible_at(store, agent, tool_names, versions).await
    }

    /// [`Self::visible`] with the index versions already read.
    pub async fn visible_at(
        &self,
        store: &Store,
        agent: &Agent,
        tool_names: &[&str],
        versions: Versions,
    ) -> Result<Vec<Indexed>, StoreError> {
        let all = self.all_at(store, agent.tenant_id, agent.id, versions).await?;
        let rules = Visibility { toolsets: &agent.toolsets, tools: tool_names, disabled: &agent.disabled_skills };
        Ok(all
            .iter()
            .filter(|s| s.state != hermes_core::SkillState::Archived && rules.shows(&s.skill))
            .cloned()
            .collect())
    }
}

/// A checked skill as the store keeps it.
pub(crate) fn new_skill(checked: hermes_skills::Checked) -> hermes_store::NewSkill {
    hermes_store::NewSkill {
        name: checked.skill.name.clone(),
        category: checked.skill.category.clone(),
        description: checked.skill.description.clone(),
        meta: serde_json::to_value(&checked.skill).unwrap_or(serde_json::Value::Null),
        skill_md: checked.skill_md,
        content_hash: checked.content_hash,
        files: checked.files,
    }
}

/// The skills index of the stable prompt.
pub(crate) fn prompt_entries(visible: &[Indexed]) -> Vec<SkillEntry> {
    visible
        .iter()
        .map(|s| SkillEntry {
            category: s.record.category.clone(),
            name: s.record.name.clone(),
            description: s.record.description.clone(),
        })
        .collect()
}

/// `/skill-name rest` loads a visible skill into the user's message for this turn (and the
/// transcript): the model gets the skill's instructions and the request. Several leading
/// `/names` load several skills in order (a cron job's skills arrive this way). `None` when the
/// first word names no skill the agent sees.
pub(crate) async fn expand_slash(
    store: &Store,
    catalog: &SkillCatalog,
    agent: &Agent,
    tool_names: &[&str],
    text: &str,
) -> Option<ChatMessage> {
    let mut rest = text.trim();
    rest.strip_prefix('/')?;
    let visible = catalog.visible(store, agent, tool_names).await.ok()?;
    let mut loaded = Vec::new();
    while let Some(after) = rest.strip_prefix('/') {
        let (name, tail) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
        let Some(found) = visible.iter().find(|s| s.record.name == name) else { break };
        if let Err(e) =
            store.agents().record_skill_use(agent.tenant_id, agent.id, name, SkillUse::Used, chrono::Utc::now()).await
        {
            tracing::warn!(error = %e, "cannot count the skill's use");
        }
        loaded.push((name.to_owned(), found.record.skill_md.trim().to_owned()));
        rest = tail.trim_start();
    }
    if loaded.is_empty() {
        return None;
    }
    let request = rest.trim();
    let ask = if request.is_empty() {
        "The user loaded this skill without saying more: ask what they need.".to_owned()
    } else {
        format!("The user's request: {request}")
    };
    let skills: Vec<String> = loaded
        .iter()
        .map(|(name, md)| format!("[The user loaded the skill \"{name}\". Follow it for this task.]\n\n{md}"))
        .collect();
    Some(ChatMessage::user(format!("{}\n\n{ask}", skills.join("\n\n"))))
}
