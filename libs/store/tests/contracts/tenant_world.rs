//! A tenant with something of every kind the store keeps (built through the public API), and a
//! second tenant that will try to reach it by id; plus a snapshot of every row a tenant owns,
//! to show that the second one changed nothing.

use std::collections::BTreeMap;

use chrono::Utc;
use hermes_core::{AgentId, ApiKeyId, ChatMessage, SessionId, TenantId, TurnId, Usage};
use hermes_store::turn_files::TurnFile;
use hermes_store::{
    Budget, MemoryTarget, ModelCall, NewCredential, NewResponse, NewSkill, Route, SecretBox, SkillUse, Store,
    TurnStatus, TurnTarget,
};
use serde_json::json;

use crate::common::{self, Tenant};

/// Tenant `a` owns everything named here; tenant `b` has only an agent and an empty session.
pub struct World {
    pub store: Store,
    /// The test database as its owner, for looking at rows.
    pub db: sqlx::PgPool,
    pub secrets: SecretBox,
    pub a: Tenant,
    pub b: Tenant,
    /// A second agent of `a`, with a name `b` does not use.
    pub named_agent: AgentId,
    /// In `a.session`: completed (after an answered approval), with messages, a stored
    /// response, a model call, a file, a chat preview and a reply address.
    pub done: TurnId,
    /// In `a.session`: parked on `interaction`.
    pub waiting: TurnId,
    pub interaction: hermes_core::InteractionId,
    /// A session with a turn a worker holds.
    pub running: Held,
    /// A session with a queued turn (and a queued steer in `running.session`).
    pub queued_session: SessionId,
    pub queued: TurnId,
    pub key: ApiKeyId,
    pub channel: hermes_core::ChannelId,
    pub pairing_code: String,
    pub job: hermes_store::cron::Job,
    /// The turn of the job's run.
    pub cron_turn: TurnId,
    pub webhook: hermes_core::WebhookId,
    pub event_hook: hermes_core::EventHookId,
    pub route: Route,
    pub route_session: SessionId,
}

/// A turn and the claim that holds it.
pub struct Held {
    pub session: SessionId,
    pub turn: TurnId,
    pub owner: String,
    pub fence: i64,
}

pub const SKILL: &str = "notes";
pub const CONVERSATION: &str = "conversation-1";
pub const INBOUND_SOURCE: &str = "telegram:alpha-bot";
pub const FILE_TARGET: &str = "report.txt";

pub fn skill(name: &str, text: &str) -> NewSkill {
    NewSkill {
        name: name.to_owned(),
        category: "general".into(),
        description: format!("{name} skill"),
        skill_md: text.to_owned(),
        meta: json!({"name": name}),
        content_hash: format!("hash-{text}"),
        files: vec![("notes/extra.md".into(), text.to_owned())],
    }
}

pub fn model_call() -> ModelCall {
    ModelCall {
        purpose: hermes_core::CallPurpose::Main,
        provider: "openai".into(),
        model: "test-model".into(),
        key_id: None,
        usage: Usage::default(),
        latency_ms: 120,
    }
}

pub async fn world(db: &sqlx::PgPool) -> World {
    world_named(db, "alpha", "beta").await
}

