//! The models of one turn: the main model with its fallback chain, each side task's chain (its
//! own models, else the agent's auxiliary model, else the main one), and the context engine
//! whose summaries come from the compression chain (resting 600 s after a failure), then the
//! main model, then a static digest. OpenRouter is sent the agent's routing for the main model
//! and its fallbacks, and only its data-collection promise for side tasks' own models.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hermes_agent::compress::{CompressionConfig, Compressor, Summarizer};
use hermes_agent::{DefaultEngine, ModelSummarizer};
use hermes_cache::KeyPools;
use hermes_config::{AnthropicCacheTtl, LlmConfig};
use hermes_core::{AgentId, AuxiliaryTask, CallPurpose, ChatMessage, ImageInputMode, ProviderRouting, TenantId};
use hermes_llm::anthropic::CacheTtl;
use hermes_llm::keys::provider_for_url;
use hermes_llm::{
    AnyTransport, ApiMode, CallBuffer, Credential, Endpoint, ResilientModel, RetryPolicy, resolve_api_mode,
};
use hermes_store::{Agent, CredentialPools, ModelRef, SecretBox, Store};

use crate::keys::TenantKeys;

/// How long a failed compression chain is left out of summaries.
pub(crate) const AUX_COOLDOWN: Duration = Duration::from_secs(600);

/// Every model a turn uses: resilient (retries, key rotation, fallbacks) and within budget.
pub(crate) type TurnModel = crate::budget::Budgeted<ResilientModel<AnyTransport, TenantKeys>>;

/// What every model the worker builds is made with: one for the whole worker, so an auxiliary
/// model that failed rests for every turn here, not only the one that saw it fail.
pub(crate) struct ModelDeps {
    pub http: reqwest::Client,
    /// Where calls reserve against spending caps.
    pub store: Store,
    /// Key rotation shared by every worker.
    pub key_pools: KeyPools,
    pub secrets: Option<SecretBox>,
    pub llm: LlmConfig,
    /// `llm.prompt_cache_gateways`, shared by every transport built.
    pub cache_gateways: Arc<[String]>,
    /// When each agent's compression chain (other than its main model) last failed: it rests
    /// before the next summary.
    pub aux_failed_at: Mutex<HashMap<AgentId, Instant>>,
}

/// Builds the models of one agent's turns (owned, so a delegated child can build its own).
#[derive(Clone)]
pub(crate) struct Models {
    pub deps: Arc<ModelDeps>,
    pub tenant: TenantId,
    pub agent: Agent,
    /// Whose sandbox the turn's tools use (images named by path are read from it).
    pub workspace: hermes_core::Workspace,
    pub api_key: Option<String>,
    /// Where every answered call is reported (stored with the turn's checkpoints).
    pub meter: Arc<CallBuffer>,
    /// What the main model's calls are for (`main`, or `subagent` in a delegated child).
    pub purpose: CallPurpose,
    /// The tenant's key pools, read with the turn.
    pub pools: Arc<CredentialPools>,
    /// The turn the calls are recorded under.
    pub ledger: crate::budget::Ledger,
    /// Whether a spending cap covered the agent when the turn started: only then does each
    /// call reserve against the caps (a cap set meanwhile applies from the next turn).
    pub capped: bool,
}

fn endpoint(base_url: &str, model: &str, mode: Option<ApiMode>, routing: ProviderRouting) -> Endpoint {
    let provider = provider_for_url(base_url);
    let api_mode = resolve_api_mode(mode, &provider, base_url);
    Endpoint { provider, base_url: base_url.to_owned(), model: model.to_owned(), api_mode, routing }
}

impl Models {
    fn primary(&self) -> Endpoint {
        let routing = self.agent.provider_routing.clone();
        endpoint(&self.agent.provider_base_url, &self.agent.model, self.agent.api_mode, routing)
    }

    /// One of the main model's fallbacks: routed as the main model is.
    fn fallback(&self, m: &ModelRef) -> Endpoint {
        endpoint(&m.base_url, &m.model, m.api_mode, self.agent.provider_routing.clone())
    }

    /// A model of the agent's side work (auxiliary, vision, a task's own): the routing's
    /// providers may not serve it, so only the promise about prompts goes along.
    fn side(&self, m: &ModelRef) -> Endpoint {
        endpoint(&m.base_url, &m.model, m.api_mode, self.agent.provider_routing.for_side_tasks())
    }

