//! `hermesctl agent`: an agent of a tenant, with its provider, fallbacks and tools.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use hermes_config::HermesConfig;
use hermes_ops::agents::{self, ModelUrls};
use hermes_ops::toolsets::Installed;
use hermes_store::{SecretBox, Store};
use hermes_wire::admin::{AuxiliaryModels, ModelRef, NewAgent};

use crate::audit_trail::cli_actor;
use crate::cli::{print, print_lines, tenant};

#[derive(Subcommand)]
pub enum AgentCmd {
    /// Create an agent; its name is the `model` clients ask for.
    Create(Box<AgentCreate>),
    /// List a tenant's agents.
    List {
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Args)]
pub struct AgentCreate {
    #[arg(long)]
    tenant: String,
    #[arg(long)]
    name: String,
    /// The provider's model id, e.g. gpt-4o-mini or anthropic/claude-sonnet-4.
    #[arg(long)]
    model: String,
    /// The provider's OpenAI-compatible base URL, e.g. https://api.openai.com/v1.
    #[arg(long)]
    base_url: String,
    /// Name of an environment variable holding the provider API key (stored encrypted).
    #[arg(long)]
    api_key_env: Option<String>,
    /// A file with the agent's SOUL (identity prompt).
    #[arg(long)]
    soul_file: Option<PathBuf>,
    /// Standing instructions added to the agent's system prompt.
    #[arg(long)]
    system_message: Option<String>,
    /// Enabled toolsets, comma-separated (`--toolsets ''` for none). Default: the
    /// installation's (terminal, file, code_execution, todo, memory, session_search, skills,
    /// clarify, delegation, and web, vision, image_gen, tts and browser where their services
    /// are configured; over `--url`, the server's configuration decides).
    #[arg(long, value_delimiter = ',')]
    toolsets: Option<Vec<String>>,
    /// How dangerous shell commands are approved: manual (ask the user), off (never ask) or
    /// smart. Hard-blocked commands are refused in every mode.
    #[arg(long, default_value = "manual")]
    approval_mode: hermes_core::ApprovalMode,
    /// Let the agent's sandbox reach the public internet (private, loopback, link-local and
    /// metadata addresses stay unreachable).
    #[arg(long)]
    egress: bool,
    /// A model to fall back to, as MODEL@BASE_URL; repeat for a chain (keys come from the
    /// tenant's pool for that provider).
    #[arg(long = "fallback")]
    fallbacks: Vec<String>,
    /// Hosts the agent's key may be sent to (default: the base URL's host).
    #[arg(long = "key-host")]
    key_hosts: Vec<String>,
    /// The provider API: chat_completions, anthropic_messages or responses (default: from the provider).
    #[arg(long)]
    api_mode: Option<hermes_core::ApiMode>,
    /// A cheaper model for side tasks such as compaction summaries, as MODEL@BASE_URL.
    #[arg(long)]
    aux_model: Option<String>,
    /// The model's context window in tokens (default: known from the model's name).
    #[arg(long)]
    context_window: Option<i32>,
    /// A model that can see, as MODEL@BASE_URL: it describes the images people send to a
    /// model that reads only text, and answers vision_analyze.
    #[arg(long)]
    vision_model: Option<String>,
    /// How the model is shown the images people send: auto (from the model), native (as
    /// images) or text (described by the vision model).
    #[arg(long, default_value = "auto")]
    image_input_mode: hermes_core::ImageInputMode,
    /// Whose sandbox its tools use: person (one per end user), agent (one for everyone) or
    /// session (one per conversation).
    #[arg(long, default_value = "person")]
    workspace: hermes_core::WorkspaceScope,
    /// Its sandboxes' image, by the operator's name for it (default, node, browser, data, ...).
    #[arg(long)]
    sandbox_image: Option<String>,
    /// CPUs for each of its sandboxes (within the operator's sandbox.max).
    #[arg(long)]
    sandbox_cpus: Option<f64>,
    /// Memory for each of its sandboxes, in MB.
    #[arg(long)]
    sandbox_memory_mb: Option<u64>,
    #[command(flatten)]
    model_settings: ModelSettingsArgs,
    #[command(flatten)]
    routing: ModelRoutingArgs,
}

