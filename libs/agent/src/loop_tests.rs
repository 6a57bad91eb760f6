//! The loop's rules against an in-process scripted model, journal and tools.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use hermes_core::{ChatMessage, Role, ToolCall, ToolCallFunction, TurnEventKind};
use hermes_llm::{ChatModel, ChatRequest, ChatResponse, DeltaSink, LlmError};
use hermes_tools::{Tool, ToolCtx, ToolError, ToolRegistry};

use super::*;

// ---------- fakes ----------

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    requests: Mutex<Vec<ChatRequest>>,
    latency: Option<Duration>,
}

/// The provider's defaults.
static NO_SETTINGS: hermes_core::ModelSettings = hermes_core::ModelSettings {
    temperature: None,
    top_p: None,
    max_output_tokens: None,
    reasoning_effort: None,
    thinking_budget: None,
    fast: None,
};

fn text(t: &str) -> ChatResponse {
    ChatResponse { message: ChatMessage::assistant(t), finish_reason: Some("stop".into()), usage: Default::default() }
}

fn cut(t: &str) -> ChatResponse {
    ChatResponse { finish_reason: Some("length".into()), ..text(t) }
}

fn empty() -> ChatResponse {
    ChatResponse { message: ChatMessage { content: None, ..ChatMessage::assistant("") }, ..text("") }
}

fn calls(list: &[(&str, Value)]) -> ChatResponse {
    let tool_calls = list
        .iter()
        .enumerate()
        .map(|(i, (name, args))| ToolCall {
            id: format!("c{}_{i}", uuid::Uuid::now_v7().simple()),
            kind: "function".into(),
            function: ToolCallFunction { name: (*name).into(), arguments: args.to_string() },
        })
        .collect();
    ChatResponse {
        message: ChatMessage { content: None, tool_calls, ..ChatMessage::assistant("") },
        finish_reason: Some("tool_calls".into()),
        usage: Default::default(),
    }
}

impl Script {
    fn new(replies: Vec<ChatResponse>) -> Self {
        Self::with(replies.into_iter().map(Ok).collect())
    }
    fn with(replies: Vec<Result<ChatResponse, LlmError>>) -> Self {
        Self { replies: Mutex::new(replies.into()), ..Default::default() }
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ChatModel for Script {
    async fn complete(&self, request: &ChatRequest, _sink: &mut dyn DeltaSink) -> Result<ChatResponse, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        if let Some(latency) = self.latency {
            tokio::time::sleep(latency).await;
        }
        self.replies.lock().unwrap().pop_front().unwrap_or_else(|| Ok(text("done")))
    }
}

/// A compaction the journal was told about: the new prompt and the marked body.
type Compacted = (String, Vec<(Option<i32>, ChatMessage)>);

#[derive(Default)]
struct Journal(Vec<(i32, ChatMessage)>, Vec<Compacted>);

impl TurnJournal for Journal {
    async fn record(&mut self, step: i32, message: &ChatMessage) -> Result<(), JournalError> {
        self.0.push((step, message.clone()));
        Ok(())
    }
    async fn compacted(&mut self, prompt: &str, body: &[(Option<i32>, ChatMessage)]) -> Result<(), JournalError> {
        self.1.push((prompt.to_owned(), body.to_vec()));
        Ok(())
    }
}

#[derive(Default)]
struct Events(Mutex<Vec<TurnEventKind>>);

impl EventSink for Events {
    fn emit(&self, event: TurnEventKind) {
        self.0.lock().unwrap().push(event);
    }
}

/// A configurable tool that records how many of its calls run at once.
struct Probe {
    name: &'static str,
    read_only: bool,
    sequential: bool,
    refunds: bool,
    fail: bool,
    running: Arc<AtomicUsize>,
    max_running: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
}

impl Probe {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            read_only: false,
            sequential: false,
            refunds: false,
            fail: false,
            running: Arc::default(),
            max_running: Arc::default(),
            calls: Arc::default(),
        }
    }
}

