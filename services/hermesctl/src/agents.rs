//! `hermesctl agent`: an agent of a tenant, with its provider, fallbacks and tools.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::json;

use hermes_config::HermesConfig;
use hermes_llm::keys::{provider_for_url, provider_hosts};
use hermes_store::{FallbackModel, NewAgent, SecretBox, Store};

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
    /// Enabled toolsets.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "terminal,file,code_execution,todo,memory,session_search,skills,clarify,delegation"
    )]
    toolsets: Vec<String>,
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
    /// Hosts the agent's key may be sent to (default: the provider's hosts, or the base URL's).
    #[arg(long = "key-host")]
    key_hosts: Vec<String>,
    /// The provider API: chat_completions, anthropic_messages or responses (default: from the provider).
    #[arg(long)]
    api_mode: Option<String>,
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
}

fn model_at(spec: &str) -> anyhow::Result<FallbackModel> {
    let (model, base_url) = spec.split_once('@').context("expected MODEL@BASE_URL")?;
    Ok(FallbackModel { model: model.to_owned(), base_url: base_url.to_owned(), api_mode: None })
}

/// The hosts a key for `base_url` may go to by default.
fn default_hosts(base_url: &str) -> anyhow::Result<Vec<String>> {
    let provider = provider_for_url(base_url);
    if let Some(hosts) = provider_hosts(&provider) {
        return Ok(hosts.iter().map(|h| (*h).to_owned()).collect());
    }
    let url = reqwest::Url::parse(base_url).with_context(|| format!("{base_url:?} is not a URL"))?;
    Ok(vec![url.host_str().context("the base URL has no host")?.to_ascii_lowercase()])
}

pub async fn run_agent(json_mode: bool, config: &HermesConfig, store: &Store, cmd: AgentCmd) -> anyhow::Result<()> {
    match cmd {
        AgentCmd::Create(a) => create(json_mode, config, store, *a).await?,
        AgentCmd::List { tenant: name } => {
            let t = tenant(store, &name).await?;
            let agents = store.list_agents(t.id).await?;
            print_lines(json_mode, &agents, |a| format!("{}\t{}\t{}\t{}", a.name, a.id, a.model, a.provider_base_url));
        }
    }
    Ok(())
}

/// Creates the agent `a` asks for: its provider key and soul read, its fallbacks parsed.
async fn create(json_mode: bool, config: &HermesConfig, store: &Store, a: AgentCreate) -> anyhow::Result<()> {
    let t = tenant(store, &a.tenant).await?;
    let provider_key = match &a.api_key_env {
        Some(var) => Some(
            std::env::var(var)
                .with_context(|| format!("environment variable {var} (from --api-key-env) is not set"))?,
        ),
        None => None,
    };
    let soul = match &a.soul_file {
        Some(path) => Some(std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?),
        None => None,
    };
    let secrets = SecretBox::from_config(config.secrets.master_key.as_deref())?;
    let fallbacks = a
        .fallbacks
        .iter()
        .map(|f| model_at(f).context("--fallback takes MODEL@BASE_URL"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let auxiliary = a.aux_model.as_deref().map(model_at).transpose().context("--aux-model takes MODEL@BASE_URL")?;
    let vision_model =
        a.vision_model.as_deref().map(model_at).transpose().context("--vision-model takes MODEL@BASE_URL")?;
    let provider_key_hosts = if a.key_hosts.is_empty() { default_hosts(&a.base_url)? } else { a.key_hosts };
    let new = NewAgent {
        auxiliary,
        context_window: a.context_window,
        api_mode: a.api_mode,
        fallbacks,
        provider_key_hosts,
        name: a.name,
        model: a.model,
        provider_base_url: a.base_url,
        provider_key,
        soul,
        system_message: a.system_message,
        toolsets: a.toolsets,
    };
    let mut agent = store.create_agent(t.id, new, secrets.as_ref()).await?;
    if a.approval_mode != agent.approval_mode {
        store.set_approval_mode(t.id, agent.id, a.approval_mode).await?;
        agent.approval_mode = a.approval_mode;
    }
    if a.egress {
        store.set_egress(t.id, agent.id, true).await?;
        agent.egress = true;
    }
    if vision_model.is_some() || a.image_input_mode != agent.image_input_mode {
        store.set_vision(t.id, agent.id, Some(a.image_input_mode), Some(vision_model.as_ref())).await?;
        agent.image_input_mode = a.image_input_mode;
        agent.vision_model = vision_model;
    }
    print(
        json_mode,
        json!(agent),
        format!(
            "created agent {} ({}) in tenant {}: model {} at {}",
            agent.name, agent.id, t.name, agent.model, agent.provider_base_url
        ),
    );
    Ok(())
}
