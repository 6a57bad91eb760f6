//! Files people send reach the agent's workspace: a PDF sent on Telegram is kept under
//! `/workspace/inbox/` (through sandboxd, named safely, never over another file), the model is
//! told its path, type, size and the start of its text (read out inside the sandbox), and
//! `read_file` pages through it there, so the answer quotes the document. The API takes the
//! same files as chat completions `file` parts and Responses `input_file` items.

use serde_json::json;

use hermes_testkit::ScriptedReply;

use crate::harness::{Team, TestEnv, answer_text};
use crate::telegram::{Pod, TOKEN, open_bot, open_chat_with_tools, sent};

const REPORT: [&str; 3] = ["Quarterly agent report", "Sandboxes started: 1200", "Median cold start: 150 ms"];

/// The text of the last user message of the model's `n`th request.
fn told(env: &crate::harness::TestEnv, n: usize) -> String {
    let content =
        env.llm.requests()[n].messages().iter().rev().find(|m| m["role"] == "user").unwrap()["content"].clone();
    match content {
        serde_json::Value::String(text) => text,
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
    }
}

#[tokio::test]
async fn a_pdf_sent_on_telegram_lands_in_the_inbox_and_is_answered_from_its_text() {
    let (env, tg, _, pod) = open_chat_with_tools(&["terminal", "file"]).await;
    let pdf = hermes_testkit::web::pdf(&REPORT);

    // The sender's name tries to climb out of the inbox; the model pages the file itself.
    let page = json!({"path": "/workspace/inbox/Q3_report.pdf", "offset": 3, "limit": 1});
    env.llm.push(ScriptedReply::tool_call("read_file", page));
    tg.user_sends_document(TOKEN, 42, "doc-pdf", "../../Q3 report.pdf", "application/pdf", &pdf);
    let answer = sent(&tg, 1).await[0].text.clone();
    assert!(answer.contains("3|Median cold start: 150 ms"), "the answer quotes the PDF's third line: {answer}");
    let note = told(&env, 0);
    let size =
        if pdf.len() < 1024 { format!("{} B", pdf.len()) } else { format!("{:.1} KB", pdf.len() as f64 / 1024.0) };
    let kept = format!("(application/pdf, {size}). It is saved at /workspace/inbox/Q3_report.pdf.");
    assert!(note.contains(&kept), "the model is told the type, size and path: {note}");
    assert!(note.contains("Median cold start: 150 ms"), "the note carries the text read in the sandbox: {note}");
    let stored: String =
        sqlx::query_scalar("SELECT content::text FROM messages WHERE role = 'user' ORDER BY created_at, seq LIMIT 1")
            .fetch_one(&env.db)
            .await
            .unwrap();
    assert!(!stored.contains("base64"), "the stored conversation holds the note, not the bytes: {stored}");

    // The same bytes again are the same file; other bytes under the name get a name of their own.
    tg.user_sends_document(TOKEN, 42, "doc-pdf-again", "Q3 report.pdf", "application/pdf", &pdf);
    sent(&tg, 2).await;
    assert!(told(&env, 2).contains("saved at /workspace/inbox/Q3_report.pdf."), "{}", told(&env, 2));
    let other = hermes_testkit::web::pdf(&["Another report"]);
    tg.user_sends_document(TOKEN, 42, "doc-pdf-other", "Q3 report.pdf", "application/octet-stream", &other);
    sent(&tg, 3).await;
    let renamed = told(&env, 3);
    assert!(renamed.contains("saved at /workspace/inbox/Q3_report-2.pdf"), "{renamed}");
    assert!(
        renamed.contains("application/pdf"),
        "the type comes from the name when the platform does not say: {renamed}"
    );

    // The bytes are in the workspace, owned by the sandbox's user.
    env.llm.push(ScriptedReply::terminal(
        "head -c 5 /workspace/inbox/Q3_report.pdf; echo; stat -c %u /workspace/inbox/Q3_report.pdf",
    ));
    tg.user_says(TOKEN, 42, "check the file");
    let checked = sent(&tg, 4).await[3].text.clone();
    assert!(checked.contains("%PDF-") && checked.contains("1000"), "{checked}");
    pod.stop_with(env).await;
}

