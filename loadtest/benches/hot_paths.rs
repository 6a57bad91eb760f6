//! Criterion benchmarks of the pure functions every turn or message goes through: the stable
//! prompt, the transcript's provider form, folding a streamed answer, the chat platforms'
//! Markdown renderers and the search tokenizer. `cargo bench -p hermes-loadtest`; the whole
//! path is measured by `loadtest/run.sh` (docs/PERFORMANCE.md).
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "benchmark fixtures")]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

use hermes_agent::prompt::{PromptInputs, SkillEntry, render_stable_prompt};
use hermes_core::{ChatMessage, SessionSource, ToolCall, ToolCallFunction};
use hermes_llm::{NoDeltas, StreamAccumulator};

/// A long answer in the Markdown models write: headings, lists, code, links, emphasis.
fn answer_markdown() -> String {
    let section = "## Deploying the service\n\nRun **`helm install`** with the values below, then check \
        [the dashboard](https://example.com/dash?a=1&b=2). Notes:\n\n- first, the *database* must be up\n\
        - then `hermesd migrate` (it is idempotent)\n  - nested: a <tag> & an ampersand\n\n\
        ```rust\nfn main() { println!(\"hello <world>\"); }\n```\n\n> a quote with _emphasis_\n\n";
    section.repeat(12)
}

fn transcript(turns: usize) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::system("You are a helpful agent.")];
    for i in 0..turns {
        messages.push(ChatMessage::user(format!("question {i}: what does the log say about the queue?")));
        let mut call = ChatMessage::assistant("");
        call.tool_calls = vec![ToolCall {
            id: format!("call_{i}"),
            kind: "function".into(),
            function: ToolCallFunction {
                name: "terminal".into(),
                arguments: format!("{{\"command\":\"tail -n {i} log\"}}"),
            },
        }];
        messages.push(call);
        messages.push(ChatMessage::tool_result(format!("call_{i}"), "terminal", "line\n".repeat(20)));
        messages.push(ChatMessage::assistant(format!("The log shows {i} warnings about the queue.")));
    }
    messages
}

fn prompt(c: &mut Criterion) {
    let skills: Vec<SkillEntry> = (0..80)
        .map(|i| SkillEntry {
            category: format!("category-{}", i % 9),
            name: format!("skill-{i}"),
            description: "Does one useful thing the agent learned, described in a sentence.".into(),
        })
        .collect();
    let memory = "§ The user prefers short answers.\n".repeat(40);
    let tools = ["terminal", "read_file", "write_file", "patch", "search_files", "todo", "memory", "skill_view"];
    c.bench_function("prompt/render_stable_prompt (80 skills, memory)", |b| {
        b.iter(|| {
            render_stable_prompt(black_box(&PromptInputs {
                soul: Some("You are Hermes, a careful engineer."),
                model: "gpt-5",
                tool_names: &tools,
                custom_system: Some("Answer in English."),
                memory: Some(&memory),
                user_profile: Some("§ Works on the payments team."),
                skills: &skills,
                context_file: None,
                today: chrono::NaiveDate::from_ymd_opt(2026, 12, 2).unwrap(),
                source: Some(SessionSource::Api),
            }))
        })
    });
}

fn normalize(c: &mut Criterion) {
    let messages = transcript(50);
    c.bench_function("transcript/normalize (200 messages)", |b| {
        b.iter(|| hermes_agent::normalize::normalize(black_box(&messages)))
    });
}

fn stream(c: &mut Criterion) {
    let chunks: Vec<String> = answer_markdown()
        .split_inclusive(' ')
        .map(|w| serde_json::json!({"choices": [{"index": 0, "delta": {"content": w}}]}).to_string())
        .collect();
    c.bench_function("sse/accumulate (one answer, ~1k chunks)", |b| {
        b.iter(|| {
            let mut acc = StreamAccumulator::default();
            for data in &chunks {
                acc.push(black_box(data), &mut NoDeltas).unwrap();
            }
            acc.finish()
        })
    });
}

fn markdown(c: &mut Criterion) {
    let md = answer_markdown();
    c.bench_function("markdown/telegram_html (6 KB)", |b| {
        b.iter(|| hermes_chat::markdown::telegram_html(black_box(&md)))
    });
    c.bench_function("markdown/slack_mrkdwn (6 KB)", |b| b.iter(|| hermes_chat::slack::mrkdwn(black_box(&md))));
}

fn search(c: &mut Criterion) {
    let text = "The deploy of 数据库迁移 failed at step three; rate-limit errors from the API (HTTP 429) \
        continued until the worker restarted. 使用rust写代码 and retry later. "
        .repeat(20);
    c.bench_function("search/index_vector (3 KB, mixed scripts)", |b| {
        b.iter(|| hermes_store::search_text::index_vector(black_box(&text)))
    });
    c.bench_function("search/parse_query", |b| {
        b.iter(|| hermes_store::search_text::parse_query(black_box("数据库 rate-limit \"worker restarted\" -flaky")))
    });
}

criterion_group!(benches, prompt, normalize, stream, markdown, search);
criterion_main!(benches);