    /// What side work is metered as: `auxiliary` from a turn; a background task keeps its own.
    fn side_purpose(&self) -> CallPurpose {
        if self.purpose == CallPurpose::Main { CallPurpose::Auxiliary } else { self.purpose }
    }

    /// `task`'s chain when it is not the main model: its own models, else the auxiliary model.
    fn side_chain(&self, task: AuxiliaryTask) -> Option<(Vec<Endpoint>, String)> {
        let own = self.agent.auxiliary_models.get(&task).filter(|chain| !chain.is_empty());
        let chain: Vec<&ModelRef> = match own {
            Some(chain) => chain.iter().collect(),
            None => self.agent.auxiliary.iter().collect(),
        };
        let first = chain.first()?.model.clone();
        Some((chain.into_iter().map(|m| self.side(m)).collect(), first))
    }

    fn keys(&self) -> TenantKeys {
        let primary = self.primary();
        TenantKeys {
            pools: self.deps.key_pools.clone(),
            secrets: self.deps.secrets.clone(),
            tenant: self.tenant,
            agent_key: self.api_key.clone().map(|secret| {
                let id = format!("agent:{}", self.agent.id);
                (primary.provider, Credential { id, secret, allowed_hosts: self.agent.provider_key_hosts.clone() })
            }),
            stored: self.pools.clone(),
        }
    }

    fn build(&self, chain: Vec<Endpoint>, purpose: CallPurpose) -> TurnModel {
        let cfg = &self.deps.llm;
        let retry = RetryPolicy {
            max_retries: cfg.max_retries,
            base: Duration::from_millis(cfg.retry_base_millis),
            max_delay: Duration::from_secs(120),
        };
        let ttl = match cfg.anthropic_cache_ttl {
            AnthropicCacheTtl::FiveMinutes => CacheTtl::FiveMinutes,
            AnthropicCacheTtl::OneHour => CacheTtl::OneHour,
        };
        let models = chain.iter().map(|e| e.model.clone()).collect();
        let priority_capable = chain.iter().filter(|e| e.has_priority_tier()).map(|e| e.model.clone()).collect();
        let gateways = self.deps.cache_gateways.clone();
        let transport = AnyTransport::new(self.deps.http.clone(), ttl, gateways);
        let inner = ResilientModel::new(transport, self.keys(), chain, retry).with_meter(self.meter.clone(), purpose);
        // A reservation outlives every attempt the call may make, then lapses.
        let attempts = u64::from(cfg.max_retries) + 1;
        let lease =
            Duration::from_secs(cfg.request_timeout_seconds.saturating_mul(attempts).saturating_add(60).min(3600));
        crate::budget::Budgeted {
            inner,
            store: self.deps.store.clone(),
            tenant: self.tenant,
            agent: self.agent.id,
            models,
            priority_capable,
            meter: self.meter.clone(),
            ledger: self.ledger,
            lease,
            capped: self.capped,
            warned: Default::default(),
        }
    }

    /// The main model and its fallback chain.
    pub fn main(&self) -> TurnModel {
        let mut chain = vec![self.primary()];
        chain.extend(self.agent.fallbacks.iter().map(|f| self.fallback(f)));
        self.build(chain, self.purpose)
    }

    /// The model of a delegated child, and its name: the `delegation` task's own models (a
    /// cheaper one, say), else the main model with its fallbacks.
    pub fn child(&self) -> (TurnModel, String) {
        match self.agent.auxiliary_models.get(&AuxiliaryTask::Delegation).filter(|chain| !chain.is_empty()) {
            Some(chain) => {
                let name = chain.first().map_or_else(|| self.agent.model.clone(), |m| m.model.clone());
                (self.build(chain.iter().map(|m| self.side(m)).collect(), self.purpose), name)
            }
            None => (self.main(), self.agent.model.clone()),
        }
    }

    /// The model for side task `task` (a judge, a review) with its fallbacks, and the first
    /// one's name: the task's own models, else the auxiliary model, else the main one.
    pub fn for_task(&self, task: AuxiliaryTask) -> (TurnModel, String) {
        match self.side_chain(task) {
            Some((chain, name)) => (self.build(chain, self.side_purpose()), name),
            None => (self.build(vec![self.primary()], self.side_purpose()), self.agent.model.clone()),
        }
    }