/// Where OpenRouter may send the agent's calls, and its side tasks' own models.
#[derive(Args)]
pub struct ModelRoutingArgs {
    /// OpenRouter providers to try first, in order, comma-separated (e.g. anthropic,google-vertex).
    #[arg(long, value_delimiter = ',')]
    openrouter_order: Vec<String>,
    /// The only OpenRouter providers that may serve its calls, comma-separated.
    #[arg(long, value_delimiter = ',')]
    openrouter_only: Vec<String>,
    /// OpenRouter providers that may never serve its calls, comma-separated.
    #[arg(long, value_delimiter = ',')]
    openrouter_ignore: Vec<String>,
    /// What OpenRouter ranks providers by: price, throughput or latency.
    #[arg(long)]
    openrouter_sort: Option<hermes_core::ProviderSort>,
    /// No providers beyond --openrouter-order when those fail.
    #[arg(long)]
    openrouter_no_fallbacks: bool,
    /// allow or deny providers that may store or train on prompts (kept for side tasks too).
    #[arg(long)]
    openrouter_data_collection: Option<hermes_core::DataCollection>,
    /// Only providers that honour every parameter sent.
    #[arg(long)]
    openrouter_require_parameters: bool,
    /// A side task's own model, as TASK=MODEL@BASE_URL (compression, vision, approval,
    /// goal_judge, review, title, web_extract); repeat a task for its fallback chain, in order.
    #[arg(long = "task-model")]
    task_models: Vec<String>,
}

impl ModelRoutingArgs {
    fn routing(&self) -> hermes_core::ProviderRouting {
        hermes_core::ProviderRouting {
            order: self.openrouter_order.clone(),
            only: self.openrouter_only.clone(),
            ignore: self.openrouter_ignore.clone(),
            sort: self.openrouter_sort,
            allow_fallbacks: self.openrouter_no_fallbacks.then_some(false),
            data_collection: self.openrouter_data_collection,
            require_parameters: self.openrouter_require_parameters.then_some(true),
        }
    }

    fn task_models(&self) -> anyhow::Result<AuxiliaryModels> {
        let mut tasks = AuxiliaryModels::new();
        for spec in &self.task_models {
            let (task, model) = spec.split_once('=').context("--task-model takes TASK=MODEL@BASE_URL")?;
            let task: hermes_core::AuxiliaryTask = task.trim().parse()?;
            tasks.entry(task).or_default().push(model_at(model).context("--task-model takes TASK=MODEL@BASE_URL")?);
        }
        Ok(tasks)
    }
}

/// How the agent's model is asked to answer (unset: the provider's defaults).
#[derive(Args)]
pub struct ModelSettingsArgs {
    /// Sampling temperature, 0 to 2.
    #[arg(long)]
    temperature: Option<f64>,
    /// Nucleus sampling, above 0 and at most 1.
    #[arg(long)]
    top_p: Option<f64>,
    /// The output cap of each model call.
    #[arg(long)]
    max_output_tokens: Option<u32>,
    /// none, minimal, low, medium, high or xhigh.
    #[arg(long)]
    reasoning_effort: Option<hermes_core::ReasoningEffort>,
    /// Anthropic's thinking budget in tokens (at least 1024), instead of the effort's.
    #[arg(long)]
    thinking_budget: Option<u32>,
    /// Priority processing where the model offers it (billed higher by the provider).
    #[arg(long)]
    fast: bool,
}

impl ModelSettingsArgs {
    fn settings(self) -> hermes_core::ModelSettings {
        hermes_core::ModelSettings {
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: self.max_output_tokens,
            reasoning_effort: self.reasoning_effort,
            thinking_budget: self.thinking_budget,
            fast: self.fast.then_some(true),
        }
    }
}