#[tokio::test]
async fn a_pdf_on_the_api_reaches_the_workspace_by_chat_completions_and_responses() {
    let Team { env, key, .. } = Team::acme("helper").await;
    let pdf = hermes_testkit::web::pdf(&REPORT);
    let data = format!(
        "data:application/pdf;base64,{}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &pdf)
    );

    // Nothing scripted: the model echoes what it was given, the note included.
    let chat = json!({"model": "helper", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what does it say?"},
        {"type": "file", "file": {"filename": "notes.pdf", "file_data": data}},
    ]}]});
    let resp = env.chat(&key, chat).await;
    assert_eq!(resp.status(), 200);
    let answer = answer_text(&resp.json().await.unwrap()).to_owned();
    assert!(answer.contains("It is saved at /workspace/inbox/notes.pdf."), "{answer}");
    assert!(answer.contains("Median cold start: 150 ms"), "{answer}");
    // Kept in the workspace, the bytes are nowhere in the database: not in the transcript, not
    // in the turn's stored input.
    let (turns, messages): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM turns WHERE input::text LIKE '%base64%'),
                (SELECT count(*) FROM messages WHERE content::text LIKE '%base64%')",
    )
    .fetch_one(&env.db)
    .await
    .unwrap();
    assert_eq!((turns, messages), (0, 0), "no copy of the file's bytes is kept");

    // The Responses API's flat input_file, as plain base64 with a name: the same bytes, the same file.
    let plain = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &pdf);
    let body = json!({"model": "helper", "input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "notes.pdf", "file_data": plain},
    ]}]});
    let resp =
        env.http.post(format!("{}/v1/responses", env.api_url)).bearer_auth(&key).json(&body).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let out: serde_json::Value = resp.json().await.unwrap();
    let text: String = out["output"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().unwrap().iter())
        .filter_map(|c| c["text"].as_str())
        .collect();
    assert!(
        text.contains("notes.pdf (application/pdf,") && text.contains("saved at /workspace/inbox/notes.pdf."),
        "{out}"
    );

    // A file by id is refused with a clear error, and nothing is queued.
    let by_id = json!({"model": "helper", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"file_id": "file-abc"}},
    ]}]});
    let resp = env.chat(&key, by_id).await;
    assert_eq!(resp.status(), 400);
    let err: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_file", "{err}");
    env.stop().await;
}

#[tokio::test]
async fn a_docx_on_the_api_is_answered_from_its_text() {
    let Team { env, key, .. } = Team::acme("helper").await;
    let docx =
        hermes_testkit::docs::docx(&["Minutes of the ops review", "Decision: keep 3 replicas & a standby"]).unwrap();
    let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &docx);
    let chat = json!({"model": "helper", "messages": [{"role": "user", "content": [
        {"type": "file", "file": {"filename": "minutes.docx", "file_data": data}},
    ]}]});
    let resp = env.chat(&key, chat).await;
    assert_eq!(resp.status(), 200);
    let answer = answer_text(&resp.json().await.unwrap()).to_owned();
    let kind = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
    assert!(answer.contains(&format!("minutes.docx ({kind},")), "the type comes from the name: {answer}");
    assert!(answer.contains("saved at /workspace/inbox/minutes.docx."), "{answer}");
    assert!(answer.contains("2|Decision: keep 3 replicas & a standby"), "the text read out in the sandbox: {answer}");
    env.stop().await;
}

#[tokio::test]
async fn a_file_sent_right_after_words_joins_their_turn_and_reaches_the_inbox() {
    let env = TestEnv::start().await;
    let (tg, _) = open_bot(&env).await;
    // Both arrive within the batching moment, before the turn may start: one turn.
    tg.user_says(TOKEN, 42, "here is the plan");
    tg.user_sends_document(TOKEN, 42, "doc-plan", "plan.pdf", "application/pdf", &hermes_testkit::web::pdf(&REPORT));
    let pod = Pod::start(&env).await;
    let answer = sent(&tg, 1).await[0].text.clone();
    assert_eq!(env.count("SELECT count(*) FROM turns").await, 1, "one turn for both");
    assert!(answer.contains("here is the plan"), "{answer}");
    assert!(answer.contains("saved at /workspace/inbox/plan.pdf."), "the file joined the words, not lost: {answer}");
    pod.stop_with(env).await;
}

