//! Within a tenant, an agent speaks only through its own bots: a job, a webhook or a key
//! restricted to one agent must not post through another agent's channel.

use hermes_core::ChannelStatus;
use hermes_core::outbox::{CronLabel, RunLabel};
use sqlx::PgPool;

use crate::common;

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_delivery_goes_only_through_the_agents_own_bot(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let channel = common::channel(&store, &t, &common::secrets(), "bot-1").await;
    store.chat().set_channel_status(t.id, channel.id, ChannelStatus::Active, None).await.unwrap();
    let other = store.agents().create_agent(t.id, common::new_agent("other"), None).await.unwrap().id;
    let label = RunLabel::Cron(CronLabel { job_id: uuid::Uuid::nil().into(), name: "digest".into() });

    let own = store.automation().delivery_targets(t.id, t.agent, "telegram:42", None, &label).await.unwrap();
    assert_eq!(own.map(|d| (d.channel_id, d.chat_id)), Some((channel.id, "42".to_owned())));
    let theirs = store.automation().delivery_targets(t.id, other, "telegram:42", None, &label).await.unwrap();
    assert_eq!(theirs, None, "another agent's bot is not this agent's to speak through");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn all_delivers_to_the_home_chat_of_each_of_the_agents_own_bots(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let secrets = common::secrets();
    let (first, second, homeless) = (
        common::channel(&store, &t, &secrets, "bot-1").await,
        common::channel(&store, &t, &secrets, "bot-2").await,
        common::channel(&store, &t, &secrets, "bot-3").await,
    );
    for (channel, home) in [(&first, Some("42")), (&second, Some("-100:7")), (&homeless, None)] {
        store.chat().set_channel_status(t.id, channel.id, ChannelStatus::Active, None).await.unwrap();
        let access = hermes_store::ChannelAccess { home_chat: home.map(str::to_owned), ..Default::default() };
        store.chat().update_channel_access(t.id, channel.id, &access).await.unwrap();
    }
    let other = store.agents().create_agent(t.id, common::new_agent("other"), None).await.unwrap().id;
    let label = RunLabel::Cron(CronLabel { job_id: uuid::Uuid::nil().into(), name: "digest".into() });

    let to = store.automation().delivery_targets(t.id, t.agent, "all, origin", None, &label).await.unwrap();
    let to = to.expect("two home chats");
    let chats: Vec<_> =
        std::iter::once(&to).chain(&to.also).map(|d| (d.channel_id, d.chat_id.as_str(), d.thread.as_deref())).collect();
    assert_eq!(
        chats,
        [(first.id, "42", None), (second.id, "-100", Some("7"))],
        "each bot's home, the homeless one left out"
    );
    let theirs = store.automation().delivery_targets(t.id, other, "all", None, &label).await.unwrap();
    assert_eq!(theirs, None, "another agent's bots are not this agent's");
}
