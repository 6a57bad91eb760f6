//! The writes: made by the other tenant only (the owner's rows are compared before and after).

use chrono::Utc;
use hermes_core::outbox::{Destination, OutboxPayload};
use hermes_core::{ChatMessage, TurnOutcome};
use hermes_store::channels::ChannelAccess;
use hermes_store::cron::JobChanges;
use hermes_store::event_hooks::EventHookChanges;
use hermes_store::goals::GoalStep;
use hermes_store::turn_files::TurnFile;
use hermes_store::webhooks::WebhookChanges;
use hermes_store::{Budget, CuratorRules, Idempotency, MemoryTarget, NewChannel, Park, SkillUse, TurnStatus};
use serde_json::json;

use super::Cases;
use crate::common;
use crate::tenant_world::{self, World};

pub(super) async fn check(w: &World, c: &mut Cases) {
    sessions_and_turns(w, c).await;
    agents_and_skills(w, c).await;
    channels_and_chats(w, c).await;
    schedules_and_hooks(w, c).await;
}

async fn sessions_and_turns(w: &World, c: &mut Cases) {
    let (s, b, session) = (&w.store, w.b.id, w.a.session);
    let run = &w.running;
    c.not_found("set_session_title", s.conversations().set_session_title(b, session, Some("mine now")).await);
    c.not_found("create_child_session", s.conversations().create_child_session(b, session, "child").await);
    c.refused("set_todos", s.conversations().set_todos(b, session, &json!([])).await);
    c.refused(
        "create_session",
        s.conversations().create_session(b, w.a.agent, hermes_core::SessionSource::Api, "user-1", None).await,
    );
    c.not_found("fork_session", s.conversations().fork_session(b, session, None, None).await);
    c.not_found("delete_session", s.conversations().delete_session(b, None, session).await);
    c.not_found("undo_last_exchange", s.conversations().undo_last_exchange(b, session).await);
    c.not_found("enqueue_turn", s.turns().enqueue_turn(b, common::turn_in(w.a.agent, session, "hi")).await);
    // With its own agent, still not into another tenant's session.
    c.not_found("enqueue_turn", s.turns().enqueue_turn(b, common::turn_in(w.b.agent, session, "hi")).await);
    let (key, _) = s.tenancy().create_api_key(b, None, "beta-ci", None).await.unwrap();
    let idem = Idempotency { api_key: key.id, key: "k".into(), fingerprint: "f".into() };
    c.not_found(
        "enqueue_turn_once",
        s.turns().enqueue_turn_once(b, common::turn_in(w.a.agent, session, "hi"), &idem).await,
    );
    c.nothing("claim_next_turn", s.turns().claim_next_turn(b, w.queued_session, "thief", common::LEASE, 0).await);
    c.nothing("request_cancel", s.turns().request_cancel(b, w.queued, &TurnOutcome::cancelled()).await);
    c.nothing("request_cancel", s.turns().request_cancel(b, run.turn, &TurnOutcome::cancelled()).await);
    c.nothing("mark_steer", s.conversations().mark_steer(b, w.queued).await);
    c.nothing("absorb_steers", s.conversations().absorb_steers(b, run.turn).await);
    c.nothing("add_tool_time", s.tenancy().add_tool_time(b, w.done, 1_000, true).await);
    c.nothing("delete_response", s.turns().delete_response(b, w.done).await);

    // A writer of the other tenant holding the owner's current fence is still fenced out.
    let msg = ChatMessage::assistant("not yours");
    let input = ChatMessage::user("work on it");
    c.fenced("append_message", s.conversations().append_message(b, run.session, run.fence, run.turn, 1, &msg).await);
    c.fenced("begin_turn", s.conversations().begin_turn(b, run.session, run.fence, run.turn, &input, "prompt").await);
    let outcome = common::answered("not yours");
    let finish = s
        .turns()
        .finish_turn(
            b,
            run.session,
            run.turn,
            &run.owner,
            run.fence,
            TurnStatus::Completed,
            &outcome,
            Some((1, &msg)),
            &[],
        )
        .await;
    c.fenced("finish_turn", finish);
    let prompt = json!({"question": "?"});
    let park = Park {
        agent: w.a.agent,
        call_id: "call-9",
        kind: hermes_core::InteractionKind::Clarify,
        prompt: &prompt,
        timeout: common::LEASE,
    };
    c.fenced("park_turn", s.turns().park_turn(b, run.session, run.turn, &run.owner, run.fence, &park).await);
    let body = [(None, ChatMessage::user("summary"))];
    c.fenced(
        "fork_compacted",
        s.conversations().fork_compacted(b, run.session, run.fence, run.turn, "prompt", &body).await,
    );
    c.nothing("extend_leases", common::extend_lease(s, b, run.turn, &run.owner).await);
    c.nothing("release_turn", s.turns().release_turn(b, run.turn, &run.owner).await);

    c.not_found(
        "answer_interaction",
        s.turns().answer_interaction(b, w.interaction, &hermes_core::InteractionAnswer::text("x"), None).await,
    );
    c.refused(
        "grant_session_patterns",
        s.turns().grant_session_patterns(b, w.a.agent, session, &["rm".to_owned()]).await,
    );
    c.refused("set_goal", s.conversations().set_goal(b, session, "mine now", 3).await);
    c.nothing("set_goal_active", s.conversations().set_goal_active(b, session, false).await);
    c.nothing("edit_subgoals", s.conversations().edit_subgoals(b, session, |all| all.push("mine now".into())).await);
    c.nothing("clear_goal", s.conversations().clear_goal(b, session).await);
    let step = |_: &hermes_store::goals::Goal| {
        Some(GoalStep {
            state: hermes_core::GoalState::Done,
            turns_used: 1,
            judge_failures: 0,
            reason: "mine now".into(),
            notice: None,
            continuation: Some("go on".into()),
        })
    };
    c.not_found("start_goal", s.conversations().start_goal(b, session, "mine now", &[], 5, None).await);
    c.nothing("resume_goal", s.conversations().resume_goal(b, session, None).await);
    c.nothing("goal_step", s.conversations().goal_step(b, (w.a.agent, session, w.done), None, step).await);
    // The file's key is (turn, target), without the tenant: the other tenant must still not
    // replace the owner's file.
    let file = TurnFile {
        target: tenant_world::FILE_TARGET.into(),
        name: "x".into(),
        mime: "text/plain".into(),
        data: Ok(b"not yours".to_vec()),
    };
    c.not_found("save_turn_file", s.turns().save_turn_file(b, w.done, &file).await);
    c.refused("stream_begin", s.chat().stream_begin(b, w.done, "42").await);
    c.nothing("stream_message", s.chat().stream_message(b, w.done, "preview-9").await);
    c.nothing("stream_finalize", s.chat().stream_finalize(b, w.done).await);
}

