//! Fixtures the contract tests share: a tenant with an agent and a session, turns in it, a
//! worker's claim, and read-only looks at what Postgres holds.

use std::time::{Duration, Instant};

use hermes_core::{AgentId, ChatMessage, SessionId, TenantId, TurnId};
use hermes_store::{ClaimedTurn, HeldLease, LeaseState, NewAgent, NewTurn, Park, SecretBox, Store, TurnTarget};
use sqlx::PgPool;

/// A lease long enough that it never runs out during a test.
pub const LEASE: Duration = Duration::from_secs(600);

/// What a worker's heartbeat finds for one lease (the batch of one).
pub async fn extend_lease(
    store: &Store,
    tenant: TenantId,
    turn: TurnId,
    owner: &str,
) -> hermes_store::Result<LeaseState> {
    let found = store.system().extend_leases(&[HeldLease { tenant, turn, owner }], LEASE).await?;
    assert_eq!(found.len(), 1, "one answer per lease");
    assert_eq!(found[0].0, turn, "the answer names its turn");
    Ok(found[0].1)
}

/// A tenant with one agent and one empty session.
pub struct Tenant {
    pub id: TenantId,
    pub agent: AgentId,
    pub session: SessionId,
}

/// A store on the test's own database.
pub fn store(pool: &PgPool) -> Store {
    Store::from_pool(pool)
}

/// A secret box with a fresh master key (channels, hooks and credentials need one).
pub fn secrets() -> SecretBox {
    SecretBox::from_base64(&SecretBox::generate_master_key().unwrap()).unwrap()
}

pub fn new_agent(name: &str) -> NewAgent {
    NewAgent {
        name: name.to_owned(),
        model: "test-model".into(),
        provider_base_url: "http://127.0.0.1:9/v1".into(),
        provider_key: None,
        soul: None,
        system_message: None,
        toolsets: Vec::new(),
        provider_key_hosts: Vec::new(),
        fallbacks: Vec::new(),
        api_mode: None,
        auxiliary: None,
        context_window: None,
    }
}

/// Creates tenant `name` with agent `bot` and an empty session of end user `user-1`.
pub async fn tenant(store: &Store, name: &str) -> Tenant {
    let id = store.tenancy().create_tenant(name).await.unwrap().id;
    let agent = store.agents().create_agent(id, new_agent("bot"), None).await.unwrap().id;
    let session = store
        .conversations()
        .create_session(id, agent, hermes_core::SessionSource::Api, "user-1", Some("first"))
        .await
        .unwrap();
    Tenant { id, agent, session }
}

/// Another empty session of `t`'s agent.
pub async fn tenant_session(store: &Store, t: &Tenant) -> SessionId {
    store.conversations().create_session(t.id, t.agent, hermes_core::SessionSource::Api, "user-2", None).await.unwrap()
}

/// Tenant acme (see [`tenant`]) on `pool` with "hello" queued in its session.
pub async fn hello_queued(pool: &PgPool) -> (Store, Tenant, TurnId) {
    let store = store(pool);
    let t = tenant(&store, "acme").await;
    let turn = queue(&store, &t, t.session, "hello").await;
    (store, t, turn)
}

/// A user turn for an existing session.
pub fn turn_in(agent: AgentId, session: SessionId, text: &str) -> NewTurn {
    NewTurn::new(agent, TurnTarget::Existing(session), ChatMessage::user(text))
}

/// Queues a turn in `session`.
pub async fn queue(store: &Store, t: &Tenant, session: SessionId, text: &str) -> TurnId {
    store.turns().enqueue_turn(t.id, turn_in(t.agent, session, text)).await.unwrap().1
}

/// Claims the session's next turn for `owner` with a long lease; panics when there is none.
pub async fn claim(store: &Store, tenant: TenantId, session: SessionId, owner: &str, token: i64) -> ClaimedTurn {
    claim_for(store, tenant, session, owner, token, LEASE).await
}

/// Claims with `lease`; a zero lease is abandoned at once (as if its worker had died).
pub async fn claim_for(
    store: &Store,
    tenant: TenantId,
    session: SessionId,
    owner: &str,
    token: i64,
    lease: Duration,
) -> ClaimedTurn {
    store
        .turns()
        .claim_next_turn(tenant, session, owner, lease, token)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{owner} found no turn to claim"))
}