impl Tool for Probe {
    fn name(&self) -> hermes_tools::ToolName {
        hermes_tools::ToolName::Fixed(self.name)
    }
    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::Todo
    }
    fn schema(&self) -> Value {
        json!({"name": self.name, "description": "probe", "parameters": {"type": "object"}})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn sequential(&self) -> bool {
        self.sequential
    }
    fn refunds_iteration(&self) -> bool {
        self.refunds
    }
    fn call<'a>(&'a self, _: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_running.fetch_max(now, Ordering::SeqCst);
            let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            if self.fail {
                return Err(ToolError::RespondToModel("it broke".into()));
            }
            let pad = args.get("pad").and_then(Value::as_u64).unwrap_or(0);
            let pad = "x".repeat(usize::try_from(pad).unwrap_or(0));
            Ok(format!("{} result {}{pad}", self.name, args.get("n").cloned().unwrap_or(Value::Null)))
        })
    }
}

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("")
}

fn start() -> TurnStart {
    TurnStart { messages: vec![ChatMessage::system("sys"), ChatMessage::user("go")], completed_steps: 0, turn_start: 1 }
}

async fn run(model: &Script, tools: &ToolRegistry, limits: &TurnLimits, journal: &mut Journal) -> TurnOutcome {
    run_from(model, tools, limits, journal, start()).await
}

async fn run_from(
    model: &Script,
    tools: &ToolRegistry,
    limits: &TurnLimits,
    journal: &mut Journal,
    start: TurnStart,
) -> TurnOutcome {
    let events = Events::default();
    let ctx = ctx();
    let turn = test_turn(model, tools, &ctx, journal, &events, limits);
    match turn.run(start).await {
        TurnEnd::Finished(o) => o,
        other => panic!("unexpected end {other:?}"),
    }
}

/// The turn the tests run: `model` named "m", without compaction.
fn test_turn<'a>(
    model: &'a Script,
    tools: &'a ToolRegistry,
    ctx: &'a ToolCtx,
    journal: &'a mut Journal,
    events: &'a Events,
    limits: &'a TurnLimits,
) -> Turn<'a, Script, Journal> {
    let settings = &NO_SETTINGS;
    Turn { model, model_name: "m", settings, tools, tool_ctx: ctx, journal, events, limits, context: None }
}

fn registry(tools: Vec<Probe>) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    for t in tools {
        r.register(Arc::new(t));
    }
    r
}

// ---------- budgets ----------

#[tokio::test]
async fn a_spent_iteration_budget_ends_with_one_grace_call_without_tools() {
    let step = || calls(&[("probe", json!({}))]);
    let model = Script::new(vec![step(), step(), step(), text("Summary: did 3 steps")]);
    let limits = TurnLimits::main(3);
    let mut journal = Journal::default();
    let out = run(&model, &registry(vec![Probe::new("probe")]), &limits, &mut journal).await;
    assert_eq!(out.finish_reason, FinishReason::Length);
    assert_eq!(out.error_code, Some(hermes_core::ErrorCode::IterationBudgetExhausted));
    assert_eq!(out.content, "Summary: did 3 steps");
    let reqs = model.requests();
    assert_eq!(reqs.len(), 4, "three steps and one grace call");
    let grace = reqs.last().unwrap();
    assert!(grace.tools.is_empty(), "no tools in the grace call");
    assert_eq!(grace.messages.last().unwrap().text(), GRACE_PROMPT);
    assert!(!journal.0.iter().any(|(_, m)| m.text() == GRACE_PROMPT), "the grace prompt is not stored");
    assert_eq!(journal.0.last().unwrap().1.text(), "Summary: did 3 steps");
}

#[tokio::test]
async fn a_spent_api_call_budget_also_ends_the_loop_and_an_empty_grace_answer_is_replaced_honestly() {
    let model = Script::new(vec![
        empty(),
        calls(&[("probe", json!({}))]),
        empty(),
        empty(),
        empty(),
        empty(),
        empty(),
        empty(),
    ]);
    let limits = TurnLimits { max_api_calls: 3, ..TurnLimits::main(10) };
    let mut journal = Journal::default();
    let out = run(&model, &registry(vec![Probe::new("probe")]), &limits, &mut journal).await;
    assert_eq!(out.error_code, Some(hermes_core::ErrorCode::IterationBudgetExhausted));
    assert!(out.content.contains("without finishing"), "{}", out.content);
}

