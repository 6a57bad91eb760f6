//! Turns run aside from any conversation: a delegated task's child and the learning loop's
//! review. Each is a system prompt and one input on a child's limits; nothing is compacted
//! (they start fresh and stay short). Only a child's tool starts are told, to its parent turn.

use hermes_agent::{EventSink, Turn, TurnEnd, TurnJournal, TurnLimits, TurnStart};
use hermes_core::{ChatMessage, TurnEventKind};
use hermes_tools::{ToolCtx, ToolRegistry};

use crate::models::{Models, TurnModel};

/// Emits nothing: a review has no one listening.
pub(crate) struct Quiet;

impl EventSink for Quiet {
    fn emit(&self, _: TurnEventKind) {}
}

/// What one aside turn runs with.
pub(crate) struct Aside<'a, J> {
    pub model: &'a TurnModel,
    /// The provider's model id.
    pub model_name: &'a str,
    /// Sampling and reasoning (the agent's for a child, the provider's for auxiliary work).
    pub settings: &'a hermes_core::ModelSettings,
    pub tools: &'a ToolRegistry,
    pub tool_ctx: &'a ToolCtx,
    pub journal: &'a mut J,
    /// Where its events go.
    pub events: &'a dyn EventSink,
    /// Steps at most; the other limits are a child's.
    pub max_iterations: u32,
}

impl<J: TurnJournal> Aside<'_, J> {
    /// Runs `input` under the system `prompt` to the turn's end.
    pub async fn run(self, prompt: String, input: ChatMessage) -> TurnEnd {
        let limits = TurnLimits { max_iterations: self.max_iterations, ..TurnLimits::child() };
        let start = TurnStart { messages: vec![ChatMessage::system(prompt), input], completed_steps: 0, turn_start: 1 };
        let turn = Turn {
            model: self.model,
            model_name: self.model_name,
            settings: self.settings,
            tools: self.tools,
            tool_ctx: self.tool_ctx,
            journal: self.journal,
            events: self.events,
            limits: &limits,
            context: None,
        };
        turn.run(start).await
    }
}

/// The models of work done after a turn, aside from it (its review, its session's title): the
/// agent's, metered into the returned buffer as `purpose` and charged to `ledger`'s turn,
/// within the agent's spending caps.
pub(crate) async fn models_after(
    rt: &crate::Runtime,
    tenant: hermes_core::TenantId,
    agent: &hermes_store::Agent,
    ledger: crate::budget::Ledger,
    purpose: hermes_core::CallPurpose,
) -> Result<(Models, std::sync::Arc<hermes_llm::CallBuffer>), hermes_store::StoreError> {
    let api_key = agent.provider_key(rt.ctx.secrets.as_ref())?;
    let meter = std::sync::Arc::new(hermes_llm::CallBuffer::default());
    let models = Models {
        deps: rt.models.clone(),
        tenant,
        agent: agent.clone(),
        workspace: hermes_core::Workspace::Shared,
        api_key,
        meter: meter.clone(),
        purpose,
        pools: std::sync::Arc::new(rt.ctx.store.tenancy().credential_pools(tenant).await?),
        ledger,
        capped: true,
    };
    Ok((models, meter))
}