async fn agents_and_skills(w: &World, c: &mut Cases) {
    let (s, b, agent) = (&w.store, w.b.id, w.a.agent);
    c.not_found("set_egress", s.turns().set_egress(b, agent, true).await);
    let vision = hermes_store::ModelRef { base_url: "https://x.test/v1".into(), model: "eye".into(), api_mode: None };
    c.not_found(
        "set_vision",
        s.agents().set_vision(b, agent, Some(hermes_core::ImageInputMode::Text), Some(Some(&vision))).await,
    );
    c.not_found(
        "set_voice_mode",
        s.conversations().set_voice_mode(b, agent, "telegram:c:dm:1", hermes_core::VoiceMode::All).await,
    );
    c.not_found("set_approval_mode", s.turns().set_approval_mode(b, agent, hermes_core::ApprovalMode::Off).await);
    c.not_found("set_agent_model", s.conversations().set_agent_model(b, agent, "another-model").await);
    c.not_found("set_key_limits", s.tenancy().set_key_limits(b, w.key, Some(1), Some(1)).await);
    c.not_found("revoke_api_key", s.tenancy().revoke_api_key(b, w.key).await);
    c.not_found("create_api_key", s.tenancy().create_api_key(b, Some(agent), "stolen", None).await);
    let budget =
        Budget { agent_id: Some(agent), period: hermes_core::BudgetPeriod::Day, hard_usd: Some(0.0), soft_usd: None };
    c.not_found("set_budget", s.tenancy().set_budget(b, &budget).await);
    // Alpha's domain cannot be taken by another tenant's provider, nor its provider removed.
    let sso = hermes_store::admin::SsoSettings {
        issuer: "https://login.beta.test".into(),
        client_id: "x".into(),
        client_secret: None,
        scopes: "openid".into(),
        email_domains: vec![tenant_world::SSO_DOMAIN.into()],
        join_as: Some(hermes_core::MemberRole::Admin),
        trust_unverified_email: false,
    };
    c.refused("set_tenant_sso", s.admin().set_tenant_sso(b, &sso, None, &super::audit()).await);
    c.nothing("delete_tenant_sso", s.admin().delete_tenant_sso(b, &super::audit()).await);
    c.nothing("delete_budget", s.tenancy().delete_budget(b, Some(agent), hermes_core::BudgetPeriod::Day).await);
    let mcp = serde_json::json!({"url": "https://evil.example/mcp"});
    c.refused(
        "set_mcp_server",
        s.agents().set_mcp_server(b, agent, "tracker", (&mcp, true), &serde_json::json!({}), None).await,
    );
    c.not_found("delete_mcp_server", s.agents().delete_mcp_server(b, agent, "tracker").await);
    let placement = hermes_core::secret_placement::SecretPlacement::default();
    c.refused("bind_secret", s.agents().bind_secret(b, agent, "GITHUB_TOKEN", "openai", &placement).await);
    c.not_found("unbind_secret", s.agents().unbind_secret(b, agent, "GITHUB_TOKEN").await);
    let mine = |_: &[String]| Ok::<_, ()>(Some(vec!["mine now".to_owned()]));
    c.refused("update_memory", s.agents().update_memory(b, agent, MemoryTarget::Memory, "", mine).await);
    let skill = tenant_world::skill(tenant_world::SKILL, "not yours");
    c.refused("save_agent_skill", s.agents().save_agent_skill(b, agent, &skill, "edit", "agent").await);
    c.nothing("delete_agent_skill", s.agents().delete_agent_skill(b, agent, tenant_world::SKILL, "op").await);
    c.not_found("disable_skill", s.agents().disable_skill(b, agent, tenant_world::SKILL, true, "op").await);
    c.refused(
        "record_skill_use",
        s.agents().record_skill_use(b, agent, tenant_world::SKILL, SkillUse::Viewed, Utc::now()).await,
    );
    c.not_found("set_skill_pinned", s.agents().set_skill_pinned(b, agent, tenant_world::SKILL, true).await);
    // A year on, the owner's unused skill would be archived by its own curator pass.
    let later = Utc::now() + chrono::Duration::days(365);
    // By name: the other tenant's pool of that provider is its own.
    c.nothing("set_pool_strategy", s.tenancy().set_pool_strategy(b, "openai", "random").await);
    c.nothing("curate_agent_skills", s.agents().curate_agent_skills(b, agent, later, CuratorRules::default()).await);
}

