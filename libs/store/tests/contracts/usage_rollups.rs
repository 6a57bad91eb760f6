//! Usage rollups (migration 0046): what the usage pages read equals what was recorded, call by
//! call and turn by turn, grouped every way the console asks; it reads no call at all (so a
//! page costs the same at ten million calls as at ten); and each tenant sees only its own.

use chrono::Utc;
use hermes_core::{CallPurpose, Usage};
use hermes_store::admin::{RollupGroup, RollupLine};
use hermes_store::{ModelCall, ModelPrice};
use sqlx::PgPool;

use crate::common;

fn call(model: &str, prompt: u64, completion: u64) -> ModelCall {
    ModelCall {
        purpose: CallPurpose::Main,
        provider: "openai".into(),
        model: model.into(),
        key_id: None,
        usage: Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            cached_tokens: 0,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
            priority: false,
        },
        latency_ms: 5,
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn rollups_add_up_to_every_call_and_turn_and_need_no_call_to_answer(pool: PgPool) {
    let store = common::store(&pool);
    let acme = common::tenant(&store, "acme").await;
    let other = common::tenant(&store, "other").await;
    store
        .tenancy()
        .set_model_price(&ModelPrice {
            model: "gpt-a".into(),
            input: 1.0,
            output: 2.0,
            cached_input: None,
            cache_write: None,
            ..Default::default()
        })
        .await
        .unwrap();
    let turn = common::queue(&store, &acme, acme.session, "hi").await;
    for _ in 0..3 {
        let calls = [call("gpt-a", 1_000_000, 500_000), call("gpt-b", 10, 5)];
        store.tenancy().record_model_calls(acme.id, acme.session, turn, &calls).await.unwrap();
    }
    let other_turn = common::queue(&store, &other, other.session, "hi").await;
    store.tenancy().record_model_calls(other.id, other.session, other_turn, &[call("gpt-a", 7, 7)]).await.unwrap();
    // The turn ends (as a worker's finish would), having spent tool and sandbox time.
    sqlx::query(
        "UPDATE turns SET status = 'completed', finished_at = now(), tool_ms = 1500, sandbox_ms = 1000 WHERE id = $1",
    )
    .bind(turn.as_uuid())
    .execute(&pool)
    .await
    .unwrap();

    let today = Utc::now().date_naive();
    let by = |group| {
        let store = store.clone();
        async move { store.admin().usage_rollup(acme.id, today, today, group).await.unwrap() }
    };
    let models = by(RollupGroup::Model).await;
    assert_eq!(models.len(), 2, "{models:?}");
    assert_eq!((models[0].key.as_str(), models[0].usage.calls, models[0].usage.prompt_tokens), ("gpt-a", 3, 3_000_000));
    assert!(
        (models[0].usage.cost_usd - 6.0).abs() < 1e-9,
        "3 × (1 M in at $1 + 0.5 M out at $2): {}",
        models[0].usage.cost_usd
    );
    assert_eq!((models[1].key.as_str(), models[1].usage.calls, models[1].usage.unpriced_calls), ("gpt-b", 3, 3));
    let days = by(RollupGroup::Day).await;
    assert_eq!(days.len(), 1);
    let day = &days[0];
    assert_eq!((day.usage.calls, day.usage.turns, day.usage.tool_ms, day.usage.sandbox_ms), (6, 1, 1500, 1000));
    assert_eq!(by(RollupGroup::Source).await.iter().map(|l| l.key.as_str()).collect::<Vec<_>>(), ["api"]);
    assert_eq!(by(RollupGroup::Agent).await[0].key, "bot", "agents by name");

    // The same answer with every call gone: the page reads the rollups alone.
    let before: Vec<RollupLine> = by(RollupGroup::Day).await;
    sqlx::query("DELETE FROM model_calls").execute(&pool).await.unwrap();
    assert_eq!(by(RollupGroup::Day).await, before);

    let theirs = store.admin().usage_rollup(other.id, today, today, RollupGroup::Model).await.unwrap();
    assert_eq!((theirs.len(), theirs[0].usage.calls), (1, 1), "the other tenant sees its own call only");
    let long = store.admin().usage_rollup(acme.id, today - chrono::Duration::days(400), today, RollupGroup::Day).await;
    assert!(long.is_err(), "a range is bounded");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn cache_reads_writes_and_reasoning_are_priced_and_rolled_up(pool: PgPool) {
    let store = common::store(&pool);
    let acme = common::tenant(&store, "acme").await;
    let price = ModelPrice {
        model: "claude-x".into(),
        input: 3.0,
        output: 15.0,
        cached_input: Some(0.3),
        cache_write: Some(3.75),
        ..Default::default()
    };
    store.tenancy().set_model_price(&price).await.unwrap();
    let turn = common::queue(&store, &acme, acme.session, "hi").await;
    // 1 M prompt tokens: 600 K read from the cache, 200 K written to it, 200 K plain; 500 K
    // out, of which 300 K were thinking.
    let mut thought = call("claude-x", 1_000_000, 500_000);
    thought.usage.cached_tokens = 600_000;
    thought.usage.cache_write_tokens = 200_000;
    thought.usage.reasoning_tokens = 300_000;
    store.tenancy().record_model_calls(acme.id, acme.session, turn, &[thought.clone()]).await.unwrap();

    let expected = 0.2 * 3.0 + 0.6 * 0.3 + 0.2 * 3.75 + 0.5 * 15.0;
    let today = Utc::now().date_naive();
    let lines = store.admin().usage_rollup(acme.id, today, today, RollupGroup::Model).await.unwrap();
    let u = &lines[0].usage;
    assert_eq!((u.cached_tokens, u.cache_write_tokens, u.reasoning_tokens), (600_000, 200_000, 300_000));
    assert!((u.cost_usd - expected).abs() < 1e-9, "{} != {expected}", u.cost_usd);
    let stored = store.tenancy().turn_model_calls(acme.id, turn).await.unwrap();
    assert_eq!(stored[0].usage, thought.usage, "the ledger keeps every count");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_priority_call_costs_its_multiplier_and_without_one_the_standard_rate_never_nothing(pool: PgPool) {
    let store = common::store(&pool);
    let acme = common::tenant(&store, "acme").await;
    let mut price = ModelPrice { model: "gpt-p*".into(), input: 1.0, output: 2.0, ..Default::default() };
    store.tenancy().set_model_price(&price).await.unwrap();
    let turn = common::queue(&store, &acme, acme.session, "hi").await;
    let mut fast = call("gpt-p1", 1_000_000, 500_000);
    fast.usage.priority = true;
    let standard = call("gpt-p1", 1_000_000, 500_000);
    store.tenancy().record_model_calls(acme.id, acme.session, turn, &[standard, fast.clone()]).await.unwrap();

    price.priority_multiplier = Some(2.5);
    store.tenancy().set_model_price(&price).await.unwrap();
    store.tenancy().record_model_calls(acme.id, acme.session, turn, &[fast.clone()]).await.unwrap();
    let costs: Vec<(bool, Option<f64>)> =
        sqlx::query_as("SELECT priority, cost_usd::float8 FROM model_calls WHERE turn_id = $1 ORDER BY id")
            .bind(turn.as_uuid())
            .fetch_all(&pool)
            .await
            .unwrap();
    let expected = [(false, Some(2.0)), (true, Some(2.0)), (true, Some(5.0))];
    assert_eq!(costs, expected, "counted against caps either way; x2.5 once the tier has a price");
    let stored = store.tenancy().turn_model_calls(acme.id, turn).await.unwrap();
    assert_eq!(stored[1].usage, fast.usage, "the ledger keeps the tier");

    let today = Utc::now().date_naive();
    let lines = store.admin().usage_rollup(acme.id, today, today, RollupGroup::Model).await.unwrap();
    assert!((lines[0].usage.cost_usd - 9.0).abs() < 1e-9, "{}", lines[0].usage.cost_usd);
    for wrong in [0.5, f64::NAN, 1_000.0] {
        price.priority_multiplier = Some(wrong);
        assert!(store.tenancy().set_model_price(&price).await.is_err(), "{wrong} is refused");
    }
}
