//! Images end to end. A photo sent on Telegram to an agent whose model reads only text is
//! scaled to the embed budget, described by the agent's vision model (metered as an
//! auxiliary call) and answered from the description; without a model that can see, the
//! agent is told and still answers. `vision_analyze` looks at a picture on the web through
//! the public-address guard (a redirect to a metadata address refused) and answers the
//! question about it.

use base64::Engine;
use serde_json::{Value, json};

use hermes_core::{AgentId, ImageInputMode};
use hermes_store::ModelRef;
use hermes_testkit::web::WebWorld;
use hermes_testkit::{ScriptedLlm, ScriptedReply};

use crate::harness::{Roles, TestEnv, ask};
use crate::telegram::{Pod, TOKEN, open_bot, sent};

/// The one agent of the test's tenant.
async fn only_agent(env: &TestEnv) -> (hermes_core::TenantId, AgentId) {
    let tenant = env.store.tenancy().tenant_by_name("acme").await.unwrap().id;
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM agents").fetch_one(&env.db).await.unwrap();
    (tenant, AgentId::from_uuid(id))
}

/// The bytes of a `data:` URL.
fn data_bytes(url: &str) -> Vec<u8> {
    let (_, encoded) = url.split_once(";base64,").unwrap();
    base64::engine::general_purpose::STANDARD.decode(encoded).unwrap()
}

#[tokio::test]
async fn a_photo_to_a_text_only_model_is_described_by_the_vision_model_and_answered() {
    let env = TestEnv::start().await;
    let eye = ScriptedLlm::start().await.unwrap();
    let (tg, _) = open_bot(&env).await;
    let (tenant, agent) = only_agent(&env).await;
    sqlx::query("UPDATE agents SET model = 'deepseek-chat'").execute(&env.db).await.unwrap();
    let vision = ModelRef { base_url: eye.base_url(), model: "eye-1".into(), api_mode: None };
    env.store.agents().set_vision(tenant, agent, None, Some(Some(&vision))).await.unwrap();
    let pod = Pod::start(&env).await;

    eye.push(ScriptedReply::text("A bar chart: sales rose from 10 in May to 30 in June."));
    env.llm.push(ScriptedReply::text("Sales tripled from May to June."));
    let photo = hermes_testkit::images::jpeg(2400, 1600).unwrap();
    assert!(photo.len() > hermes_images::EMBED_TARGET_BYTES, "the photo is over the budget: {}", photo.len());
    tg.user_sends_photo(TOKEN, 42, "photo-1", &photo, Some("what does this show?"));
    assert_eq!(sent(&tg, 1).await[0].text, "Sales tripled from May to June.");

    // The vision model saw the picture, scaled down to the budget, with upstream's prompt.
    let looked = &eye.requests()[0];
    assert_eq!(looked.body["model"], "eye-1");
    let parts = looked.messages()[0]["content"].clone();
    assert!(parts[0]["text"].as_str().unwrap().starts_with("Describe everything visible in this image"), "{parts}");
    let seen = data_bytes(parts[1]["image_url"]["url"].as_str().unwrap());
    assert!(seen.len() <= hermes_images::EMBED_TARGET_BYTES && seen.len() < photo.len() / 2, "{} bytes", seen.len());
    // The main model read the description, then the user's words, and no image at all.
    let main = env.llm.requests()[0].messages();
    assert_eq!(
        main.last().unwrap()["content"],
        "[The user sent an image~ Here's what I can see:\nA bar chart: sales rose from 10 in May to 30 in June.]\n\n\
         what does this show?"
    );
    assert!(!serde_json::to_string(&main).unwrap().contains("image_url"), "a text-only model gets no image parts");
    // The description was paid for like any model call: an auxiliary call of the vision model.
    let calls: Vec<(String, String)> =
        sqlx::query_as("SELECT purpose, model FROM model_calls ORDER BY id").fetch_all(&env.db).await.unwrap();
    assert!(calls.contains(&("auxiliary".into(), "eye-1".into())), "{calls:?}");

    // Without a model that can see, the agent is told so and answers anyway.
    env.store.agents().set_vision(tenant, agent, Some(ImageInputMode::Auto), Some(None)).await.unwrap();
    env.llm.push(ScriptedReply::text("I cannot see pictures here; what does it show?"));
    tg.user_sends_photo(TOKEN, 42, "photo-2", &hermes_testkit::images::jpeg(64, 48).unwrap(), None);
    assert_eq!(sent(&tg, 2).await[1].text, "I cannot see pictures here; what does it show?");
    let told = env.llm.requests()[1].last_text();
    assert!(
        told.starts_with("[The user sent an image but I couldn't see it this time (no model that can see"),
        "{told}"
    );
    assert_eq!(eye.requests().len(), 1, "the removed vision model is not called");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn vision_analyze_looks_at_a_picture_on_the_web_and_refuses_a_redirect_to_a_private_address() {
    let world = WebWorld::start().await.unwrap();
    let site = world.host();
    let env = TestEnv::start_with(Roles::default(), move |c| c.web.allow_private_hosts = vec![site]).await;
    let (_, _, key) = env.tenant("acme", "helper").await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['vision']").execute(&env.db).await.unwrap();

    let chart = world.page("chart.jpg");
    env.llm.push(ScriptedReply::tool_call(
        "vision_analyze",
        json!({"image_url": chart, "question": "What is the trend?"}),
    ));
    // The agent's model sees images, so it is its own vision model: this answer is the look.
    env.llm.push(ScriptedReply::text("A gradient from dark to light; the trend is upward."));
    env.llm.push(ScriptedReply::tool_call(
        "vision_analyze",
        json!({"image_url": world.page("to-private"), "question": "And this one?"}),
    ));
    env.llm.push(ScriptedReply::text("The chart trends upward; the second image could not be loaded."));
    let response = env.chat(&key, ask("helper", "Read my chart.")).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "The chart trends upward; the second image could not be loaded."
    );

    let requests = env.llm.requests();
    let offered: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(offered, ["vision_analyze"]);
    // The look: upstream's prompt with the question, and the picture fetched and scaled down.
    let look = requests[1].messages()[0]["content"].clone();
    let prompt = look[0]["text"].as_str().unwrap();
    assert!(
        prompt.starts_with("Fully describe and explain everything about this image")
            && prompt.ends_with("What is the trend?")
    );
    assert!(data_bytes(look[1]["image_url"]["url"].as_str().unwrap()).len() <= hermes_images::EMBED_TARGET_BYTES);
    let tool_result = |n: usize| -> Value {
        let messages = requests[n].messages();
        serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap()).unwrap()
    };
    assert_eq!(
        tool_result(2),
        json!({"success": true, "analysis": "A gradient from dark to light; the trend is upward."})
    );
    let refused = tool_result(3);
    assert_eq!(refused["success"], false);
    assert!(refused["error"].as_str().unwrap().contains("169.254.169.254"), "{refused}");
    assert_eq!(requests.len(), 4, "the refused image was never shown to a model");
    env.stop().await;
}