#[tokio::test]
async fn budget_warnings_ride_along_with_late_calls_and_are_never_stored() {
    let mut replies: Vec<ChatResponse> = (0..9).map(|_| calls(&[("probe", json!({}))])).collect();
    replies.push(text("done in time"));
    let model = Script::new(replies);
    let mut journal = Journal::default();
    let out = run(&model, &registry(vec![Probe::new("probe")]), &TurnLimits::main(10), &mut journal).await;
    assert_eq!(out.content, "done in time");
    let notes: Vec<String> = model
        .requests()
        .iter()
        .map(|r| r.messages.last().unwrap().text())
        .map(|t| if t.starts_with("[System note") { t } else { String::new() })
        .collect();
    assert!(notes[..7].iter().all(String::is_empty), "no note before 70 %: {notes:?}");
    assert!(notes[7].contains("7 of 10") && notes[7].contains("Prioritise"), "{notes:?}");
    assert!(notes[9].contains("9 of 10") && notes[9].contains("Finish now"), "{notes:?}");
    assert!(!journal.0.iter().any(|(_, m)| m.text().starts_with("[System note")));
}

#[tokio::test]
async fn steps_that_only_run_execute_code_are_refunded() {
    let mut replies: Vec<ChatResponse> = (0..4).map(|_| calls(&[("execute_code", json!({}))])).collect();
    replies.push(text("finished"));
    let model = Script::new(replies);
    let mut exec = Probe::new("execute_code");
    exec.refunds = true;
    // The iteration budget is refunded; the API-call budget still counts every call.
    let limits = TurnLimits { max_api_calls: 10, ..TurnLimits::main(2) };
    let out = run(&model, &registry(vec![exec]), &limits, &mut Journal::default()).await;
    assert_eq!(out.content, "finished");
    assert_eq!(out.error_code, None);
}

// ---------- empty answers and length ----------

#[tokio::test]
async fn empty_answers_are_retried_three_times_then_the_turn_fails() {
    let model = Script::new(vec![empty(), empty(), text("third time")]);
    let mut journal = Journal::default();
    let out = run(&model, &ToolRegistry::new(), &TurnLimits::main(90), &mut journal).await;
    assert_eq!(out.content, "third time");
    assert_eq!(journal.0.len(), 1, "empty answers are never stored");

    let model = Script::new(vec![empty(), empty(), empty(), empty(), text("too late")]);
    let out = run(&model, &ToolRegistry::new(), &TurnLimits::main(90), &mut Journal::default()).await;
    assert_eq!(out.error_code, Some(hermes_core::ErrorCode::AgentIncomplete));
    assert_eq!(model.requests().len(), 4, "one call and three retries");
}

#[tokio::test]
async fn a_cut_off_answer_is_continued_with_a_rising_max_tokens() {
    let model = Script::new(vec![cut("Hel"), cut("lo wo"), text("rld")]);
    let mut journal = Journal::default();
    let out = run(&model, &ToolRegistry::new(), &TurnLimits::main(90), &mut journal).await;
    assert_eq!(out.content, "Hello world");
    assert_eq!(out.finish_reason, FinishReason::Stop);
    let reqs = model.requests();
    assert_eq!(reqs[0].max_tokens, None);
    assert_eq!(reqs[1].max_tokens, Some(8192));
    assert_eq!(reqs[2].max_tokens, Some(16384));
    assert_eq!(reqs[2].messages.last().unwrap().text(), CONTINUE_PROMPT);
    assert_eq!(reqs[2].messages[reqs[2].messages.len() - 2].text(), "Hello wo");
    assert_eq!(journal.0.len(), 1, "one stored answer");
    assert_eq!(journal.0[0].1.text(), "Hello world");

    let model = Script::new(vec![cut("a"), cut("b"), cut("c"), cut("d"), text("never")]);
    let out = run(&model, &ToolRegistry::new(), &TurnLimits::main(90), &mut Journal::default()).await;
    assert_eq!(out.content, "abcd");
    assert_eq!(out.finish_reason, FinishReason::Length, "still cut off after three continuations");
    assert_eq!(model.requests()[3].max_tokens, Some(32768));
}

