//! Agents: made and edited, each in one audited transaction with its entry, under the same
//! checks whichever door asked (the admin API, `hermesctl agent create`): known toolsets (the
//! installation's defaults when none are named), model URLs the front end may name, a provider
//! key only where it can be sealed.

use hermes_config::SandboxConfig;
use hermes_core::{
    ApprovalMode, AuxiliaryTask, ClientLimits, ImageInputMode, ModelSettings, ProviderRouting, SandboxChoice, TenantId,
    ToolsetName, WorkspaceScope, provider_routing::OPENROUTER_HOST,
};
use hermes_net_policy::outbound::Policy;
use hermes_store::admin::{Audit, AuditedTx, Change};
use hermes_store::{Agent, AgentChanges, SecretBox, Store};
use hermes_wire::admin::{AgentEdit, AuxiliaryModels, ModelRef, NewAgent};

use crate::toolsets::Installed;
use crate::{OpsError, Result};

/// Which model URLs a front end may give an agent.
#[derive(Debug, Clone, Copy)]
pub enum ModelUrls<'a> {
    /// The outbound policy's: public addresses and the operator's trusted hosts. A tenant's
    /// admin could otherwise point the worker's requests inside the cluster.
    Policy(&'a Policy),
    /// Any: the operator configures the installation from its own CLI (a model server on
    /// loopback or in the cluster), as `hermesctl channel bind --api-base` may name any base.
    Operator,
}

impl ModelUrls<'_> {
    /// `raw` parsed, or why `param` is refused.
    fn check(self, param: &'static str, raw: &str) -> Result<url::Url> {
        let url = url::Url::parse(raw.trim()).map_err(|_| OpsError::invalid(param, format!("{raw:?} is not a URL")))?;
        match self {
            Self::Policy(policy) => match policy.refuse(&url) {
                Some(why) => Err(OpsError::invalid(param, why)),
                None => Ok(url),
            },
            Self::Operator => Ok(url),
        }
    }

    /// Checks every other model `models` names, each as its field `param`.
    fn check_models<'m>(self, models: impl IntoIterator<Item = (&'static str, &'m ModelRef)>) -> Result<()> {
        models.into_iter().try_for_each(|(param, model)| self.check(param, &model.base_url).map(drop))
    }
}

pub(crate) fn check_toolsets<'t>(toolsets: impl IntoIterator<Item = &'t String>) -> Result<()> {
    for toolset in toolsets {
        toolset.parse::<ToolsetName>().map_err(|e| OpsError::invalid("toolsets", e.to_string()))?;
    }
    Ok(())
}

/// Refuses an image the operator does not offer, and limits that are not positive or above
/// the operator's maxima (`sandbox.images`, `sandbox.max`).
pub fn check_sandbox(cfg: &SandboxConfig, choice: &SandboxChoice) -> Result<()> {
    let invalid = |why: String| Err(OpsError::invalid("sandbox", why));
    if let Some(name) = &choice.image
        && cfg.image_reference(Some(name)).is_none()
    {
        let offered: Vec<String> = cfg.images_offered().into_iter().map(|i| i.name).collect();
        return invalid(format!("no sandbox image `{name}` (offered: {})", offered.join(", ")));
    }
    let max = &cfg.max;
    if let Some(cpus) = choice.cpus
        && !(cpus > 0.0 && cpus <= max.cpus)
    {
        return invalid(format!("cpus must be above 0 and at most {}", max.cpus));
    }
    let limits = [("memory_mb", choice.memory_mb, max.memory_mb), ("disk_mb", choice.disk_mb, max.disk_mb)];
    for (what, asked, most) in limits {
        if let Some(asked) = asked
            && !(1..=most).contains(&asked)
        {
            return invalid(format!("{what} must be 1 to {most}"));
        }
    }
    if let Some(pids) = choice.pids
        && !(16..=max.pids).contains(&pids)
    {
        return invalid(format!("pids must be 16 to {}", max.pids));
    }
    Ok(())
}

/// Refuses model settings and client limits out of range, naming the field.
fn check_model_settings(settings: Option<&ModelSettings>, limits: Option<&ClientLimits>) -> Result<()> {
    if let Some(s) = settings {
        s.check().map_err(|e| OpsError::invalid("model_settings", e.to_string()))?;
    }
    if let Some(l) = limits {
        l.check().map_err(|e| OpsError::invalid("client_limits", e.to_string()))?;
    }
    Ok(())
}

