//! `ImageGenerator` against the scripted FAL and OpenAI services (`hermes_testkit::image_api`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "test code: a failed unwrap is a failed test"
)]

use hermes_config::{ImageGenConfig, ImageGenProvider};
use hermes_media::{AspectRatio, ImageGenError, ImageGenerator};
use hermes_testkit::image_api::ImageApi;

fn generator(config: ImageGenConfig) -> ImageGenerator {
    let _ = rustls::crypto::ring::default_provider().install_default();
    ImageGenerator::new(&config, &[]).expect("clients")
}

fn fal(api: &ImageApi, key: &str) -> ImageGenConfig {
    ImageGenConfig { fal_key: Some(key.into()), fal_base_url: api.fal_base_url(), ..ImageGenConfig::default() }
}

fn dimensions(png: &[u8]) -> (u32, u32) {
    // IHDR: width and height at bytes 16..24.
    let be = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    (be(16), be(20))
}

#[tokio::test]
async fn fal_makes_the_image_in_the_asked_shape_and_it_is_downloaded_at_once() {
    let api = ImageApi::start().await.expect("image api");
    let image = generator(fal(&api, "fal-secret"))
        .generate("a lighthouse at dusk", AspectRatio::Portrait)
        .await
        .expect("image");
    assert_eq!(
        (image.mime, image.provider, image.model.as_str()),
        ("image/png", ImageGenProvider::Fal, "fal-ai/flux-2/klein/9b")
    );
    assert_eq!(dimensions(&image.bytes), (64, 96), "portrait is taller than wide");
    let seen = api.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].model, "fal-ai/flux-2/klein/9b", "upstream's default model, in the path");
    assert_eq!(seen[0].authorization.as_deref(), Some("Key fal-secret"));
    assert_eq!(seen[0].body["image_size"], "portrait_16_9");
    assert_eq!(seen[0].body["num_images"], 1);
}

#[tokio::test]
async fn openai_gets_its_size_and_the_operators_quality_and_answers_in_base64() {
    let api = ImageApi::start().await.expect("image api");
    let config = ImageGenConfig {
        openai_api_key: Some("sk-img".into()),
        openai_base_url: api.openai_base_url(),
        model: Some("gpt-image-1".into()),
        ..ImageGenConfig::default()
    };
    let image = generator(config).generate("a chart of Q3 sales", AspectRatio::Landscape).await.expect("image");
    assert_eq!(dimensions(&image.bytes), (96, 64));
    assert_eq!(image.extension(), "png");
    let seen = api.requests();
    assert_eq!((seen[0].service, seen[0].model.as_str()), ("openai", "gpt-image-1"));
    assert_eq!(seen[0].authorization.as_deref(), Some("Bearer sk-img"));
    assert_eq!((seen[0].body["size"].as_str(), seen[0].body["quality"].as_str()), (Some("1536x1024"), Some("medium")));
}

#[tokio::test]
async fn refusals_failures_and_missing_setup_are_told_apart() {
    let api = ImageApi::start().await.expect("image api");
    let refused = generator(fal(&api, "k")).generate("FORBIDDEN thing", AspectRatio::Square).await.unwrap_err();
    assert_eq!(
        refused,
        ImageGenError::Refused { status: 400, message: "Your request was rejected by the safety system.".into() }
    );
    let revoked = generator(fal(&api, "revoked")).generate("a cat", AspectRatio::Square).await.unwrap_err();
    assert!(
        matches!(&revoked, ImageGenError::Failed(m) if m.contains("HTTP 401") && m.contains("invalid API key")),
        "{revoked}"
    );
    let unset = generator(ImageGenConfig::default()).generate("a cat", AspectRatio::Square).await.unwrap_err();
    assert!(matches!(unset, ImageGenError::NotConfigured(m) if m.contains("FAL_KEY")));
    let empty = generator(fal(&api, "k")).generate("   ", AspectRatio::Square).await.unwrap_err();
    assert!(matches!(empty, ImageGenError::Refused { .. }));
}

#[tokio::test]
async fn a_result_file_on_a_private_address_other_than_the_service_is_not_fetched() {
    let api = ImageApi::start().await.expect("image api");
    let err = generator(fal(&api, "k")).generate("elsewhere", AspectRatio::Square).await.unwrap_err();
    assert!(matches!(&err, ImageGenError::Failed(m) if m.contains("127.0.0.2 is not a public address")), "{err}");
}

#[tokio::test]
async fn a_tenants_own_key_replaces_the_operators_and_can_set_up_a_service_the_operator_left_keyless() {
    let api = ImageApi::start().await.expect("image api");
    let operator = generator(fal(&api, "fal-operator"));
    operator.with_keys(Some("fal-team".into()), None).generate("a fox", AspectRatio::Square).await.expect("image");
    operator.generate("a fox", AspectRatio::Square).await.expect("image");
    let keys: Vec<Option<String>> = api.requests().into_iter().map(|r| r.authorization).collect();
    assert_eq!(
        keys,
        [Some("Key fal-team".to_owned()), Some("Key fal-operator".to_owned())],
        "the operator's own stays"
    );

    // No key at the installation: a team's OpenAI key makes the service theirs.
    let keyless = generator(ImageGenConfig { openai_base_url: api.openai_base_url(), ..ImageGenConfig::default() });
    assert!(matches!(keyless.endpoint(), Err(ImageGenError::NotConfigured(_))));
    let theirs = keyless.with_keys(None, Some("sk-team".into()));
    let image = theirs.generate("a fox", AspectRatio::Square).await.expect("image");
    assert_eq!(image.provider, ImageGenProvider::Openai);
    assert_eq!(api.requests()[2].authorization.as_deref(), Some("Bearer sk-team"));
    let pools: Vec<&str> = keyless.key_pools().iter().map(|(pool, _)| *pool).collect();
    assert_eq!(pools, ["fal", "openai"]);
}
