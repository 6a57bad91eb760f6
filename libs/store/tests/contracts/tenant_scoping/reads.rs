//! The reads: the owner finds it, the other tenant does not.

use chrono::Utc;
use hermes_core::TenantId;
use hermes_core::outbox::{CronLabel, RunLabel};
use hermes_store::{SearchOrder, SearchScope, SessionFilter, UsageGroup};

use super::Cases;
use crate::tenant_world::{self, World};

/// Runs `$call` as the owner (`found`: it must succeed; `some`: it must find something), then
/// as the other tenant (`found`: `NotFound`; `some`: the empty answer).
macro_rules! read {
    ($w:ident, $cases:ident, $method:literal, $t:ident => $call:expr, found) => {{
        let $t = $w.a.id;
        super::owner_finds($method, $call.await);
        let $t = $w.b.id;
        $cases.not_found($method, $call.await);
    }};
    ($w:ident, $cases:ident, $method:literal, $t:ident => $call:expr, some) => {{
        let $t = $w.a.id;
        super::owner_finds_some($method, $call.await);
        let $t = $w.b.id;
        $cases.nothing($method, $call.await);
    }};
}

fn scope(w: &World, tenant: TenantId) -> SearchScope {
    SearchScope { tenant, agent: w.a.agent, user_key: "user-1".into(), current: None }
}