fn model_at(spec: &str) -> anyhow::Result<ModelRef> {
    let (model, base_url) = spec.split_once('@').context("expected MODEL@BASE_URL")?;
    Ok(ModelRef { model: model.to_owned(), base_url: base_url.to_owned(), api_mode: None })
}

pub async fn run_agent(json_mode: bool, config: &HermesConfig, store: &Store, cmd: AgentCmd) -> anyhow::Result<()> {
    match cmd {
        AgentCmd::Create(a) => {
            let t = tenant(store, &a.tenant).await?;
            let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
            let doors = (ModelUrls::Operator, secrets.as_ref(), &config.sandbox);
            let installed = Installed::from_config(config);
            let agent = agents::create(store, cli_actor(), t.id, a.into_new_agent()?, doors, installed).await?;
            print_created(json_mode, &agent, &t.name)?;
        }
        AgentCmd::List { tenant: name } => {
            let t = tenant(store, &name).await?;
            let agents = store.agents().list_agents(t.id).await?;
            print_lines(json_mode, &agents, |a| format!("{}\t{}\t{}\t{}", a.name, a.id, a.model, a.provider_base_url));
        }
    }
    Ok(())
}

/// What `hermesctl agent create` printed of the agent just made (on the database or over the
/// admin API: both show it as the admin API does).
pub(crate) fn print_created(json_mode: bool, agent: &impl serde::Serialize, tenant: &str) -> anyhow::Result<()> {
    let shown = serde_json::to_value(agent)?;
    let field = |name: &str| shown[name].as_str().unwrap_or_default().to_owned();
    let human = format!(
        "created agent {} ({}) in tenant {tenant}: model {} at {}",
        field("name"),
        field("id"),
        field("model"),
        field("provider_base_url")
    );
    print(json_mode, shown, human);
    Ok(())
}

impl AgentCreate {
    /// The tenant these arguments name.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// The agent these arguments describe, its provider key read from the environment and its
    /// soul from its file.
    pub(crate) fn into_new_agent(self) -> anyhow::Result<NewAgent> {
        let provider_key = match &self.api_key_env {
            Some(var) => Some(
                std::env::var(var)
                    .with_context(|| format!("environment variable {var} (from --api-key-env) is not set"))?,
            ),
            None => None,
        };
        let soul = match &self.soul_file {
            Some(path) => {
                Some(std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?)
            }
            None => None,
        };
        let fallbacks = self.fallbacks.iter().map(|f| model_at(f).context("--fallback takes MODEL@BASE_URL"));
        let model = |spec: Option<&str>, flag: &str| {
            spec.map(model_at).transpose().with_context(|| format!("{flag} takes MODEL@BASE_URL"))
        };
        Ok(NewAgent {
            name: self.name,
            model: self.model,
            provider_base_url: self.base_url,
            provider_key,
            soul,
            system_message: self.system_message,
            // `--toolsets ''` names none; blanks are no toolset's name.
            toolsets: self.toolsets.map(|named| named.into_iter().filter(|t| !t.trim().is_empty()).collect()),
            egress: self.egress,
            approval_mode: Some(self.approval_mode),
            fallbacks: fallbacks.collect::<anyhow::Result<_>>()?,
            api_mode: self.api_mode,
            auxiliary: model(self.aux_model.as_deref(), "--aux-model")?,
            context_window: self.context_window,
            vision_model: model(self.vision_model.as_deref(), "--vision-model")?,
            image_input_mode: Some(self.image_input_mode),
            provider_key_hosts: self.key_hosts,
            workspace: Some(self.workspace),
            sandbox: Some(hermes_core::SandboxChoice {
                image: self.sandbox_image,
                cpus: self.sandbox_cpus,
                memory_mb: self.sandbox_memory_mb,
                ..Default::default()
            }),
            model_settings: Some(self.model_settings.settings()),
            client_limits: None,
            // Sent only when given, so an older server's create still takes the body.
            provider_routing: Some(self.routing.routing()).filter(|r| !r.is_empty()),
            auxiliary_models: Some(self.routing.task_models()?).filter(|t| !t.is_empty()),
        })
    }
}