async fn channels_and_chats(w: &World, c: &mut Cases) {
    let (s, b, channel) = (&w.store, w.b.id, w.channel);
    let access = ChannelAccess { admins: Some(vec!["intruder".into()]), ..ChannelAccess::default() };
    c.not_found("update_channel_access", s.chat().update_channel_access(b, channel, &access).await);
    c.nothing("delete_channel", s.chat().delete_channel(b, channel).await);
    c.nothing("set_bot_username", s.chat().set_bot_username(b, channel, "intruder_bot").await);
    c.nothing(
        "set_channel_status",
        s.chat().set_channel_status(b, channel, hermes_core::ChannelStatus::Blocked, Some("intruder")).await,
    );
    c.nothing("advance_poll_offset", s.chat().advance_poll_offset(b, channel, 1_000_000).await);
    // The gateway sends an outbox row through its channel's bot: never another tenant's.
    let dest = Destination::chat(hermes_core::Platform::Telegram, channel, "42", None);
    let payload = OutboxPayload::text("sent through your bot");
    c.not_found("enqueue_outbox", s.chat().enqueue_outbox(b, &dest, "intruder:1", &payload).await);
    let new = NewChannel {
        agent_id: w.a.agent,
        platform: hermes_core::Platform::Telegram,
        mode: hermes_core::ChannelMode::Webhook,
        api_base: "http://127.0.0.1:9".into(),
        credentials: json!({"token": "beta-bot"}),
        bot_identity: "beta-bot".into(),
        dm_policy: "open".parse().unwrap(),
        group_policy: "open".parse().unwrap(),
        allow_users: Vec::new(),
        allow_chats: Vec::new(),
        admins: Vec::new(),
    };
    c.not_found("create_channel", s.chat().create_channel(b, new, Some(&w.secrets)).await);
    c.not_found("start_pairing", s.chat().start_pairing(b, channel, "u-1", None, "chat-1").await);
    c.not_found("approve_pairing", s.chat().approve_pairing(b, channel, &w.pairing_code).await);
    c.not_found("resume_route", s.conversations().resume_route(b, &w.route, w.route_session).await);
    c.nothing("end_route", s.conversations().end_route(b, &w.route).await);
}