pub(super) async fn check(w: &World, c: &mut Cases) {
    let s = &w.store;
    let (session, agent) = (w.a.session, w.a.agent);
    // A day either side, so a run across midnight still covers the owner's usage.
    let (from, to) = (Utc::now().date_naive().pred_opt().unwrap(), Utc::now().date_naive().succ_opt().unwrap());
    let roles = ["user".to_owned(), "assistant".to_owned()];
    let words = hermes_store::search_text::parse_query("hello").unwrap();

    // Sessions and their transcripts.
    read!(w, c, "session", t => s.conversations().session(t, session), found);
    read!(w, c, "session_user_key", t => s.conversations().session_user_key(t, session), found);
    read!(w, c, "session_parent", t => s.conversations().session_parent(t, session), found);
    read!(w, c, "session_info", t => s.conversations().session_info(t, None, session), found);
    read!(w, c, "session_lineage", t => s.conversations().session_lineage(t, session), found);
    read!(w, c, "export_session", t => s.conversations().export_session(t, session), found);
    read!(w, c, "scroll_session", t => s.conversations().scroll_session(&scope(w, t), session, 1, 5, &roles), found);
    read!(w, c, "todos", t => s.conversations().todos(t, session), some);
    read!(w, c, "mcp_servers", t => s.agents().mcp_servers(t, agent), some);
    read!(w, c, "secret_bindings", t => s.agents().secret_bindings(t, agent), some);
    read!(w, c, "bound_secrets", t => s.agents().bound_secrets(t, agent), some);
    read!(w, c, "list_sessions", t => s.conversations().list_sessions(t, Some(agent), 100, 0), some);
    read!(w, c, "session_messages", t => s.conversations().session_messages(t, session), some);
    read!(w, c, "messages_after", t => s.conversations().messages_after(t, session, 0, None), some);
    read!(w, c, "last_user_text", t => s.conversations().last_user_text(t, session), some);
    read!(w, c, "compaction_ancestors", t => s.conversations().compaction_ancestors(t, session), some);
    read!(w, c, "search_sessions", t => s.conversations().search_sessions(&scope(w, t), &words, &roles, SearchOrder::Newest, 10, 0), some);
    read!(w, c, "recent_sessions", t => s.conversations().recent_sessions(&scope(w, t), 10, 0), some);
    // By the owner's agent: the other tenant's own sessions are not the question.
    let by_agent = SessionFilter { agent: Some(agent), ..Default::default() };
    read!(w, c, "find_sessions", t => s.conversations().find_sessions(t, &by_agent, 10, 0), some);
    let said = SessionFilter { tsquery: Some(words.clone()), ..Default::default() };
    read!(w, c, "find_sessions (search)", t => s.conversations().find_sessions(t, &said, 10, 0), some);

    // Turns.
    read!(w, c, "turn_state", t => s.turns().turn_state(t, w.done), found);
    read!(w, c, "turn_overview", t => s.turns().turn_overview(t, w.done), found);
    read!(w, c, "turn_messages", t => s.conversations().turn_messages(t, w.done), some);
    read!(w, c, "has_claimable_turn", t => s.turns().has_claimable_turn(t, w.queued_session), some);
    read!(w, c, "turn_reply_to", t => s.automation().turn_reply_to(t, w.done), some);
    read!(w, c, "turn_model_calls", t => s.tenancy().turn_model_calls(t, w.done), some);
    read!(w, c, "turn_files", t => s.turns().turn_files(t, w.done), some);
    read!(w, c, "stored_response", t => s.turns().stored_response(t, w.done), found);
    read!(w, c, "response_chain", t => s.turns().response_chain(t, w.done), found);
    read!(w, c, "conversation_head", t => s.turns().conversation_head(t, tenant_world::CONVERSATION), some);

    // Interactions.
    read!(w, c, "pending_interaction", t => s.turns().pending_interaction(t, w.interaction), found);
    read!(w, c, "session_pending_interaction", t => s.turns().session_pending_interaction(t, session), some);
    read!(w, c, "turn_pending_interaction", t => s.turns().turn_pending_interaction(t, w.waiting), some);
    read!(w, c, "turn_resolution", t => s.turns().turn_resolution(t, w.done), some);
    read!(w, c, "approval_grants", t => s.turns().approval_grants(t, agent, session), some);

    // Agents, their memory, skills, credentials, budgets and usage.
    read!(w, c, "agent", t => s.agents().agent(t, agent), found);
    read!(w, c, "agent_by_name", t => s.agents().agent_by_name(t, "alpha-only"), found);
    read!(w, c, "list_agents", t => async {
        s.agents().list_agents(t).await.map(|all| all.into_iter().filter(|a| a.id == w.named_agent).map(|a| a.id).collect::<Vec<_>>())
    }, some);
    read!(w, c, "memory_snapshot", t => s.agents().memory_snapshot(t, agent, "user-1"), some);
    read!(w, c, "visible_skills", t => s.agents().visible_skills(t, agent), some);
    read!(w, c, "find_skill", t => s.agents().find_skill(t, agent, tenant_world::SKILL), some);
    read!(w, c, "skill_events", t => s.agents().skill_events(t, agent, 10), some);
    read!(w, c, "credential_pools", t => s.tenancy().credential_pools(t), some);
    read!(w, c, "budget_states", t => s.tenancy().budget_states(t, agent, Utc::now()), some);
    read!(w, c, "tenant_budgets", t => s.tenancy().tenant_budgets(t, Utc::now()), some);
    read!(w, c, "tenant_sso", t => s.admin().tenant_sso(t), found);
    read!(w, c, "sso_provider", t => s.admin().sso_provider(t, Some(&w.secrets)), some);
    read!(w, c, "usage_report", t => s.tenancy().usage_report(t, Some(agent), UsageGroup::Agent, from, to), some);
    read!(w, c, "delivery_targets", t => s.automation().delivery_targets(t, agent, "telegram:42", None, &RunLabel::Cron(CronLabel { job_id: uuid::Uuid::nil().into(), name: "x".into() })), some);
    c.answers("skill_index_version", (0, 0), s.agents().skill_index_version(w.b.id).await);

    // Channels and chats.
    read!(w, c, "channel", t => s.chat().channel(t, w.channel), found);
    read!(w, c, "list_channels", t => s.chat().list_channels(t), some);
    read!(w, c, "pending_pairings", t => s.chat().pending_pairings(t, w.channel), some);
    read!(w, c, "inbound_seen", t => s.chat().inbound_seen(t, tenant_world::INBOUND_SOURCE, "update-1"), some);
    read!(w, c, "route_state", t => s.conversations().route_state(t, &w.route), some);
    read!(w, c, "route_sessions", t => s.conversations().route_sessions(t, &w.route, 10), some);
    read!(w, c, "route_busy_turns", t => s.chat().route_busy_turns(t, &w.route), some);
    // The other tenant's route has no session yet: its next message starts a fresh one.
    let fresh = async |t| {
        let (target, _) = s.turns().route_target(t, &w.route, Utc::now(), async |_| false).await?;
        Ok::<_, hermes_store::StoreError>(matches!(target, hermes_store::TurnTarget::Route { fresh: true, .. }))
    };
    assert!(!fresh(w.a.id).await.unwrap(), "the owner's chat goes on in its session");
    c.answers("route_target", true, fresh(w.b.id).await);
    // Unknown to the other tenant, a chat preview counts as taken over (its sender stops).
    c.answers("stream_finalized", true, s.chat().stream_finalized(w.b.id, w.done).await);

    // Cron, webhooks, event hooks, goals.
    let job_id = w.job.id.to_string();
    read!(w, c, "find_job", t => s.automation().find_job(t, None, &job_id), found);
    read!(w, c, "list_jobs", t => s.automation().list_jobs(t, Some(agent)), some);
    read!(w, c, "job_runs", t => s.automation().job_runs(t, w.job.id, 10), some);
    read!(w, c, "cron_run_settings", t => s.automation().cron_run_settings(t, w.cron_turn), some);
    read!(w, c, "webhook", t => s.automation().webhook(t, w.webhook), found);
    read!(w, c, "list_webhooks", t => s.automation().list_webhooks(t), some);
    read!(w, c, "event_hook", t => s.automation().event_hook(t, w.event_hook), found);
    read!(w, c, "list_event_hooks", t => s.automation().list_event_hooks(t), some);
    read!(w, c, "event_deliveries", t => s.automation().event_deliveries(t, w.event_hook, 10), some);
    read!(w, c, "goal", t => s.conversations().goal(t, session), some);
    read!(w, c, "goal_to_judge", t => s.conversations().goal_to_judge(t, session), some);
}