/// Stores whichever of `settings` and `limits` is given on `agent` (the other kept).
async fn set_model_settings(
    tx: &mut AuditedTx,
    agent: &mut Agent,
    settings: Option<ModelSettings>,
    limits: Option<ClientLimits>,
) -> Result<()> {
    if settings.is_none() && limits.is_none() {
        return Ok(());
    }
    agent.model_settings = settings.unwrap_or(agent.model_settings);
    agent.client_limits = limits.unwrap_or(agent.client_limits);
    tx.set_model_settings(agent.id, &agent.model_settings, &agent.client_limits).await?;
    Ok(())
}

/// The most models one side task may fall back through.
const MAX_TASK_MODELS: usize = 4;

/// Refuses routing OpenRouter could not follow and side-task chains with a model the front end
/// may not name, too many models, or (for `vision`) a model that reads only text. A task given
/// no models is dropped: it uses the auxiliary model again.
fn check_model_routing(
    urls: ModelUrls<'_>,
    routing: Option<&ProviderRouting>,
    tasks: Option<&mut AuxiliaryModels>,
) -> Result<()> {
    if let Some(routing) = routing {
        routing.check().map_err(|e| OpsError::invalid("provider_routing", e.to_string()))?;
    }
    let Some(tasks) = tasks else { return Ok(()) };
    tasks.retain(|_, chain| !chain.is_empty());
    for (task, chain) in tasks.iter() {
        if chain.len() > MAX_TASK_MODELS {
            return Err(OpsError::invalid("auxiliary_models", format!("{task}: at most {MAX_TASK_MODELS} models")));
        }
        urls.check_models(chain.iter().map(|m| ("auxiliary_models", m)))?;
        let blind = chain.iter().find(|m| hermes_core::model_names::reads_only_text(&m.model));
        if let (AuxiliaryTask::Vision, Some(blind)) = (task, blind) {
            return Err(OpsError::invalid("auxiliary_models", format!("vision: {} reads only text", blind.model)));
        }
    }
    Ok(())
}

/// Refuses routing an OpenRouter endpoint of the agent could not be sent: routing goes with
/// OpenRouter's chat completions API only, so an OpenRouter model set to speak another API
/// would silently drop it (and with it a `data_collection: deny`). `main` is the agent's
/// base URL and API, `others` every other model it names.
fn routing_reaches<'m>(
    routing: Option<&ProviderRouting>,
    main: (&str, Option<hermes_core::ApiMode>),
    others: impl IntoIterator<Item = &'m ModelRef>,
) -> Result<()> {
    if routing.is_none_or(ProviderRouting::is_empty) {
        return Ok(());
    }
    let on_openrouter = |url: &str| {
        url::Url::parse(url).ok().and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case(OPENROUTER_HOST)))
    };
    let endpoints = std::iter::once(main).chain(others.into_iter().map(|m| (m.base_url.as_str(), m.api_mode)));
    for (url, mode) in endpoints {
        if on_openrouter(url) == Some(true) && !matches!(mode, None | Some(hermes_core::ApiMode::ChatCompletions)) {
            return Err(OpsError::invalid(
                "provider_routing",
                format!("{url} is set to speak another API than chat completions, which alone takes provider routing"),
            ));
        }
    }
    Ok(())
}

/// Refuses a request naming both `vision_model` and a `vision` chain: the first is the
/// one-model form of the second, and one request must not say two things.
fn one_vision_chain(vision_model: Option<&ModelRef>, tasks: Option<&AuxiliaryModels>) -> Result<()> {
    match (vision_model, tasks.and_then(|t| t.get(&AuxiliaryTask::Vision))) {
        (Some(_), Some(_)) => Err(OpsError::invalid(
            "auxiliary_models",
            "vision: give either vision_model or auxiliary_models.vision, not both",
        )),
        _ => Ok(()),
    }
}

