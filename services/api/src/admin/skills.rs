//! Skills as people curate them: what an agent sees (bundled, the tenant's, its own), a
//! skill's SKILL.md, hiding a skill from an agent or showing it again, and uploading or
//! editing a tenant-wide SKILL.md (parsed, its files checked and scanned, as `hermesctl skill
//! import` does). Every change is audited.

use axum::Json;
use axum::extract::Path;
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_core::access::AdminOp;
use hermes_http::ApiError;
use hermes_store::NewSkill;
use hermes_store::admin::Change;
use hermes_wire::admin::{AgentSkill, AgentSkills, SkillDocument, SkillSaved, SkillToggled};

use crate::admin::errors::{Result, store_error};
use crate::admin::tenant_call::{AgentCall, Body, TenantCall};
use crate::documented::{AgentPath, MayNotEditSkills, NoSuchTenantOrAgent, SkillPath, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/skills", tag = "admin: agents",
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The agent's skills (`disabled`: hidden from it), and the names hidden from it", body = AgentSkills),
        NoSuchTenantOrAgent))]
pub(crate) async fn list(call: AgentCall) -> Result<Json<AgentSkills>> {
    let (t, a) = call.allow_agent(AdminOp::ViewSkills).await?;
    let visible = call.state.store.agents().visible_skills(t.id, a.id).await.map_err(store_error)?;
    let skills = visible
        .into_iter()
        .map(|v| AgentSkill {
            disabled: a.disabled_skills.contains(&v.skill.name),
            scope: crate::discovery::scope_name(v.skill.scope).to_owned(),
            name: v.skill.name,
            category: v.skill.category,
            description: v.skill.description,
            pinned: v.pinned,
            state: v.state,
            view_count: v.view_count,
            use_count: v.use_count,
            last_used_at: v.last_used_at,
            updated_at: v.skill.updated_at,
        })
        .collect();
    Ok(Json(AgentSkills { agent_id: a.id, skills, disabled: a.shown.disabled_skills }))
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/skills/{name}", tag = "admin: agents",
    params(TenantPath, AgentPath,
        SkillPath),
    responses((status = 200, description = "The skill and its SKILL.md", body = SkillDocument),
        (status = 404, description = "No such skill for this agent", body = hermes_wire::ErrorBody)))]
pub(crate) async fn get(
    call: AgentCall,
    Path((_, _, name)): Path<(String, String, String)>,
) -> Result<Json<SkillDocument>> {
    let (t, a) = call.allow_agent(AdminOp::ViewSkills).await?;
    let found = call.state.store.agents().find_skill(t.id, a.id, &name).await.map_err(store_error)?;
    let skill = found.ok_or_else(|| ApiError::not_found(ErrorCode::NotFound, "no such skill"))?;
    Ok(Json(SkillDocument {
        scope: crate::discovery::scope_name(skill.scope).to_owned(),
        name: skill.name,
        category: skill.category,
        description: skill.description,
        skill_md: skill.skill_md,
        updated_at: skill.updated_at,
    }))
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/agents/{agent}/skills/{name}/{action}", tag = "admin: agents",
    params(TenantPath, AgentPath,
        SkillPath, ("action" = String, Path, description = "`disable` or `enable`")),
    responses((status = 200, description = "Hidden from the agent, or shown again; its next turn sees the change", body = SkillToggled),
        MayNotEditSkills,
        (status = 404, description = "No such agent (or action)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn toggle(
    call: AgentCall,
    Path((_, _, name, action)): Path<(String, String, String, String)>,
) -> Result<Json<SkillToggled>> {
    let (t, a) = call.allow_agent(AdminOp::EditSkills).await?;
    let disabled = match action.as_str() {
        "disable" => true,
        "enable" => false,
        _ => return Err(ApiError::not_found(ErrorCode::NotFound, "no such action: disable or enable")),
    };
    let label = call.caller.audit().actor.label;
    let mut tx = call.begin(t.id).await?;
    tx.disable_skill(a.id, &name, disabled, &label).await.map_err(store_error)?;
    let verb = if disabled { "skill.disabled" } else { "skill.enabled" };
    tx.commit(Change::new(verb, "skill", format!("{}/{name}", a.id))).await.map_err(store_error)?;
    Ok(Json(SkillToggled { name, disabled }))
}

/// A SKILL.md to store for the whole tenant.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Upload {
    /// The whole SKILL.md: frontmatter (`name`, `description`, ...) and body.
    skill_md: String,
    /// The category it is filed under (default: the frontmatter's, else `general`).
    category: Option<String>,
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/skills/{name}", tag = "admin: agents", request_body = Upload,
    params(TenantPath, ("name" = String, Path, description = "Skill name (as in the frontmatter)")),
    responses((status = 200, description = "Stored for every agent of the tenant", body = SkillSaved),
        (status = 400, description = "Not a SKILL.md, another name than the URL's, or refused by the security scan", body = hermes_wire::ErrorBody),
        MayNotEditSkills))]
pub(crate) async fn upload(
    call: TenantCall,
    Path((_, name)): Path<(String, String)>,
    body: Body<Upload>,
) -> Result<Json<SkillSaved>> {
    let (t, body) = call.allow_with_body(AdminOp::EditSkills, body).await?;
    let refused = |why: String| ApiError::invalid_request(ErrorCode::InvalidValue, why).with_param("skill_md");
    let checked = hermes_skills::check(&body.skill_md, Vec::new(), body.category.as_deref())
        .map_err(|e| refused(e.to_string()))?;
    if checked.skill.name != name {
        return Err(refused(format!("the SKILL.md names itself {:?}, not {name:?}", checked.skill.name)));
    }
    let skill = NewSkill {
        name: checked.skill.name.clone(),
        category: checked.skill.category.clone(),
        description: checked.skill.description.clone(),
        meta: serde_json::to_value(&checked.skill).map_err(ApiError::internal)?,
        skill_md: checked.skill_md,
        content_hash: checked.content_hash,
        files: checked.files,
    };
    let label = call.caller.audit().actor.label;
    let mut tx = call.begin(t.id).await?;
    tx.save_tenant_skill(&skill, &label).await.map_err(store_error)?;
    let change = Change::new("skill.saved", "skill", &skill.name).after(SavedAudit {
        name: &skill.name,
        category: &skill.category,
        content_hash: &skill.content_hash,
    });
    tx.commit(change).await.map_err(store_error)?;
    Ok(Json(SkillSaved { name: skill.name, category: skill.category, description: skill.description }))
}

/// What the audit trail records of a saved skill.
#[derive(serde::Serialize)]
struct SavedAudit<'a> {
    name: &'a str,
    category: &'a str,
    content_hash: &'a str,
}
