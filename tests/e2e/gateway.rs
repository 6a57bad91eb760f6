//! The chat gateway's storage path: a chat message is taken in once with its turn, and the
//! turn's answer lands in the outbox exactly once, to be claimed by one gateway pod at a time.

use std::time::Duration;

use serde_json::json;

use hermes_core::ChatMessage;
use hermes_store::{Accepted, NewChannel, NewTurn, Route, TurnTarget};
use hermes_testkit::ScriptedReply;

use crate::harness::{Team, poll_until};

#[tokio::test]
async fn a_chat_message_is_taken_in_once_and_its_answer_is_queued_for_delivery_once() {
    let Team { env, tenant, agent, .. } = Team::acme("helper").await;
    env.llm.push(ScriptedReply::text("Hello from the bot."));
    let route = Route {
        agent: agent.id,
        key: "telegram:bot:chat:42".into(),
        source: hermes_core::SessionSource::Telegram,
        user_key: "telegram:7".into(),
    };
    let bot = NewChannel {
        mode: hermes_core::ChannelMode::Webhook,
        credentials: json!({"token": "123:abc"}),
        bot_identity: "bot".into(),
        ..crate::harness::unreachable_telegram_bot(agent.id)
    };
    let channel = env.add_channel(tenant, bot).await;
    let chat = hermes_core::outbox::Destination::chat(hermes_core::Platform::Telegram, channel.id, "42", None);
    let turn = || NewTurn {
        reply_to: Some(chat.clone()),
        ..NewTurn::new(
            agent.id,
            TurnTarget::Route { route: route.clone(), fresh: true, replaces: None },
            ChatMessage::user("hi"),
        )
    };
    let update = json!({"update_id": 1001, "message": {"text": "hi"}});
    let first =
        env.store.chat().accept_inbound(tenant, "telegram:bot", "1001", &update, Some(turn()), None).await.unwrap();
    let Accepted::Turn { session, .. } = first else { panic!("{first:?}") };
    // The platform delivers the same update again: nothing more happens.
    let again =
        env.store.chat().accept_inbound(tenant, "telegram:bot", "1001", &update, Some(turn()), None).await.unwrap();
    assert_eq!(again, Accepted::Duplicate);
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);
    // A second part of the message, before the turn started, joins it.
    let mut part = turn();
    part.input = ChatMessage::user("and the rest");
    let merged =
        env.store.chat().accept_inbound(tenant, "telegram:bot", "1002", &update, Some(part), None).await.unwrap();
    assert!(matches!(merged, Accepted::Merged { session: s, .. } if s == session), "{merged:?}");
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1);
    env.signal_work(tenant, session).await;

    let claim = async || env.store.system().claim_outbox(10, Duration::from_secs(30), None).await.unwrap();
    let claimed = poll_until(async || Some(claim().await).filter(|c| !c.is_empty())).await.unwrap_or_default();
    assert_eq!(claimed.len(), 1, "one answer for one turn");
    let item = &claimed[0];
    assert_eq!(item.destination.chat_id, "42");
    let hermes_core::outbox::OutboxPayload::Answer { status, outcome: Some(outcome) } = &item.payload else {
        panic!("an answer: {:?}", item.payload)
    };
    assert_eq!(outcome.content, "Hello from the bot.");
    assert_eq!(*status, hermes_core::outbox::AnswerStatus::Completed);
    let seen = env.llm.requests()[0].messages();
    assert_eq!(seen.last().unwrap()["content"], "hi\nand the rest", "the model saw both parts as one message");
    // Claimed: another pod does not get it while the lease runs.
    assert!(env.store.system().claim_outbox(10, Duration::from_secs(30), None).await.unwrap().is_empty());
    assert!(env.store.system().outbox_part_sent(item, 1, &["555".to_owned()]).await.unwrap());
    assert!(env.store.system().outbox_sent(item).await.unwrap());
    let (status, ids): (String, String) =
        sqlx::query_as("SELECT status, platform_message_id FROM outbox").fetch_one(&env.db).await.unwrap();
    assert_eq!((status.as_str(), ids.as_str()), ("sent", "555"));

    // An answer addressed to a bot that is not the tenant's is never queued.
    env.llm.push(ScriptedReply::text("Nobody gets this."));
    let stranger = hermes_core::outbox::Destination::chat(
        hermes_core::Platform::Telegram,
        hermes_core::ChannelId::new(),
        "42",
        None,
    );
    let update = json!({"update_id": 1003, "message": {"text": "again"}});
    let mut foreign = turn();
    foreign.reply_to = Some(stranger);
    foreign.target = TurnTarget::Existing(session);
    env.store.chat().accept_inbound(tenant, "telegram:bot", "1003", &update, Some(foreign), None).await.unwrap();
    env.signal_work(tenant, session).await;
    env.wait_for_count("SELECT count(*) FROM turns WHERE status = 'completed'", 2).await;
    assert_eq!(env.count("SELECT count(*) FROM outbox").await, 1, "nothing queued for another tenant's bot");
    env.stop().await;
}
