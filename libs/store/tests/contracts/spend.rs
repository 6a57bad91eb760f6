//! Spending caps kept while calls are in flight: reservations taken under the caps' locks, and
//! settled by the calls' recorded usage.

use std::time::Duration;

use chrono::Utc;
use hermes_core::{BudgetPeriod, Usage};
use hermes_store::{Budget, ModelCall, ModelPrice, SpendDecision, SpendRequest};
use sqlx::PgPool;

use crate::common;

/// A dollar a thousand tokens, in and out.
fn price() -> ModelPrice {
    ModelPrice {
        model: "test-model".into(),
        input: 1_000.0,
        output: 1_000.0,
        cached_input: None,
        cache_write: None,
        ..Default::default()
    }
}

fn call(prompt: u64) -> ModelCall {
    ModelCall {
        purpose: hermes_core::CallPurpose::Main,
        provider: "openai".into(),
        model: "test-model".into(),
        key_id: None,
        usage: Usage { prompt_tokens: prompt, completion_tokens: 0, total_tokens: prompt, ..Usage::default() },
        latency_ms: 10,
    }
}

const MODELS: [&str; 1] = ["test-model"];

fn ask(agent: hermes_core::AgentId, models: &[String]) -> SpendRequest<'_> {
    // 300 tokens in, 100 out: 40 cents reserved for a call that costs 30.
    SpendRequest {
        agent,
        models,
        input_tokens: 300,
        output_tokens: 100,
        media: Default::default(),
        priority_models: &[],
        lease: Duration::from_secs(600),
    }
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn forty_racing_calls_pass_a_cap_by_at_most_the_last_one_admitted(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    store.tenancy().set_model_price(&price()).await.unwrap();
    let cap = Budget { agent_id: None, period: BudgetPeriod::Day, hard_usd: Some(3.0), soft_usd: None };
    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    let models: Vec<String> = MODELS.map(String::from).into();
    let racers: Vec<_> = (0..40)
        .map(|_| {
            let (store, models) = (store.clone(), models.clone());
            let (tenant, agent, session) = (t.id, t.agent, t.session);
            tokio::spawn(async move {
                match store.tenancy().reserve_spend(tenant, &ask(agent, &models), Utc::now()).await.unwrap() {
                    SpendDecision::Reserved { reservation, .. } => {
                        tokio::time::sleep(Duration::from_millis(30)).await;
                        let turn = hermes_core::TurnId::new();
                        store.tenancy().settle_spend(tenant, reservation, session, turn, &[call(300)]).await.unwrap();
                        true
                    }
                    SpendDecision::Refused { .. } => false,
                    other => panic!("{other:?}"),
                }
            })
        })
        .collect();
    let mut admitted = 0;
    for racer in racers {
        admitted += usize::from(racer.await.unwrap());
    }
    let (spent, left): (f64, i64) = sqlx::query_as(
        "SELECT (SELECT COALESCE(sum(cost_usd), 0)::float8 FROM model_calls), (SELECT count(*) FROM spend_reservations)",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert!((1..40).contains(&admitted), "some calls fit, the rest are refused: {admitted}");
    assert!(spent <= 3.0 + 0.4 + 1e-9, "spent {spent} against a cap of 3.00 (one call reserves 0.40)");
    assert_eq!(left, 0, "every reservation was settled");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_hard_cap_refuses_an_unpriced_model_and_no_cap_reserves_nothing(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let models: Vec<String> = MODELS.map(String::from).into();
    assert_eq!(
        store.tenancy().reserve_spend(t.id, &ask(t.agent, &models), Utc::now()).await.unwrap(),
        SpendDecision::Uncapped
    );
    let cap = Budget { agent_id: Some(t.agent), period: BudgetPeriod::Month, hard_usd: Some(5.0), soft_usd: None };
    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    let decision = store.tenancy().reserve_spend(t.id, &ask(t.agent, &models), Utc::now()).await.unwrap();
    assert_eq!(decision, SpendDecision::Unpriced { model: "test-model".into() }, "a free model cannot be capped");
    store.tenancy().set_model_price(&price()).await.unwrap();
    let SpendDecision::Reserved { estimate_usd, .. } =
        store.tenancy().reserve_spend(t.id, &ask(t.agent, &models), Utc::now()).await.unwrap()
    else {
        panic!("priced now")
    };
    assert!((estimate_usd - 0.4).abs() < 1e-9, "{estimate_usd}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_priority_call_reserves_its_tiers_premium_and_without_one_the_standard_rate(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    store.tenancy().set_model_price(&price()).await.unwrap();
    let cap = Budget { agent_id: None, period: BudgetPeriod::Day, hard_usd: Some(50.0), soft_usd: None };
    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    let models: Vec<String> = MODELS.map(String::from).into();
    let fast = SpendRequest { priority_models: &models, ..ask(t.agent, &models) };
    let estimate = async || match store.tenancy().reserve_spend(t.id, &fast, Utc::now()).await.unwrap() {
        SpendDecision::Reserved { estimate_usd, .. } => estimate_usd,
        other => panic!("{other:?}"),
    };
    assert!((estimate().await - 0.4).abs() < 1e-9, "no premium known: the standard 40 cents");

    store.tenancy().set_model_price(&ModelPrice { priority_multiplier: Some(2.0), ..price() }).await.unwrap();
    let estimate_usd = estimate().await;
    assert!((estimate_usd - 0.8).abs() < 1e-9, "twice the standard 40 cents: {estimate_usd}");
}
