//! The `web` toolset for one turn: the worker's shared services, the tenant's own keys from
//! its credential pools (each only where its allowed hosts include the service's host), its
//! daily allowance counted in Redis across workers, and the sandbox for long pages.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use hermes_cache::WindowCounters;
use hermes_config::WebBackend;
use hermes_core::{AuxiliaryTask, ChatMessage, TenantId};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_store::{CredentialPools, SecretBox, Store};
use hermes_tools::ToolRegistry;
use hermes_web::{Allowance, Metered, PageCondenser, QuotaSpent, TenantWebKeys, Web, WebExtract, WebSearch, WebTurn};

use crate::models::{Models, TurnModel};
use crate::tools::Toolkit;

const DAY: Duration = Duration::from_secs(24 * 60 * 60);

/// Each tenant's daily allowance: its own quota, else the installation's; counted per UTC
/// day in Redis. Redis is coordination only: when it is down the call goes ahead.
pub(crate) struct RedisAllowance {
    pub counters: WindowCounters,
    pub store: Store,
    /// `web.searches_per_day`, `web.extracts_per_day`.
    pub defaults: (u32, u32),
}

impl Allowance for RedisAllowance {
    fn take(&self, tenant: TenantId, what: Metered, n: u32) -> BoxFuture<'_, Result<(), QuotaSpent>> {
        Box::pin(async move {
            let own = self.store.tenancy().web_quotas(tenant).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "cannot read the tenant's web quotas; using the defaults");
                Default::default()
            });
            let limit = match what {
                Metered::Search => own.searches_per_day.unwrap_or(self.defaults.0),
                Metered::Extract => own.extracts_per_day.unwrap_or(self.defaults.1),
            };
            if limit == 0 {
                return Ok(());
            }
            let name = format!("web-{}:{tenant}", what.as_str());
            match self.counters.take(&name, DAY, u64::from(n), u64::from(limit)).await {
                Ok(Some(_)) => Ok(()),
                Ok(None) => Err(QuotaSpent { what: what.as_str(), limit }),
                Err(e) => {
                    tracing::warn!(error = %e, "web allowance unavailable; allowing the call");
                    Ok(())
                }
            }
        })
    }
}

/// The tenant's own keys for the web services, from pools named after them (`tavily`, ...).
fn tenant_keys(web: &Web, tenant: TenantId, pools: &CredentialPools, secrets: Option<&SecretBox>) -> TenantWebKeys {
    let services = [WebBackend::Firecrawl, WebBackend::Tavily, WebBackend::Exa, WebBackend::Brave];
    services
        .into_iter()
        .filter_map(|backend| {
            let key = crate::keys::service_key(pools, tenant, secrets, backend.as_str(), web.base_url(backend)?)?;
            Some((backend, key))
        })
        .collect()
}

/// The agent's `web_extract` chain, summarising long pages for `web_extract`.
struct TaskCondenser {
    model: TurnModel,
    model_name: String,
}

impl PageCondenser for TaskCondenser {
    fn condense<'a>(
        &'a self,
        instructions: &'a str,
        text: String,
        max_tokens: u32,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let request = ChatRequest {
                model: self.model_name.clone(),
                messages: vec![ChatMessage::system(instructions), ChatMessage::user(text)],
                tools: Arc::from([]),
                max_tokens: Some(max_tokens),
                settings: Default::default(),
            };
            let answer = self.model.complete(&request, &mut NoDeltas).await.map_err(|e| e.to_string())?;
            Ok(answer.message.text())
        })
    }
}

/// Long pages are summarised only for agents that give `web_extract` models of their own.
fn condenser(models: &Models) -> Option<Arc<dyn PageCondenser>> {
    let own = models.agent.auxiliary_models.get(&AuxiliaryTask::WebExtract).is_some_and(|chain| !chain.is_empty());
    own.then(|| {
        let (model, model_name) = models.for_task(AuxiliaryTask::WebExtract);
        Arc::new(TaskCondenser { model, model_name }) as Arc<dyn PageCondenser>
    })
}

/// Adds `web_search` and `web_extract` to `tools` for this turn.
pub(crate) fn register(kit: &Toolkit, tenant: TenantId, models: &Models, tools: &mut ToolRegistry) {
    let Some(web) = kit.web.clone() else { return };
    let keys = tenant_keys(&web, tenant, &models.pools, kit.secrets.as_ref());
    // Long pages are saved where read_file can page through them, when this turn has it.
    let spill = kit.spill_for(tools);
    let allowance = kit.web_allowance.clone();
    let turn = Arc::new(WebTurn { web, keys, allowance, spill, condenser: condenser(models) });
    tools.register(Arc::new(WebSearch(turn.clone())));
    tools.register(Arc::new(WebExtract(turn)));
}
