//! Prices and spending caps, as an operator and a team set them.

use hermes_core::{AgentId, BudgetPeriod, TenantId};
use hermes_store::{Budget, ModelPrice};

use super::TestEnv;

impl TestEnv {
    /// Prices the models `model` matches at `input` and `output` dollars a million tokens.
    pub async fn price_tokens(&self, model: &str, input: f64, output: f64) {
        let price = ModelPrice { model: model.into(), input, output, ..Default::default() };
        self.store.tenancy().set_model_price(&price).await.unwrap();
    }

    /// Caps what `tenant` (or only its `agent`) spends a `period`: at `hard` turns stop, at
    /// `soft` the team is warned.
    pub async fn cap_spending(
        &self,
        tenant: TenantId,
        agent: Option<AgentId>,
        period: BudgetPeriod,
        (hard, soft): (Option<f64>, Option<f64>),
    ) {
        let cap = Budget { agent_id: agent, period, hard_usd: hard, soft_usd: soft };
        self.store.tenancy().set_budget(tenant, &cap).await.unwrap();
    }
}