/// Waits until the abandoned turn of `session` may be claimed again.
pub async fn until_claimable(store: &Store, tenant: TenantId, session: SessionId) {
    until("the abandoned turn is claimable", || async {
        store.turns().has_claimable_turn(tenant, session).await.unwrap()
    })
    .await;
}

/// Polls `check` until it holds, failing after a generous deadline.
pub async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A count read straight from Postgres: `sql` takes one uuid parameter.
pub async fn count(pool: &PgPool, sql: &'static str, id: uuid::Uuid) -> i64 {
    sqlx::query_scalar(sql).bind(id).fetch_one(pool).await.unwrap()
}

/// How many messages a session holds.
pub async fn messages_in(pool: &PgPool, session: SessionId) -> i64 {
    count(pool, "SELECT count(*) FROM messages WHERE session_id = $1", session.as_uuid()).await
}

/// How many turns a session holds.
pub async fn turns_in(pool: &PgPool, session: SessionId) -> i64 {
    count(pool, "SELECT count(*) FROM turns WHERE session_id = $1", session.as_uuid()).await
}

/// What a turn of `agent` parks on: a question of `kind` (its call `call_id`) with `prompt`,
/// that waits a lease.
pub fn park<'a>(
    agent: AgentId,
    call_id: &'a str,
    kind: hermes_core::InteractionKind,
    prompt: &'a serde_json::Value,
) -> Park<'a> {
    Park { agent, call_id, kind, prompt, timeout: LEASE }
}

/// The tables with a `tenant_id` column, by name.
pub async fn tenant_tables(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.columns
         WHERE table_schema = 'public' AND column_name = 'tenant_id' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// A completed turn's outcome.
pub fn answered(text: &str) -> hermes_core::TurnOutcome {
    hermes_core::TurnOutcome {
        content: text.to_owned(),
        finish_reason: hermes_core::FinishReason::Stop,
        usage: hermes_core::Usage::default(),
        error: None,
        error_code: None,
        session_id: None,
    }
}

/// Binds a Telegram bot (`identity` names it, once per installation) to the tenant's agent.
pub async fn channel(store: &Store, t: &Tenant, secrets: &SecretBox, identity: &str) -> hermes_store::Channel {
    let new = hermes_store::NewChannel {
        agent_id: t.agent,
        platform: hermes_core::Platform::Telegram,
        mode: hermes_core::ChannelMode::Webhook,
        api_base: "http://127.0.0.1:9".into(),
        credentials: serde_json::json!({"token": identity}),
        bot_identity: identity.to_owned(),
        dm_policy: "pairing".parse().unwrap(),
        group_policy: "mention".parse().unwrap(),
        allow_users: Vec::new(),
        allow_chats: Vec::new(),
        admins: Vec::new(),
    };
    store.chat().create_channel(t.id, new, Some(secrets)).await.unwrap()
}

/// An hourly job of the tenant's agent, first due at `next_run_at`.
pub fn job(t: &Tenant, name: &str, next_run_at: chrono::DateTime<chrono::Utc>) -> hermes_store::cron::NewJob {
    hermes_store::cron::NewJob {
        agent_id: t.agent,
        name: name.to_owned(),
        prompt: "report".into(),
        skills: Vec::new(),
        model: None,
        toolsets: None,
        timing: hermes_store::cron::JobTiming {
            schedule: "every 60m".into(),
            schedule_kind: "interval".into(),
            schedule_display: "every 60m".into(),
            timezone: "UTC".into(),
            repeat_times: None,
            next_run_at,
        },
        deliver: "local".into(),
        origin: None,
        script: Default::default(),
    }
}

/// A webhook trigger of the tenant's agent.
pub fn webhook(t: &Tenant, name: &str) -> hermes_store::webhooks::NewWebhook {
    hermes_store::webhooks::NewWebhook {
        agent_id: t.agent,
        name: name.to_owned(),
        events: vec!["push".into()],
        prompt: "look at this".into(),
        skills: Vec::new(),
        deliver: "local".into(),
        cron_job_id: None,
        rate_limit_per_minute: 30,
        toolsets: None,
    }
}
