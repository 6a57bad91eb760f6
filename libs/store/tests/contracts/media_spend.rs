//! Media calls (pictures, speech, transcription) on the usage ledger: priced per unit by the
//! same trigger as model calls, counted by the same caps, refused under a hard cap without a
//! unit price.

use std::time::Duration;

use chrono::Utc;
use hermes_core::{BudgetPeriod, CallPurpose, TurnId};
use hermes_store::{Budget, MediaCall, MediaUnits, ModelPrice, SpendDecision, SpendRequest};
use sqlx::PgPool;

use crate::common;

fn picture() -> MediaUnits {
    MediaUnits { images: 1, ..MediaUnits::default() }
}

fn ask(agent: hermes_core::AgentId, models: &[String], media: MediaUnits) -> SpendRequest<'_> {
    let lease = Duration::from_secs(600);
    SpendRequest { agent, models, input_tokens: 0, output_tokens: 0, media, priority_models: &[], lease }
}

fn image_call() -> MediaCall {
    MediaCall {
        purpose: CallPurpose::Image,
        provider: "fal".into(),
        model: "fal-ai/flux/schnell".into(),
        units: picture(),
        latency_ms: 900,
    }
}

async fn costs(pool: &PgPool) -> Vec<(String, Option<f64>)> {
    sqlx::query_as("SELECT purpose, cost_usd::float8 FROM model_calls ORDER BY id").fetch_all(pool).await.unwrap()
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn pictures_cost_their_price_and_stop_at_the_hard_cap_like_model_calls(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let flux = ModelPrice { model: "fal-ai/flux/*".into(), per_image: Some(0.04), ..ModelPrice::default() };
    store.tenancy().set_model_price(&flux).await.unwrap();
    let cap = Budget { agent_id: None, period: BudgetPeriod::Day, hard_usd: Some(0.10), soft_usd: None };
    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    let models = vec!["fal-ai/flux/schnell".to_owned()];

    let mut made = 0;
    loop {
        match store.tenancy().reserve_spend(t.id, &ask(t.agent, &models, picture()), Utc::now()).await.unwrap() {
            SpendDecision::Reserved { reservation, estimate_usd, .. } => {
                assert!((estimate_usd - 0.04).abs() < 1e-9, "a picture reserves its price: {estimate_usd}");
                store
                    .tenancy()
                    .settle_media_call(t.id, t.session, TurnId::new(), Some(reservation), &image_call())
                    .await
                    .unwrap();
                made += 1;
            }
            SpendDecision::Refused { state, .. } => {
                assert!(state.spent_usd >= 0.10, "{state:?}");
                break;
            }
            other => panic!("{other:?}"),
        }
        assert!(made < 10, "the cap never stopped the pictures");
    }
    assert_eq!(made, 3, "0.04 + 0.04 < 0.10, the third passes the cap by its own price, the fourth is refused");
    let recorded = costs(&pool).await;
    assert_eq!(recorded.len(), 3);
    assert!(recorded.iter().all(|(purpose, cost)| purpose == "image" && *cost == Some(0.04)), "{recorded:?}");
    let (left,): (i64,) = sqlx::query_as("SELECT count(*) FROM spend_reservations").fetch_one(&pool).await.unwrap();
    assert_eq!(left, 0, "each picture's reservation was swapped for its record");
    let (rolled,): (f64,) =
        sqlx::query_as("SELECT sum(cost_usd)::float8 FROM usage_daily WHERE model = 'fal-ai/flux/schnell'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!((rolled - 0.12).abs() < 1e-9, "the daily rollup counts the pictures: {rolled}");
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn a_media_model_without_a_unit_price_is_refused_under_a_hard_cap_and_counted_unpriced(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    // Priced for tokens only: a picture has no price, so it is not free.
    let tokens_only = ModelPrice { model: "gpt-image-1".into(), input: 5.0, output: 40.0, ..ModelPrice::default() };
    store.tenancy().set_model_price(&tokens_only).await.unwrap();
    let models = vec!["gpt-image-1".to_owned()];
    assert_eq!(
        store.tenancy().reserve_spend(t.id, &ask(t.agent, &models, picture()), Utc::now()).await.unwrap(),
        SpendDecision::Uncapped
    );
    let call = MediaCall { model: "gpt-image-1".into(), provider: "openai".into(), ..image_call() };
    store.tenancy().settle_media_call(t.id, t.session, TurnId::new(), None, &call).await.unwrap();
    assert_eq!(costs(&pool).await, vec![("image".to_owned(), None)], "unpriced, never costed as zero");

    let cap = Budget { agent_id: Some(t.agent), period: BudgetPeriod::Month, hard_usd: Some(5.0), soft_usd: None };
    store.tenancy().set_budget(t.id, &cap).await.unwrap();
    assert_eq!(
        store.tenancy().reserve_spend(t.id, &ask(t.agent, &models, picture()), Utc::now()).await.unwrap(),
        SpendDecision::Unpriced { model: "gpt-image-1".into() }
    );
}

#[sqlx::test(migrator = "hermes_store::MIGRATOR")]
async fn speech_and_transcription_are_billed_by_their_units_and_edge_speech_is_free(pool: PgPool) {
    let store = common::store(&pool);
    let t = common::tenant(&store, "acme").await;
    let tts = ModelPrice { model: "tts-1".into(), per_mchar: Some(15.0), ..ModelPrice::default() };
    let whisper = ModelPrice { model: "whisper-1".into(), per_audio_minute: Some(0.006), ..ModelPrice::default() };
    store.tenancy().set_model_price(&tts).await.unwrap();
    store.tenancy().set_model_price(&whisper).await.unwrap();
    let speech = |model: &str, chars: u64| MediaCall {
        purpose: CallPurpose::Speech,
        provider: "openai".into(),
        model: model.into(),
        units: MediaUnits { speech_chars: chars, ..MediaUnits::default() },
        latency_ms: 300,
    };
    let heard = MediaCall {
        purpose: CallPurpose::Transcription,
        provider: "openai".into(),
        model: "whisper-1".into(),
        units: MediaUnits { audio_ms: 30_000, ..MediaUnits::default() },
        latency_ms: 700,
    };
    for call in [speech("tts-1", 2_000), speech("edge-tts", 5_000), heard] {
        store.tenancy().settle_media_call(t.id, t.session, TurnId::new(), None, &call).await.unwrap();
    }
    let recorded = costs(&pool).await;
    let cost = |i: usize| recorded[i].1.unwrap_or(f64::NAN);
    assert!((cost(0) - 0.03).abs() < 1e-9, "2,000 characters at $15 a million: {recorded:?}");
    assert_eq!(recorded[1].1, Some(0.0), "Edge TTS is priced at nothing out of the box");
    assert!((cost(2) - 0.003).abs() < 1e-9, "half a minute at $0.006 a minute: {recorded:?}");
    let prices = store.tenancy().model_prices().await.unwrap();
    let listed = prices.iter().find(|p| p.model == "whisper-1").unwrap();
    assert_eq!(listed.per_audio_minute, Some(0.006), "unit prices are read back");
}