    /// The model that answers an MCP server's sampling requests, and its name: `model` (the
    /// server's `sampling.model`) on the agent's provider, else the agent's main model.
    pub fn sampling(&self, model: Option<&str>) -> (TurnModel, String) {
        let name = model.unwrap_or(&self.agent.model).to_owned();
        let routing = self.agent.provider_routing.for_side_tasks();
        let on_provider = endpoint(&self.agent.provider_base_url, &name, self.agent.api_mode, routing);
        (self.build(vec![on_provider], CallPurpose::Sampling), name)
    }

    /// The model that looks at images for the agent (`vision_analyze`, and pictures for a
    /// model that reads only text) with its fallbacks, and the first one's name: the `vision`
    /// task's own models, else its vision model, else its auxiliary model, else its main one,
    /// passing over those known to read only text. `None`: none can see.
    pub fn vision(&self) -> Option<(TurnModel, String)> {
        let sees = |m: &&ModelRef| !hermes_llm::models::reads_only_text(&m.model);
        let own = self.agent.auxiliary_models.get(&AuxiliaryTask::Vision);
        let chain: Vec<&ModelRef> = match (own, &self.agent.vision_model) {
            (Some(chain), _) => chain.iter().filter(sees).collect(),
            (None, Some(m)) => vec![m],
            (None, None) => self.agent.auxiliary.iter().filter(sees).collect(),
        };
        match chain.first() {
            Some(first) => {
                let name = first.model.clone();
                Some((self.build(chain.into_iter().map(|m| self.side(m)).collect(), self.side_purpose()), name))
            }
            None if !hermes_llm::models::reads_only_text(&self.agent.model) => {
                Some((self.build(vec![self.primary()], self.side_purpose()), self.agent.model.clone()))
            }
            None => None,
        }
    }

    /// Whether the images people send reach the main model as descriptions rather than as
    /// images (upstream's `image_input_mode`; `auto` as upstream decides it).
    pub fn images_as_text(&self) -> bool {
        match self.agent.image_input_mode {
            ImageInputMode::Native => false,
            ImageInputMode::Text => true,
            ImageInputMode::Auto => {
                self.agent.vision_model.is_some() || hermes_llm::models::reads_only_text(&self.agent.model)
            }
        }
    }

    /// The context engine: the agent's window, and its summarizers in order.
    pub fn context_engine(&self) -> DefaultEngine<Summaries<'_>> {
        let window = self
            .agent
            .context_window
            .and_then(|w| u64::try_from(w).ok())
            .unwrap_or_else(|| hermes_llm::models::context_window(&self.agent.model));
        let mut summarizers = Vec::new();
        let resting = self
            .deps
            .aux_failed_at
            .lock()
            .ok()
            .and_then(|m| m.get(&self.agent.id).copied())
            .is_some_and(|at| at.elapsed() < AUX_COOLDOWN);
        if let Some((chain, model_name)) = self.side_chain(AuxiliaryTask::Compression)
            && !resting
        {
            let model = self.build(chain, CallPurpose::Auxiliary);
            summarizers.push(Summaries {
                inner: ModelSummarizer { model, model_name },
                on_failure: Some((&self.deps, self.agent.id)),
            });
        }
        // A summary is auxiliary work, whichever model writes it.
        let main = self.build(vec![self.primary()], CallPurpose::Auxiliary);
        summarizers.push(Summaries {
            inner: ModelSummarizer { model: main, model_name: self.agent.model.clone() },
            on_failure: None,
        });
        DefaultEngine { compressor: Compressor::new(CompressionConfig::for_window(window)), summarizers }
    }
}

/// A summarizer that, for the auxiliary model, records its failure so it rests a while.
pub(crate) struct Summaries<'a> {
    inner: ModelSummarizer<TurnModel>,
    on_failure: Option<(&'a ModelDeps, AgentId)>,
}

impl Summarizer for Summaries<'_> {
    async fn summarize(&self, prompt: Vec<ChatMessage>, max_tokens: u32) -> Result<String, String> {
        let result = self.inner.summarize(prompt, max_tokens).await;
        if result.is_err()
            && let Some((deps, agent)) = self.on_failure
            && let Ok(mut failed) = deps.aux_failed_at.lock()
        {
            failed.insert(agent, Instant::now());
        }
        result
    }
}
