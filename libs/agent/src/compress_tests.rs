use std::sync::Mutex;

use hermes_core::{ChatMessage, ToolCall, ToolCallFunction};

use super::*;

struct Scribe {
    answer: Result<String, String>,
    prompts: Mutex<Vec<String>>,
}

impl Scribe {
    fn ok(text: &str) -> Self {
        Self { answer: Ok(text.into()), prompts: Mutex::default() }
    }
    fn failing() -> Self {
        Self { answer: Err("aux model down".into()), prompts: Mutex::default() }
    }
    fn last_prompt(&self) -> String {
        self.prompts.lock().unwrap().last().cloned().unwrap_or_default()
    }
}

impl Summarizer for Scribe {
    async fn summarize(&self, prompt: Vec<ChatMessage>, _max_tokens: u32) -> Result<String, String> {
        self.prompts.lock().unwrap().push(prompt[0].text());
        self.answer.clone()
    }
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: ToolCallFunction { name: "terminal".into(), arguments: "{}".into() },
    }
}

/// `n` exchanges of user, assistant-with-call, tool result, assistant text.
fn conversation(n: usize, tool_output: &str) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    for i in 0..n {
        let id = format!("c{i}");
        out.push(ChatMessage::user(format!("question {i}")));
        out.push(ChatMessage { tool_calls: vec![call(&id)], content: None, ..ChatMessage::assistant("") });
        out.push(ChatMessage::tool_result(&id, "terminal", format!("{tool_output} #{i}")));
        out.push(ChatMessage::assistant(format!("answer {i}")));
    }
    out
}

fn cfg() -> CompressionConfig {
    CompressionConfig::for_window(128_000)
}

#[test]
fn the_threshold_is_half_the_window_never_below_a_64k_window() {
    assert_eq!(CompressionConfig::for_window(200_000).threshold_tokens(), 100_000);
    assert_eq!(CompressionConfig::for_window(32_000).threshold_tokens(), 32_000);
}

#[tokio::test]
async fn head_and_tail_stay_verbatim_and_no_tool_result_is_cut_from_its_call() {
    let body = conversation(15, "out");
    let scribe = Scribe::ok("## Goal\nanswer questions");
    let c = Compressor::new(cfg()).compress(&body, &[&scribe]).await.unwrap();
    // Head: the first three messages, extended to keep the tool result with its call.
    let summary_at = c.origin.iter().position(Option::is_none).unwrap();
    assert_eq!(c.origin[..summary_at], [Some(0), Some(1), Some(2)]);
    assert!(c.body[summary_at].text().starts_with(SUMMARY_PREFIX) && c.body[summary_at].text().ends_with(SUMMARY_END));
    let tail: Vec<usize> = c.origin[summary_at + 1..].iter().map(|o| o.unwrap()).collect();
    assert!(tail.len() >= 8 && tail.len() <= 20, "{}", tail.len());
    assert_eq!(*tail.last().unwrap(), body.len() - 1, "the tail reaches the end");
    assert!(tail.windows(2).all(|w| w[1] == w[0] + 1), "the tail is contiguous");
    assert_ne!(c.body[summary_at + 1].role, Role::Tool, "the tail never starts with a tool result");
    crate::normalize::normalize(&c.body);
}

#[tokio::test]
async fn old_tool_output_is_pruned_before_summarising_and_images_are_dropped() {
    let mut body = conversation(15, &"x".repeat(500));
    body[4] = ChatMessage {
        content: Some(Content::Parts(vec![ContentPart::ImageUrl {
            image_url: hermes_core::message::ImageUrl { url: "data:image/png;base64,AAAA".into(), detail: None },
        }])),
        ..ChatMessage::user("")
    };
    let scribe = Scribe::ok("summary");
    Compressor::new(cfg()).compress(&body, &[&scribe]).await.unwrap();
    let prompt = scribe.last_prompt();
    assert!(prompt.contains(PRUNED_TOOL_OUTPUT));
    assert!(!prompt.contains(&"x".repeat(300)), "long outputs are not sent to the summariser");
    assert!(prompt.contains("[image removed]") && !prompt.contains("base64"));
    assert!(prompt.contains("## Goal") && prompt.contains("## Next Steps"), "the structured template");
}

#[tokio::test]
async fn a_second_compaction_updates_the_previous_summary() {
    let body = conversation(15, "out");
    let scribe = Scribe::ok("FIRST SUMMARY");
    let compressor = Compressor::new(cfg());
    let first = compressor.compress(&body, &[&scribe]).await.unwrap();
    let mut longer = first.body.clone();
    longer.extend(conversation(10, "more"));
    compressor.compress(&longer, &[&scribe]).await.unwrap();
    let prompt = scribe.last_prompt();
    assert!(prompt.contains("EXISTING SUMMARY:\nFIRST SUMMARY"), "{prompt}");
}

#[tokio::test]
async fn a_failing_summarizer_gives_way_to_the_next_then_to_a_static_digest() {
    let body = conversation(15, "out");
    let (aux, main) = (Scribe::failing(), Scribe::ok("from the main model"));
    let c = Compressor::new(cfg()).compress(&body, &[&aux, &main]).await.unwrap();
    assert_eq!(c.summary, "from the main model");
    assert!(!c.static_summary);
    let c = Compressor::new(cfg()).compress(&body, &[&Scribe::failing(), &Scribe::failing()]).await.unwrap();
    assert!(c.static_summary);
    assert!(c.summary.contains("question 5") && c.summary.len() <= 8_000);
}

#[tokio::test]
async fn two_compactions_that_save_little_stop_further_attempts() {
    let compressor = Compressor::new(CompressionConfig { context_window: 1, ..cfg() });
    assert!(compressor.should_compress(1_000_000));
    // A summary as long as what it replaces saves nothing.
    let body = conversation(15, "o");
    let bloated = Scribe::ok(&"long summary ".repeat(2_000));
    compressor.compress(&body, &[&bloated]).await.unwrap();
    assert!(compressor.should_compress(1_000_000), "one miss is allowed");
    compressor.compress(&body, &[&bloated]).await.unwrap();
    assert!(!compressor.should_compress(1_000_000), "paused after two misses");
    assert!(compressor.needs_hygiene(1_000_000, 30), "the turn-start safety net still fires");
}

#[test]
fn the_turn_start_hygiene_check_fires_at_85_percent_or_400_messages() {
    let compressor = Compressor::new(CompressionConfig::for_window(100_000));
    assert!(!compressor.needs_hygiene(84_999, 50), "the 50 % rule is the loop's, not hygiene's");
    assert!(compressor.needs_hygiene(85_000, 50));
    assert!(compressor.needs_hygiene(1_000, 400), "a long chat of short messages");
    assert!(!compressor.needs_hygiene(1_000, 399));
    assert!(!compressor.needs_hygiene(90_000, 3), "fewer than 4 messages are left alone");
    let off = Compressor::new(CompressionConfig { enabled: false, ..CompressionConfig::for_window(100_000) });
    assert!(!off.needs_hygiene(90_000, 500));
}

#[tokio::test]
async fn a_short_conversation_has_nothing_to_compact() {
    let body = conversation(2, "out");
    assert!(Compressor::new(cfg()).compress(&body, &[&Scribe::ok("s")]).await.is_none());
}