/// A [`world`] whose tenants have other names (a second world in the same database): its
/// inbound source and its identity provider's domain are named after the first.
pub async fn world_named(db: &sqlx::PgPool, first: &str, second: &str) -> World {
    let store = common::store(db);
    let secrets = common::secrets();
    let a = common::tenant(&store, first).await;
    let b = common::tenant(&store, second).await;
    let named_agent =
        store.agents().create_agent(a.id, common::new_agent(&format!("{first}-only")), None).await.unwrap().id;
    let channel = common::channel(&store, &a, &secrets, &format!("{first}-bot")).await.id;
    let (done, waiting, interaction) = finished_and_waiting(&store, &a, channel).await;
    let running = held(&store, &a).await;
    let steer = common::queue(&store, &a, running.session, "also this").await;
    store.conversations().mark_steer(a.id, steer).await.unwrap();
    let queued_session = store
        .conversations()
        .create_session(a.id, a.agent, hermes_core::SessionSource::Api, "user-1", None)
        .await
        .unwrap();
    let queued = common::queue(&store, &a, queued_session, "later").await;
    let key = store.tenancy().create_api_key(a.id, Some(a.agent), "ci", None).await.unwrap().0.id;
    let pairing_code = match store.chat().start_pairing(a.id, channel, "u-9", Some("Nine"), "chat-9").await.unwrap() {
        hermes_store::PairingStart::Code { code, .. } => code,
        other => panic!("no pairing code: {other:?}"),
    };
    let (job, cron_turn) = job_with_a_run(&store, &a).await;
    let webhook =
        store.automation().create_webhook(a.id, &common::webhook(&a, "github"), Some(&secrets)).await.unwrap().0.id;
    let events = ["turn.finished".to_owned()];
    let event_hook = store
        .automation()
        .create_event_hook(a.id, "http://127.0.0.1:9/hook", &events, "ops", Some(&secrets))
        .await
        .unwrap()
        .0
        .id;
    store.automation().ping_event_hook(a.id, event_hook).await.unwrap();
    let route = Route {
        agent: a.agent,
        key: "telegram:chat:42".into(),
        source: hermes_core::SessionSource::Telegram,
        user_key: "tg:42".into(),
    };
    let target = TurnTarget::Route { route: route.clone(), fresh: true, replaces: None };
    let route_session = store
        .turns()
        .enqueue_turn(a.id, hermes_store::NewTurn { target, ..common::turn_in(a.agent, a.session, "hi") })
        .await
        .unwrap()
        .0;
    keepsakes(&store, &a, &secrets, first).await;
    World {
        store,
        db: db.clone(),
        secrets,
        a,
        b,
        named_agent,
        done,
        waiting,
        interaction,
        running,
        queued_session,
        queued,
        key,
        channel,
        pairing_code,
        job,
        cron_turn,
        webhook,
        event_hook,
        route,
        route_session,
    }
}

/// A turn parked on an approval that was answered "always", then completed; then a second turn
/// parked on a question nobody answered yet.
async fn finished_and_waiting(
    store: &Store,
    a: &Tenant,
    channel: hermes_core::ChannelId,
) -> (TurnId, TurnId, hermes_core::InteractionId) {
    let response = NewResponse {
        model: "bot".into(),
        previous: None,
        conversation: Some(CONVERSATION.into()),
        truncation: "disabled".into(),
    };
    let reply_to = hermes_core::outbox::Destination::chat(hermes_core::Platform::Telegram, channel, "42", None);
    let new = hermes_store::NewTurn {
        response: Some(response),
        reply_to: Some(reply_to),
        trace: None,
        ..common::turn_in(a.agent, a.session, "hello world")
    };
    let done = store.turns().enqueue_turn(a.id, new).await.unwrap().1;
    let first = common::claim(store, a.id, a.session, "worker-1", 1).await;
    let prompt = json!({"command": "rm -rf build", "pattern_keys": ["rm"]});
    let park = common::park(a.agent, "call-1", hermes_core::InteractionKind::Approval, &prompt);
    let asked = store.turns().park_turn(a.id, a.session, done, "worker-1", first.fence, &park).await.unwrap();
    store
        .turns()
        .answer_interaction(
            a.id,
            asked.id,
            &hermes_core::InteractionAnswer::Approval { choice: hermes_core::ApprovalChoice::Always },
            None,
        )
        .await
        .unwrap();
    let second = common::claim(store, a.id, a.session, "worker-2", 1).await;
    let (s, f) = (a.session, second.fence);
    store.conversations().begin_turn(a.id, s, f, done, &ChatMessage::user("hello world"), "prompt").await.unwrap();
    let answer = ChatMessage::assistant("hello to you");
    store.conversations().append_message(a.id, s, f, done, 1, &answer).await.unwrap();
    store.tenancy().add_tool_time(a.id, done, 250, true).await.unwrap();
    let file = TurnFile {
        target: FILE_TARGET.into(),
        name: "report.txt".into(),
        mime: "text/plain".into(),
        data: Ok(b"mine".to_vec()),
    };
    store.turns().save_turn_file(a.id, done, &file).await.unwrap();
    assert!(store.chat().stream_begin(a.id, done, "42").await.unwrap());
    assert!(store.chat().stream_message(a.id, done, "preview-1").await.unwrap());
    let outcome = common::answered("hello to you");
    store
        .turns()
        .finish_turn(a.id, s, done, "worker-2", f, TurnStatus::Completed, &outcome, None, &[model_call()])
        .await
        .unwrap();

    let waiting = common::queue(store, a, a.session, "and then?").await;
    let third = common::claim(store, a.id, a.session, "worker-3", 1).await;
    let question = json!({"question": "which one?"});
    let park = common::park(a.agent, "call-2", hermes_core::InteractionKind::Clarify, &question);
    let pending = store.turns().park_turn(a.id, a.session, waiting, "worker-3", third.fence, &park).await.unwrap();
    (done, waiting, pending.id)
}