async fn schedules_and_hooks(w: &World, c: &mut Cases) {
    let (s, b, job) = (&w.store, w.b.id, w.job.id);
    let stolen = hermes_store::cron::NewJob { name: "stolen".into(), ..common::job(&w.a, "stolen", Utc::now()) };
    c.not_found("create_job", s.automation().create_job(b, &stolen).await);
    let rename = JobChanges { name: Some("mine now".into()), ..JobChanges::default() };
    c.not_found("update_job", s.automation().update_job(b, job, &rename).await);
    c.not_found("set_job_state", s.automation().set_job_state(b, job, Some("paused by another tenant"), None).await);
    c.not_found("fire_job", s.automation().fire_job(b, job, "not yours").await);
    c.nothing("delete_job", s.automation().delete_job(b, job).await);
    c.refused(
        "create_webhook",
        s.automation().create_webhook(b, &common::webhook(&w.a, "stolen"), Some(&w.secrets)).await,
    );
    let off = WebhookChanges { enabled: Some(false), ..WebhookChanges::default() };
    c.not_found("update_webhook", s.automation().update_webhook(b, w.webhook, &off).await);
    c.not_found("rotate_webhook_secret", s.automation().rotate_webhook_secret(b, w.webhook, Some(&w.secrets)).await);
    c.nothing("delete_webhook", s.automation().delete_webhook(b, w.webhook).await);
    let off = EventHookChanges { enabled: Some(false), ..EventHookChanges::default() };
    c.not_found("update_event_hook", s.automation().update_event_hook(b, w.event_hook, &off).await);
    c.not_found("ping_event_hook", s.automation().ping_event_hook(b, w.event_hook).await);
    let delivery = s.automation().event_deliveries(w.a.id, w.event_hook, 1).await.unwrap()[0].id;
    c.not_found("resend_event", s.automation().resend_event(b, w.event_hook, delivery).await);
    c.nothing("delete_event_hook", s.automation().delete_event_hook(b, w.event_hook).await);
}