/// Stores whichever of `routing` and `tasks` is given on `agent` (the other kept).
async fn set_model_routing(
    tx: &mut AuditedTx,
    agent: &mut Agent,
    routing: Option<ProviderRouting>,
    tasks: Option<AuxiliaryModels>,
) -> Result<()> {
    if routing.is_none() && tasks.is_none() {
        return Ok(());
    }
    tx.set_model_routing(agent.id, routing.as_ref(), tasks.as_ref()).await?;
    agent.provider_routing = routing.unwrap_or_else(|| agent.provider_routing.clone());
    agent.auxiliary_models = tasks.unwrap_or_else(|| agent.auxiliary_models.clone());
    Ok(())
}

/// Text that says something, or `None`.
fn given(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

/// Makes the agent `new` describes in `tenant`, with its key sealed by `secrets`, recorded as
/// `agent.created`. With no toolsets named it gets the defaults of the installation `installed`
/// describes. `Conflict` when the tenant has an agent of that name.
pub async fn create(
    store: &Store,
    by: Audit,
    tenant: TenantId,
    mut new: NewAgent,
    (urls, secrets, sandboxes): (ModelUrls<'_>, Option<&SecretBox>, &SandboxConfig),
    installed: Installed,
) -> Result<Agent> {
    if let Some(choice) = &new.sandbox {
        check_sandbox(sandboxes, choice)?;
    }
    check_model_settings(new.model_settings.as_ref(), new.client_limits.as_ref())?;
    check_model_routing(urls, new.provider_routing.as_ref(), new.auxiliary_models.as_mut())?;
    one_vision_chain(new.vision_model.as_ref(), new.auxiliary_models.as_ref())?;
    let others = new.fallbacks.iter().chain(&new.auxiliary).chain(&new.vision_model);
    let tasks = new.auxiliary_models.iter().flat_map(|t| t.values().flatten());
    routing_reaches(new.provider_routing.as_ref(), (&new.provider_base_url, new.api_mode), others.chain(tasks))?;
    let base = urls.check("provider_base_url", &new.provider_base_url)?;
    let others = new.fallbacks.iter().map(|m| ("fallbacks", m));
    let others = others.chain(new.auxiliary.iter().map(|m| ("auxiliary", m)));
    urls.check_models(others.chain(new.vision_model.iter().map(|m| ("vision_model", m))))?;
    let toolsets = match new.toolsets.take() {
        Some(named) => named,
        None => installed.defaults_for(&new),
    };
    check_toolsets(&toolsets)?;
    let provider_key = new.provider_key.filter(|k| !k.is_empty());
    if provider_key.is_some() && secrets.is_none() {
        return Err(OpsError::invalid("provider_key", "storing provider keys needs secrets.master_key"));
    }
    let provider_key_hosts = match new.provider_key_hosts {
        hosts if hosts.is_empty() => base.host_str().map(str::to_ascii_lowercase).into_iter().collect(),
        hosts => hosts,
    };
    let row = hermes_store::NewAgent {
        name: new.name.trim().to_owned(),
        model: new.model.trim().to_owned(),
        provider_base_url: base.as_str().trim_end_matches('/').to_owned(),
        provider_key,
        soul: given(new.soul),
        system_message: given(new.system_message),
        toolsets,
        provider_key_hosts,
        fallbacks: new.fallbacks,
        api_mode: new.api_mode,
        auxiliary: new.auxiliary,
        context_window: new.context_window,
    };
    let mut tx = store.audited(tenant, by).await?;
    let mut agent = tx.create_agent(row, secrets).await?;
    if new.egress {
        tx.set_egress(agent.id, true).await?;
        agent.egress = true;
    }
    if let Some(mode) = new.approval_mode.filter(|m| *m != agent.approval_mode) {
        tx.set_approval_mode(agent.id, mode).await?;
        agent.approval_mode = mode;
    }
    // New agents give each person their own workspace unless asked otherwise.
    let scope = new.workspace.unwrap_or(WorkspaceScope::Person);
    if scope != agent.workspace {
        tx.set_workspace_scope(agent.id, scope).await?;
        agent.workspace = scope;
    }
    if let Some(choice) = new.sandbox.filter(|c| !c.is_default()) {
        tx.set_sandbox_choice(agent.id, &choice).await?;
        agent.sandbox = choice;
    }
    set_model_settings(&mut tx, &mut agent, new.model_settings, new.client_limits).await?;
    set_model_routing(&mut tx, &mut agent, new.provider_routing, new.auxiliary_models).await?;
    let vision = new.vision_model;
    let images = new.image_input_mode.filter(|m| *m != agent.image_input_mode);
    if vision.is_some() || images.is_some() {
        tx.set_vision(agent.id, images, Some(vision.as_ref())).await?;
        agent.image_input_mode = images.unwrap_or(agent.image_input_mode);
        agent.vision_model = vision;
    }
    tx.commit(Change::new("agent.created", "agent", agent.id).after(&agent)).await?;
    Ok(agent)
}

/// `text` as the closed set `T`, or why `param` is refused.
fn parsed<T: std::str::FromStr<Err: std::fmt::Display>>(param: &'static str, text: Option<&str>) -> Result<Option<T>> {
    text.map(str::parse).transpose().map_err(|e: T::Err| OpsError::invalid(param, e.to_string()))
}

/// Applies `edit` to `before` (an agent of `tenant`), recorded as `agent.updated` with the
/// agent before and after; the agent as it now is. New sessions use it.
pub async fn edit(
    store: &Store,
    by: Audit,
    (tenant, before): (TenantId, &Agent),
    mut edit: AgentEdit,
    (urls, sandboxes): (ModelUrls<'_>, &SandboxConfig),
) -> Result<Agent> {
    if let Some(choice) = &edit.sandbox {
        check_sandbox(sandboxes, choice)?;
    }
    check_model_settings(edit.model_settings.as_ref(), edit.client_limits.as_ref())?;
    check_model_routing(urls, edit.provider_routing.as_ref(), edit.auxiliary_models.as_mut())?;
    one_vision_chain(edit.vision_model.as_ref().and_then(Option::as_ref), edit.auxiliary_models.as_ref())?;
    let fallbacks = edit.fallbacks.as_ref().unwrap_or(&before.fallbacks);
    let tasks = edit.auxiliary_models.as_ref().unwrap_or(&before.auxiliary_models);
    let others = fallbacks.iter().chain(&before.auxiliary).chain(tasks.values().flatten());
    let routing = edit.provider_routing.as_ref().unwrap_or(&before.provider_routing);
    routing_reaches(Some(routing), (&before.provider_base_url, before.api_mode), others)?;
    check_toolsets(edit.toolsets.iter().flatten())?;
    let vision = edit.vision_model.iter().flatten().map(|m| ("vision_model", m));
    urls.check_models(edit.fallbacks.iter().flatten().map(|m| ("fallbacks", m)).chain(vision))?;
    let images: Option<ImageInputMode> = parsed("image_input_mode", edit.image_input_mode.as_deref())?;
    let mode: Option<ApprovalMode> = parsed("approval_mode", edit.approval_mode.as_deref())?;
    let scope: Option<WorkspaceScope> = parsed("workspace", edit.workspace.as_deref())?;
    let changes = AgentChanges {
        model: edit.model.map(|m| m.trim().to_owned()).filter(|m| !m.is_empty()),
        soul: edit.soul,
        system_message: edit.system_message,
        toolsets: edit.toolsets,
        fallbacks: edit.fallbacks,
    };
    let mut tx = store.audited(tenant, by).await?;
    let mut after = tx.update_agent(before.id, &changes).await?;
    if let Some(egress) = edit.egress {
        tx.set_egress(before.id, egress).await?;
        after.egress = egress;
    }
    if let Some(mode) = mode {
        tx.set_approval_mode(before.id, mode).await?;
        after.approval_mode = mode;
    }
    if let Some(scope) = scope {
        tx.set_workspace_scope(before.id, scope).await?;
        after.workspace = scope;
    }
    if let Some(choice) = edit.sandbox {
        tx.set_sandbox_choice(before.id, &choice).await?;
        after.sandbox = choice;
    }
    set_model_settings(&mut tx, &mut after, edit.model_settings, edit.client_limits).await?;
    set_model_routing(&mut tx, &mut after, edit.provider_routing, edit.auxiliary_models).await?;
    if images.is_some() || edit.vision_model.is_some() {
        let model = edit.vision_model;
        tx.set_vision(before.id, images, model.as_ref().map(Option::as_ref)).await?;
        after.image_input_mode = images.unwrap_or(after.image_input_mode);
        if let Some(model) = model {
            after.vision_model = model;
        }
    }
    tx.commit(Change::new("agent.updated", "agent", before.id).before(before).after(&after)).await?;
    Ok(after)
}