async fn held(store: &Store, a: &Tenant) -> Held {
    let session = store
        .conversations()
        .create_session(a.id, a.agent, hermes_core::SessionSource::Api, "user-1", None)
        .await
        .unwrap();
    let turn = common::queue(store, a, session, "work on it").await;
    let claimed = common::claim(store, a.id, session, "worker-run", 1).await;
    Held { session, turn, owner: "worker-run".into(), fence: claimed.fence }
}

/// A due job claimed and started: one run, with its turn.
async fn job_with_a_run(store: &Store, a: &Tenant) -> (hermes_store::cron::Job, TurnId) {
    let due = Utc::now() - chrono::Duration::minutes(1);
    let job = store.automation().create_job(a.id, &common::job(a, "daily", due)).await.unwrap();
    let next = Utc::now() + chrono::Duration::hours(1);
    let plan = |_: &hermes_store::cron::Job| hermes_store::cron::Plan {
        run: true,
        next_run_at: Some(next),
        state: hermes_core::JobState::Scheduled,
        error: None,
    };
    let runs = store.system().claim_due_jobs("scheduler", Utc::now(), 10, 10, plan).await.unwrap();
    let session = store
        .conversations()
        .create_session(a.id, a.agent, hermes_core::SessionSource::Cron, "user-1", None)
        .await
        .unwrap();
    store
        .system()
        .start_run(runs[0].run_id, a.id, &common::turn_in(a.agent, session, "report"))
        .await
        .unwrap()
        .unwrap();
    let run = &store.automation().job_runs(a.id, job.id, 1).await.unwrap()[0];
    let turn = TurnId::from_uuid(run.turn_id.unwrap());
    (job, turn)
}