// ---------- tools ----------

/// Saves results in memory, as the sandbox would in `/tmp/hermes-results`.
#[derive(Default)]
struct Spill(Mutex<Vec<String>>);

impl hermes_tools::ResultSpill for Spill {
    fn save<'a>(&'a self, ctx: &'a ToolCtx, _: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            self.0.lock().unwrap().push(ctx.call_id.clone());
            Ok(format!("/tmp/hermes-results/{}.txt", ctx.call_id))
        })
    }
}

#[tokio::test]
async fn the_results_of_one_answer_share_a_budget_and_the_overflow_is_saved_to_a_file() {
    // Three results of 90,000 characters finish in order; the third crosses 200,000.
    let many: Vec<(&str, Value)> =
        (0..3).map(|n| ("probe", json!({"ms": 10 + n * 60, "n": n, "pad": 90_000}))).collect();
    let model = Script::new(vec![calls(&many), text("ok")]);
    let spill = Arc::new(Spill::default());
    let mut tools = registry(vec![Probe::new("probe")]);
    tools.set_spill(spill.clone());
    let mut journal = Journal::default();
    let out = run(&model, &tools, &TurnLimits::main(10), &mut journal).await;
    assert_eq!(out.content, "ok");
    let results: Vec<&ChatMessage> = journal.0.iter().map(|(_, m)| m).filter(|m| m.role == Role::Tool).collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].text().len() > 90_000 && results[1].text().len() > 90_000, "under budget: whole");
    assert!(results[2].text().starts_with(hermes_tools::PERSISTED_TAG), "over budget: saved");
    assert!(results[2].text().len() < 2_000);
    assert_eq!(spill.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn calls_of_one_answer_run_concurrently_at_most_eight_and_results_keep_call_order() {
    let many: Vec<(&str, Value)> = (0..10).map(|n| ("probe", json!({"ms": 200 - n * 15, "n": n}))).collect();
    let model = Script::new(vec![calls(&many), text("ok")]);
    let probe = Probe::new("probe");
    let max = probe.max_running.clone();
    let started = std::time::Instant::now();
    let out = run(&model, &registry(vec![probe]), &TurnLimits::main(90), &mut Journal::default()).await;
    assert_eq!(out.content, "ok");
    assert_eq!(max.load(Ordering::SeqCst), 8, "never more than eight at once");
    assert!(started.elapsed() < Duration::from_millis(1000), "not one after another: {:?}", started.elapsed());
    let second = &model.requests()[1].messages;
    let results: Vec<String> = second.iter().filter(|m| m.role == Role::Tool).map(ChatMessage::text).collect();
    let expected: Vec<String> = (0..10).map(|n| format!("probe result {n}")).collect();
    assert_eq!(results, expected, "in call order although the later ones finished first");
}

#[tokio::test]
async fn sequential_tools_run_alone_in_order() {
    let model = Script::new(vec![
        calls(&[("memory", json!({"ms": 30, "n": 1})), ("memory", json!({"ms": 1, "n": 2}))]),
        text("ok"),
    ]);
    let mut memory = Probe::new("memory");
    memory.sequential = true;
    let max = memory.max_running.clone();
    run(&model, &registry(vec![memory]), &TurnLimits::main(90), &mut Journal::default()).await;
    assert_eq!(max.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_same_failing_call_is_warned_about_then_blocked() {
    let same = || calls(&[("flaky", json!({"x": 1}))]);
    let model = Script::new(vec![same(), same(), same(), same(), same(), text("giving up")]);
    let mut flaky = Probe::new("flaky");
    flaky.fail = true;
    let ran = flaky.calls.clone();
    let limits = TurnLimits {
        guardrails: GuardrailLimits { tool_failure_halt: 100, ..Default::default() },
        ..TurnLimits::main(90)
    };
    let mut journal = Journal::default();
    let out = run(&model, &registry(vec![flaky]), &limits, &mut journal).await;
    assert_eq!(out.content, "giving up");
    assert_eq!(ran.load(Ordering::SeqCst), 4, "the fifth identical call is not executed");
    let results: Vec<String> = journal.0.iter().filter(|(_, m)| m.role == Role::Tool).map(|(_, m)| m.text()).collect();
    assert!(!results[0].contains("Guidance") && results[1].contains("Guidance"), "{results:?}");
    assert!(results[4].starts_with("Blocked"), "{results:?}");
}

#[tokio::test]
async fn a_tool_failing_eight_times_in_a_row_halts_the_turn_and_the_user_is_told() {
    let replies: Vec<ChatResponse> = (0..10).map(|n| calls(&[("flaky", json!({"n": n}))])).collect();
    let model = Script::new(replies);
    let mut flaky = Probe::new("flaky");
    flaky.fail = true;
    let mut journal = Journal::default();
    let out = run(&model, &registry(vec![flaky]), &TurnLimits::main(90), &mut journal).await;
    assert_eq!(out.error_code, Some(hermes_core::ErrorCode::GuardrailHalt));
    assert!(out.content.contains("flaky") && out.content.contains('8'), "{}", out.content);
    assert_eq!(model.requests().len(), 8, "no model call after the halt");
    assert_eq!(journal.0.last().unwrap().1.role, Role::Assistant, "the halt message is the stored answer");
}

// ---------- interrupt and resume ----------

#[tokio::test]
async fn an_interrupted_turn_stores_no_partial_answer() {
    let model = Script { latency: Some(Duration::from_secs(5)), ..Script::new(vec![text("too slow")]) };
    let mut journal = Journal::default();
    let events = Events::default();
    let ctx = ctx();
    let tools = ToolRegistry::new();
    let limits = TurnLimits::main(90);
    let turn = test_turn(&model, &tools, &ctx, &mut journal, &events, &limits);
    let interrupted = tokio::time::timeout(Duration::from_millis(100), turn.run(start())).await;
    assert!(interrupted.is_err());
    assert!(journal.0.is_empty());
}

#[tokio::test]
async fn a_resumed_turn_runs_only_the_calls_without_results_then_asks_the_model() {
    let call = |id: &str| ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "probe".into(), arguments: "{}".into() },
    };
    let assistant = ChatMessage { tool_calls: vec![call("a"), call("b")], content: None, ..ChatMessage::assistant("") };
    let mut messages = start().messages;
    messages.push(assistant);
    messages.push(ChatMessage::tool_result("a", "probe", "already done"));
    let probe = Probe::new("probe");
    let ran = probe.calls.clone();
    let model = Script::new(vec![text("resumed")]);
    let mut journal = Journal::default();
    let out = run_from(
        &model,
        &registry(vec![probe]),
        &TurnLimits::main(90),
        &mut journal,
        TurnStart { messages, completed_steps: 1, turn_start: 1 },
    )
    .await;
    assert_eq!(out.content, "resumed");
    assert_eq!(ran.load(Ordering::SeqCst), 1, "only b ran");
    assert_eq!(journal.0[0].1.tool_call_id.as_deref(), Some("b"));
    let texts: Vec<String> = model.requests()[0].messages.iter().map(ChatMessage::text).collect();
    assert!(texts.contains(&"already done".to_owned()));
}

// ---------- compaction ----------

fn long_history(n: usize) -> Vec<ChatMessage> {
    let mut out = vec![ChatMessage::system("sys")];
    for i in 0..n {
        out.push(ChatMessage::user(format!("earlier question {i} {}", "x".repeat(100))));
        out.push(ChatMessage::assistant(format!("earlier answer {i}")));
    }
    out
}

fn engine(summary: &str) -> DefaultEngine<ModelSummarizer<Script>> {
    let cfg = compress::CompressionConfig::for_window(128_000);
    DefaultEngine {
        compressor: compress::Compressor::new(cfg),
        summarizers: vec![ModelSummarizer { model: Script::new(vec![text(summary)]), model_name: "aux".into() }],
    }
}

/// Runs `start` on `model` with compaction on (its summarizer answers `summary`); returns the
/// outcome and what the turn journaled and compacted.
async fn run_compacting(model: &Script, summary: &str, start: TurnStart) -> (TurnOutcome, Journal) {
    let engine = engine(summary);
    let mut journal = Journal::default();
    let events = Events::default();
    let ctx = ctx();
    let tools = registry(vec![Probe::new("probe")]);
    let limits = TurnLimits::main(90);
    let turn = Turn {
        model,
        model_name: "m",
        settings: &NO_SETTINGS,
        tools: &tools,
        tool_ctx: &ctx,
        journal: &mut journal,
        events: &events,
        limits: &limits,
        context: Some(&engine as &dyn ContextEngine),
    };
    match turn.run(start).await {
        TurnEnd::Finished(o) => (o, journal),
        other => panic!("unexpected end {other:?}"),
    }
}

/// A turn that asks `question` after [`long_history`]`(n)`.
fn after_history(n: usize, question: &str) -> TurnStart {
    let mut messages = long_history(n);
    messages.push(ChatMessage::user(question));
    let turn_start = messages.len() - 1;
    TurnStart { messages, completed_steps: 0, turn_start }
}

/// A call to the probe tool from a prompt of `prompt_tokens` (the engine's window is 128K).
fn probe_filling(prompt_tokens: u64) -> ChatResponse {
    let mut big = calls(&[("probe", json!({}))]);
    big.usage.prompt_tokens = prompt_tokens;
    big
}

#[tokio::test]
async fn a_prompt_over_half_the_window_is_compacted_before_the_next_call() {
    let model = Script::new(vec![probe_filling(70_000), text("final answer")]);
    let (out, journal) =
        run_compacting(&model, "SUMMARY OF EARLIER TURNS", after_history(30, "the current question")).await;
    assert_eq!(out.content, "final answer");
    assert_eq!(journal.1.len(), 1, "one compaction");
    let (prompt, body) = &journal.1[0];
    assert!(prompt.starts_with("sys") && prompt.contains(compress::COMPACTION_NOTE));
    assert!(body.iter().any(|(_, m)| m.text().contains("SUMMARY OF EARLIER TURNS")));
    // The running turn's messages keep their steps: input 0, the tool call and result 1.
    let marked: Vec<(i32, Role)> = body.iter().filter_map(|(s, m)| s.map(|s| (s, m.role))).collect();
    assert_eq!(marked, [(0, Role::User), (1, Role::Assistant), (1, Role::Tool)]);
    let second = &model.requests()[1].messages;
    assert!(second[0].text().contains(compress::COMPACTION_NOTE));
    assert!(second.iter().any(|m| m.text().starts_with(compress::SUMMARY_PREFIX)));
    assert!(second.len() < 40, "the history shrank: {}", second.len());
}

#[tokio::test]
async fn a_session_of_400_short_messages_is_compacted_at_turn_start_only() {
    // Far under half the window: only the hygiene rule (400 messages) applies, and only once.
    let model = Script::new(vec![calls(&[("probe", json!({}))]), text("answer")]);
    let (out, journal) = run_compacting(&model, "SUMMARY", after_history(200, "the current question")).await;
    assert_eq!(out.content, "answer");
    assert_eq!(journal.1.len(), 1, "compacted before the first call, not again after it");
    assert!(model.requests()[0].messages.len() < 40, "the first call already sees the compacted history");
}

#[tokio::test]
async fn a_context_overflow_from_the_provider_compacts_and_retries_the_step() {
    let overflow = LlmError::from_status(400, "This model's maximum context length is 8192 tokens", None);
    let model = Script::with(vec![Err(overflow), Ok(text("fits now"))]);
    let (out, journal) = run_compacting(&model, "S", after_history(30, "now")).await;
    assert_eq!(out.content, "fits now");
    assert_eq!(journal.1.len(), 1);
    assert_eq!(journal.0.last().unwrap().0, 1, "the retried step keeps its number");
}

#[tokio::test]
async fn a_full_context_adds_a_pressure_note_to_the_next_call_only() {
    let model = Script::new(vec![probe_filling(100_000), text("done")]);
    // Compaction is on but has nothing to compact in so short a history.
    let (out, journal) = run_compacting(&model, "S", after_history(2, "go")).await;
    assert_eq!(out.content, "done");
    let last = model.requests()[1].messages.last().unwrap().text();
    assert!(last.contains("78% of the context window"), "{last}");
    assert!(!journal.0.iter().any(|(_, m)| m.text().contains("context window")));
}

// ---------- parking ----------

/// Needs the user's answer before it can say anything.
struct AskUser;

impl Tool for AskUser {
    fn name(&self) -> hermes_tools::ToolName {
        hermes_tools::ToolName::Fixed("ask")
    }
    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::Todo
    }
    fn schema(&self) -> Value {
        json!({"name": "ask", "parameters": {"type": "object"}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(&'a self, ctx: &'a ToolCtx, _: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            match ctx.interaction.answer_for(&ctx.call_id) {
                Some(r) => Ok(format!(
                    "user said {}",
                    match &r.answer {
                        hermes_core::InteractionAnswer::Text { text } => text.as_str(),
                        _ => "",
                    }
                )),
                None => Err(ToolError::Park(hermes_tools::Interaction {
                    kind: hermes_core::InteractionKind::Clarify,
                    prompt: json!({"question": "?"}),
                })),
            }
        })
    }
}

#[tokio::test]
async fn a_call_that_needs_the_user_parks_the_turn_and_resumes_with_the_answer() {
    let mut tools = registry(vec![Probe::new("probe")]);
    tools.register(Arc::new(AskUser));
    let step = calls(&[("probe", json!({"n": 1})), ("ask", json!({})), ("probe", json!({"n": 2}))]);
    let model = Script::new(vec![step, text("thanks, done")]);
    let limits = TurnLimits::main(10);
    let events = Events::default();
    let mut journal = Journal::default();
    let mut ctx = ctx();
    ctx.interaction.enabled = true;

    let turn = test_turn(&model, &tools, &ctx, &mut journal, &events, &limits);
    let TurnEnd::Parked(parked) = turn.run(start()).await else { panic!("expected a park") };
    assert_eq!(parked.tool, "ask");
    assert_eq!(parked.interaction.kind, hermes_core::InteractionKind::Clarify);
    let stored: Vec<String> = journal.0.iter().filter(|(_, m)| m.role == Role::Tool).map(|(_, m)| m.text()).collect();
    assert!(!stored.iter().any(|t| t.contains("user said")), "no result for the parked call: {stored:?}");

    // Resume from the journal with the answer: the parked call (and any left) run, then the model.
    let mut messages = start().messages;
    messages.extend(journal.0.iter().map(|(_, m)| m.clone()));
    let resumed = TurnStart { messages, completed_steps: 1, turn_start: 1 };
    ctx.interaction.resolution = Some(Arc::new(hermes_tools::Resolution {
        call_id: parked.call_id.clone(),
        answer: hermes_core::InteractionAnswer::text("blue"),
    }));
    let mut journal2 = Journal::default();
    let turn = test_turn(&model, &tools, &ctx, &mut journal2, &events, &limits);
    let TurnEnd::Finished(out) = turn.run(resumed).await else { panic!("expected an answer") };
    assert_eq!(out.content, "thanks, done");
    let results: Vec<String> = journal2.0.iter().filter(|(_, m)| m.role == Role::Tool).map(|(_, m)| m.text()).collect();
    assert!(results.iter().any(|t| t == "user said blue"), "{results:?}");
    let last_request = model.requests().pop().unwrap();
    let tool_results = last_request.messages.iter().filter(|m| m.role == Role::Tool).count();
    assert_eq!(tool_results, 3, "every call of the step has exactly one result");
}
