//! `image_generate` end to end: a Telegram user asks for a picture, the agent calls the tool
//! (the scripted FAL service makes a real PNG), and the chat gets the picture itself as a
//! photo after the answer's text, even when the answer forgot its `MEDIA:` line. A refused
//! prompt comes back to the model in upstream's failure shape, and no photo is sent.

use serde_json::{Value, json};

use hermes_testkit::ScriptedReply;
use hermes_testkit::image_api::ImageApi;

use crate::harness::{Roles, TestEnv, ask};
use crate::telegram::{TOKEN, exchange, open_bot_with_tools};

/// The scripted image service, and the service with the operator's FAL key for it.
async fn start() -> (ImageApi, TestEnv) {
    let images = ImageApi::start().await.unwrap();
    let fal = images.fal_base_url();
    let env = TestEnv::start_with(Roles::default(), move |c| {
        c.image_gen.fal_key = Some("fal-operator".into());
        c.image_gen.fal_base_url = fal;
    })
    .await;
    (images, env)
}

/// The JSON result of the tool call the model got in request `n`.
fn tool_result(env: &TestEnv, n: usize) -> Value {
    let messages = env.llm.requests()[n].messages();
    serde_json::from_str(messages.last().unwrap()["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_picture_asked_for_in_telegram_arrives_as_a_photo() {
    let (images, env) = start().await;
    let (tg, pod) = open_bot_with_tools(&env, &["image_gen"]).await;

    env.llm.push(ScriptedReply::tool_call(
        "image_generate",
        json!({"prompt": "a lighthouse at dusk, oil painting", "aspect_ratio": "square"}),
    ));
    // The answer does not name the image: it is handed over anyway.
    assert_eq!(
        exchange(&env, &tg, (42, "paint me a lighthouse"), "Here is your lighthouse.", 1).await[0].text,
        "Here is your lighthouse."
    );
    let result = tool_result(&env, 1);
    assert_eq!(result["success"], true, "{result}");
    let image = result["image"].as_str().unwrap().to_owned();
    assert!(image.starts_with("generated/image-") && image.ends_with(".png"), "{image}");
    let photo = crate::harness::wait_until("the photo", async || tg.uploads(TOKEN).into_iter().next()).await;
    assert_eq!((photo.method.as_str(), photo.chat_id.as_str()), ("sendPhoto", "42"));
    assert_eq!(photo.name, image.trim_start_matches("generated/"));
    assert_eq!(&photo.data[..4], b"\x89PNG", "the picture itself, not a link");
    let asked = &images.requests()[0];
    assert_eq!(asked.authorization.as_deref(), Some("Key fal-operator"));
    assert_eq!(asked.body["image_size"], "square_hd");
    let offered: Vec<String> = env.llm.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(offered, ["image_generate"]);

    // A refused prompt: the model reads why, the chat gets its words and no photo.
    env.llm.push(ScriptedReply::tool_call("image_generate", json!({"prompt": "FORBIDDEN scene"})));
    assert_eq!(
        exchange(&env, &tg, (42, "now something forbidden"), "The image service refused that one.", 2).await[1].text,
        "The image service refused that one."
    );
    let refused = tool_result(&env, 3);
    assert_eq!((refused["success"].clone(), refused["image"].clone()), (json!(false), Value::Null));
    assert!(refused["error"].as_str().unwrap().contains("rejected by the safety system"), "{refused}");
    assert_eq!(tg.uploads(TOKEN).len(), 1);
    pod.stop_with(env).await;
}

/// The tool result of the last `image_generate` call the model saw.
fn last_tool_result(env: &TestEnv) -> Value {
    tool_result(env, env.llm.requests().len() - 1)
}

#[tokio::test]
async fn pictures_are_metered_into_usage_and_a_hard_cap_needs_their_price() {
    let (images, env) = start().await;
    let (tenant, agent, key) = env.tenant("acme", "ops").await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['image_gen']").execute(&env.db).await.unwrap();
    // Model calls are free here, so what is spent is the pictures'.
    let tokens = hermes_store::ModelPrice { model: "scripted*".into(), ..Default::default() };
    env.store.tenancy().set_model_price(&tokens).await.unwrap();
    env.cap_spending(tenant, None, hermes_core::BudgetPeriod::Day, (Some(1.0), None)).await;
    let ask = ask("ops", "draw a fox");

    // Under a hard cap, a picture without a price is not made (it could not be kept within it).
    env.llm.push(ScriptedReply::tool_call("image_generate", json!({"prompt": "a red fox"})));
    env.llm.push(ScriptedReply::text("Pictures are not priced yet."));
    assert_eq!(env.chat(&key, ask.clone()).await.status(), 200);
    let refused = last_tool_result(&env);
    assert_eq!(refused["success"], false, "{refused}");
    let why = refused["error"].as_str().unwrap();
    assert!(why.contains("fal-ai/flux-2/klein/9b") && why.contains("hermesctl price set"), "{why}");
    assert!(images.requests().is_empty(), "the image service was not called");

    // Priced: made, recorded as an image call at its price, and in the usage report.
    let per_image = hermes_store::ModelPrice { model: "fal-ai/*".into(), per_image: Some(0.04), ..Default::default() };
    env.store.tenancy().set_model_price(&per_image).await.unwrap();
    env.llm.push(ScriptedReply::tool_call("image_generate", json!({"prompt": "a red fox"})));
    env.llm.push(ScriptedReply::text("Here is your fox."));
    assert_eq!(env.chat(&key, ask).await.status(), 200);
    assert_eq!(last_tool_result(&env)["success"], true);
    assert_eq!(images.requests().len(), 1);
    let (purpose, model, images_billed, cost): (String, String, i32, Option<f64>) = sqlx::query_as(
        "SELECT purpose, model, images, cost_usd::float8 FROM model_calls WHERE purpose <> 'main' ORDER BY id",
    )
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!(
        (purpose.as_str(), model.as_str(), images_billed, cost),
        ("image", "fal-ai/flux-2/klein/9b", 1, Some(0.04))
    );
    let usage: Value =
        env.http.get(format!("{}/v1/usage", env.api_url)).bearer_auth(&key).send().await.unwrap().json().await.unwrap();
    assert!((usage["total"]["cost_usd"].as_f64().unwrap() - 0.04).abs() < 1e-9, "{usage}");
    let spent = env.store.tenancy().budget_states(tenant, agent.id, chrono::Utc::now()).await.unwrap();
    assert!((spent[0].spent_usd - 0.04).abs() < 1e-9, "the team's cap counts the picture: {spent:?}");
    env.stop().await;
}

#[tokio::test]
async fn an_api_turns_picture_is_a_link_to_the_tenants_file_that_no_one_else_can_fetch() {
    let (_images, env) = start().await;
    let (tenant, agent, key) = env.tenant("acme", "ops").await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['image_gen']").execute(&env.db).await.unwrap();
    env.llm
        .push(ScriptedReply::tool_call("image_generate", json!({"prompt": "a lighthouse", "aspect_ratio": "square"})));
    env.llm.push(ScriptedReply::text("Here it is."));
    let ask = ask("ops", "draw a lighthouse");
    assert_eq!(env.chat(&key, ask).await.status(), 200);

    // As upstream's result: the picture's URL, here the tenant's file on this API.
    let result = tool_result(&env, 1);
    let url = result["image"].as_str().unwrap().to_owned();
    let prefix = format!("{}/v1/files/file-", env.api_url);
    assert!(url.starts_with(&prefix) && url.ends_with(".png/content"), "{url}");
    assert!(result["note"].as_str().unwrap().contains(&format!("]({url})")), "{result}");
    let get = |url: String, key: Option<String>| {
        let request = env.http.get(url);
        async move { request.bearer_auth(key.unwrap_or_default()).send().await.unwrap() }
    };

    let picture = get(url.clone(), Some(key.clone())).await;
    assert_eq!(picture.status(), 200);
    assert_eq!(picture.headers()["content-type"], "image/png");
    assert_eq!(picture.headers()["x-content-type-options"], "nosniff");
    let bytes = picture.bytes().await.unwrap();
    assert_eq!(&bytes[..4], b"\x89PNG", "the picture itself");
    let object: Value = get(url.trim_end_matches("/content").to_owned(), Some(key.clone())).await.json().await.unwrap();
    assert_eq!((object["object"].clone(), object["purpose"].clone()), (json!("file"), json!("assistants_output")));
    assert_eq!(object["bytes"], json!(bytes.len()));
    assert!(object["filename"].as_str().unwrap().starts_with("image-"), "{object}");
    let doc: Value = env.http.get(format!("{}/openapi.json", env.api_url)).send().await.unwrap().json().await.unwrap();
    crate::openapi::Spec { doc }.check("get", "/v1/files/{id}", 200, &object);

    // Nobody else: no key, another tenant, a key of another agent; a made-up id is 404 too.
    assert_eq!(get(url.clone(), None).await.status(), 401);
    let (_, _, stranger) = env.tenant("globex", "ops").await;
    let refused = get(url.clone(), Some(stranger)).await;
    assert_eq!(refused.status(), 404);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    let billing = env.agent(tenant, "billing").await;
    let (_, billing_key) = env.store.tenancy().create_api_key(tenant, Some(billing.id), "billing", None).await.unwrap();
    assert_eq!(get(url.clone(), Some(billing_key)).await.status(), 404);
    let (_, ops_key) = env.store.tenancy().create_api_key(tenant, Some(agent.id), "ops", None).await.unwrap();
    assert_eq!(get(url.clone(), Some(ops_key)).await.status(), 200);
    let forged = url.replace("/file-", "/file-0").replace(".png", "x.png");
    assert_eq!(get(forged, Some(key)).await.status(), 404);
    env.stop().await;
}

#[tokio::test]
async fn a_team_with_its_own_fal_key_pays_for_its_pictures_and_others_use_the_installations() {
    let (images, env) = start().await;
    let (acme, _, acme_key) = env.tenant("acme", "ops").await;
    let (_, _, globex_key) = env.tenant("globex", "ops").await;
    sqlx::query("UPDATE agents SET toolsets = ARRAY['image_gen']").execute(&env.db).await.unwrap();
    // The scripted FAL is on 127.0.0.1: the team's key is allowed there (FAL's own hosts by default).
    env.team_key(acme, "fal", "fal-acme").await;
    for key in [&acme_key, &globex_key] {
        env.llm.push(ScriptedReply::tool_call("image_generate", json!({"prompt": "a fox"})));
        env.llm.push(ScriptedReply::text("Done."));
        let ask = ask("ops", "draw a fox");
        assert_eq!(env.chat(key, ask).await.status(), 200);
        assert_eq!(last_tool_result(&env)["success"], true);
    }
    let used: Vec<Option<String>> = images.requests().into_iter().map(|r| r.authorization).collect();
    assert_eq!(used, [Some("Key fal-acme".to_owned()), Some("Key fal-operator".to_owned())]);
    let transcript: String =
        sqlx::query_scalar("SELECT string_agg(content::text, ' ') FROM messages").fetch_one(&env.db).await.unwrap();
    assert!(!transcript.contains("fal-acme"), "no key in a transcript");
    env.stop().await;
}