/// The files people send are metered per tenant: each workspace's inbox as sandboxd measured
/// it, summed over the tenant, under its quota (here 1 MB): a file that would pass it is not
/// kept and the model is told why; the admin API shows what is used; deleting files frees room.
#[tokio::test]
async fn a_tenants_file_storage_is_metered_and_a_file_over_its_quota_is_not_kept() {
    let Team { env, tenant, key, .. } = Team::acme("helper").await;
    sqlx::query("UPDATE tenants SET file_storage_mb = 1 WHERE id = $1")
        .bind(tenant.as_uuid())
        .execute(&env.db)
        .await
        .unwrap();
    let send = |name: &'static str, bytes: usize| {
        let data = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, vec![b'x'; bytes]);
        json!({"model": "helper", "messages": [{"role": "user", "content": [
            {"type": "file", "file": {"filename": name, "file_data": format!("data:application/octet-stream;base64,{data}")}},
        ]}]})
    };
    // Nothing scripted: the model echoes the note it was given.
    let first = answer_text(&env.chat(&key, send("a.bin", 600_000)).await.json().await.unwrap()).to_owned();
    assert!(first.contains("It is saved at /workspace/inbox/a.bin."), "{first}");
    let used = env.store.tenancy().file_storage(tenant).await.unwrap().used_bytes;
    assert_eq!(used, 600_000, "measured in the workspace");

    let second = answer_text(&env.chat(&key, send("b.bin", 600_000)).await.json().await.unwrap()).to_owned();
    assert!(second.contains("could not be saved: the team's file storage is full"), "{second}");
    env.llm.push(ScriptedReply::terminal("ls /workspace/inbox"));
    env.llm.push(ScriptedReply::text("listed"));
    env.answered(&key, "helper", "what is there?").await;
    let listing =
        env.llm.requests().last().unwrap().messages().iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned();
    assert!(listing.contains("a.bin") && !listing.contains("b.bin"), "{listing}");

    // The agent deletes the first file: the next delivery measures the inbox again.
    env.llm.push(ScriptedReply::terminal("rm /workspace/inbox/a.bin"));
    env.llm.push(ScriptedReply::text("deleted"));
    env.answered(&key, "helper", "delete it").await;
    let small = answer_text(&env.chat(&key, send("c.bin", 1_000)).await.json().await.unwrap()).to_owned();
    assert!(small.contains("saved at /workspace/inbox/c.bin."), "{small}");
    assert_eq!(env.store.tenancy().file_storage(tenant).await.unwrap().used_bytes, 1_000);
    let third = answer_text(&env.chat(&key, send("b.bin", 600_000)).await.json().await.unwrap()).to_owned();
    assert!(third.contains("saved at /workspace/inbox/b.bin."), "room again: {third}");
    env.stop().await;
}

/// The operator's `gateway.max_file_mb` caps what a person may send under the platform's own
/// limit: a file past it is not downloaded, and the model is told why.
#[tokio::test]
async fn a_file_past_the_operators_cap_is_not_taken_and_the_model_is_told_why() {
    let env = TestEnv::start_with(crate::harness::Roles::default(), |c| c.gateway.max_file_mb = 1).await;
    let (tg, _) = open_bot(&env).await;
    let _pod = Pod::start(&env).await;
    env.llm.push(ScriptedReply::text("understood"));
    tg.user_sends_document(TOKEN, 42, "doc-big", "big.zip", "application/zip", &vec![0u8; 1_200_000]);
    sent(&tg, 1).await;
    let note = told(&env, 0);
    assert!(note.contains("[The user sent big.zip (application/zip), which is too large to read.]"), "{note}");
    env.llm.push(ScriptedReply::text("got it"));
    tg.user_sends_document(TOKEN, 42, "doc-small", "small.zip", "application/zip", &vec![0u8; 900_000]);
    sent(&tg, 2).await;
    assert!(told(&env, 1).contains("It is saved at /workspace/inbox/small.zip."), "{}", told(&env, 1));
    env.stop().await;
}