/// Memory, credentials, skills, a goal, a task list, a budget, grants, an inbound message, an
/// identity provider.
async fn keepsakes(store: &Store, a: &Tenant, secrets: &SecretBox, name: &str) {
    for (target, user) in [(MemoryTarget::Memory, ""), (MemoryTarget::User, "user-1")] {
        let change = |_: &[String]| Ok::<_, ()>(Some(vec!["likes tea".to_owned()]));
        store.agents().update_memory(a.id, a.agent, target, user, change).await.unwrap().unwrap();
    }
    let credential = NewCredential {
        provider: "openai".into(),
        label: "main".into(),
        secret: "sk-alpha".into(),
        priority: 0,
        allowed_hosts: vec!["api.openai.com".into()],
    };
    store.tenancy().add_credential(a.id, credential, secrets).await.unwrap();
    store.tenancy().set_pool_strategy(a.id, "openai", "round_robin").await.unwrap();
    store.agents().save_agent_skill(a.id, a.agent, &skill(SKILL, "mine"), "create", "agent").await.unwrap();
    store.agents().save_tenant_skill(a.id, &skill("team-notes", "ours"), "admin").await.unwrap();
    store.agents().record_skill_use(a.id, a.agent, SKILL, SkillUse::Used, Utc::now()).await.unwrap();
    store.conversations().set_goal(a.id, a.session, "ship it", 5).await.unwrap();
    store
        .conversations()
        .set_todos(a.id, a.session, &json!([{"content": "write tests", "status": "pending"}]))
        .await
        .unwrap();
    store.conversations().set_voice_mode(a.id, a.agent, "telegram:chat:42", hermes_core::VoiceMode::All).await.unwrap();
    let budget = Budget {
        agent_id: Some(a.agent),
        period: hermes_core::BudgetPeriod::Day,
        hard_usd: Some(10.0),
        soft_usd: Some(5.0),
    };
    store.tenancy().set_budget(a.id, &budget).await.unwrap();
    store.turns().grant_session_patterns(a.id, a.agent, a.session, &["ls".to_owned()]).await.unwrap();
    let source = INBOUND_SOURCE.replace("alpha", name);
    store.chat().accept_inbound(a.id, &source, "update-1", &json!({"text": "hi"}), None, None).await.unwrap();
    let sso = hermes_store::admin::SsoSettings {
        issuer: "https://login.alpha.test".into(),
        client_id: "hermes".into(),
        client_secret: Some("alpha-secret".into()),
        scopes: "openid email".into(),
        email_domains: vec![SSO_DOMAIN.replace("alpha", name)],
        join_as: None,
        trust_unverified_email: false,
    };
    let by = hermes_store::admin::Audit {
        actor: hermes_store::admin::Actor {
            kind: hermes_store::admin::ActorKind::Cli,
            id: "t".into(),
            label: "t".into(),
        },
        request_id: None,
        source_address: None,
    };
    store.admin().set_tenant_sso(a.id, &sso, Some(secrets), &by).await.unwrap();
    let mcp = json!({"url": "https://mcp.alpha.test/mcp", "headers": {"Authorization": "***"}});
    let sealed = json!({"env": {}, "headers": {"Authorization": "Bearer alpha-mcp-token"}});
    store.agents().set_mcp_server(a.id, a.agent, "tracker", (&mcp, true), &sealed, Some(secrets)).await.unwrap();
    let placement = hermes_core::secret_placement::SecretPlacement::default();
    store.agents().bind_secret(a.id, a.agent, "GITHUB_TOKEN", "openai", &placement).await.unwrap();
}

/// The email domain alpha's own identity provider signs in.
pub const SSO_DOMAIN: &str = "alpha.test";

/// Every row `tenant` owns, table by table (tables with a `tenant_id`, the tenant's own row,
/// and the rows hanging off its skills and webhooks), as JSON text.
pub async fn rows_of(pool: &sqlx::PgPool, tenant: TenantId) -> BTreeMap<String, String> {
    let tables = common::tenant_tables(pool).await;
    let mut rows = BTreeMap::new();
    let mut read = async |name: &str, sql: String| {
        let text: Option<String> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(tenant.as_uuid()).fetch_one(pool).await.unwrap();
        rows.insert(name.to_owned(), text.unwrap_or_default());
    };
    for table in &tables {
        read(table, format!("SELECT {} FROM \"{table}\" t WHERE t.tenant_id = $1", agg("t"))).await;
    }
    read("tenants", format!("SELECT {} FROM tenants t WHERE t.id = $1", agg("t"))).await;
    read(
        "skill_files",
        format!("SELECT {} FROM skill_files f JOIN skills s ON s.id = f.skill_id WHERE s.tenant_id = $1", agg("f")),
    )
    .await;
    read(
        "webhook_deliveries",
        format!(
            "SELECT {} FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE w.tenant_id = $1",
            agg("d")
        ),
    )
    .await;
    rows
}

fn agg(alias: &str) -> String {
    format!("string_agg(to_jsonb({alias})::text, E'\\n' ORDER BY to_jsonb({alias})::text)")
}
