//! Session titles written by a model, as upstream's `title_generation`: after a chat session's
//! first exchange, in the background (the answer is already on its way), the agent's `title`
//! side task (else its auxiliary model, else its main one) reads the first question and answer
//! and names the conversation in a few words. Best effort: when it fails, is busy or the worker
//! dies, the title made from the first message stays. A person's title always wins
//! (`Conversations::set_model_title` writes only over the first message's).

use std::sync::Arc;
use std::time::Duration;

use hermes_core::{AuxiliaryTask, CallPurpose, ChatMessage, Role, SessionId, TenantId, TurnId};
use hermes_llm::{ChatModel, ChatRequest, NoDeltas};
use hermes_store::ClaimedTurn;

use crate::Runtime;

const TITLE_PROMPT: &str = "Generate a short, descriptive title (3-7 words) for a conversation that starts with the \
following exchange. The title should capture the main topic or intent. Return ONLY the title text, nothing else. No \
quotes, no punctuation at the end, no prefixes.";

/// Characters of the question and of the answer the title model reads.
const SNIPPET_CHARS: usize = 500;
/// Longest title kept, in characters (upstream's 80).
const TITLE_CHARS: usize = 80;
const TITLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Titles being written at once by this worker; a session finishing while all are busy keeps
/// its first message's title.
static WRITING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);

/// After `turn` completed: titles its session in the background when it is a chat session's
/// first exchange and titles are on.
pub(crate) fn after_answer(rt: &Arc<Runtime>, tenant: TenantId, turn: &ClaimedTurn, session: SessionId) {
    if !rt.ctx.config.llm.session_titles || turn.session_source.platform().is_none() {
        return;
    }
    let Ok(slot) = WRITING.try_acquire() else {
        metrics::counter!("hermes_session_titles_total", "outcome" => "busy").increment(1);
        return;
    };
    let (rt, agent, turn) = (rt.clone(), turn.agent_id, turn.turn_id);
    let span = tracing::info_span!("session_title", tenant.id = %tenant, session.id = %session);
    let work = async move {
        let _slot = slot;
        let outcome = match write_title(&rt, tenant, agent, session, turn).await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::warn!(error = %e, "cannot title the session");
                "failed"
            }
        };
        metrics::counter!("hermes_session_titles_total", "outcome" => outcome).increment(1);
    };
    hermes_telemetry::tasks::spawn("session_title", tracing::Instrument::instrument(work, span));
}

async fn write_title(
    rt: &Runtime,
    tenant: TenantId,
    agent: hermes_core::AgentId,
    session: SessionId,
    turn: TurnId,
) -> Result<&'static str, String> {
    let store = &rt.ctx.store;
    if !store.conversations().awaits_model_title(tenant, session).await.map_err(text)? {
        return Ok("not_first");
    }
    let messages = store.conversations().turn_messages(tenant, turn).await.map_err(text)?;
    let Some(exchange) = exchange(&messages) else {
        return Ok("no_text");
    };
    let agent = store.agents().agent(tenant, agent).await.map_err(text)?;
    let ledger = crate::budget::Ledger { session, turn };
    let (models, meter) =
        crate::aside::models_after(rt, tenant, &agent, ledger, CallPurpose::Auxiliary).await.map_err(text)?;
    let (model, model_name) = models.for_task(AuxiliaryTask::Title);
    let request = ChatRequest {
        model: model_name,
        messages: vec![ChatMessage::system(TITLE_PROMPT), ChatMessage::user(exchange)],
        tools: Arc::from([]),
        // Room for a reasoning model to think before the few words (upstream's 500).
        max_tokens: Some(500),
        settings: Default::default(),
    };
    // Only the call is timed out: what it was billed for is recorded either way.
    let answered = tokio::time::timeout(TITLE_TIMEOUT, model.complete(&request, &mut NoDeltas)).await;
    let calls = meter.drain();
    store.tenancy().record_model_calls(tenant, session, turn, &calls).await.map_err(text)?;
    let Ok(answered) = answered else {
        return Ok("timed_out");
    };
    let Some(title) = cleaned(&answered.map_err(text)?.message.text()) else {
        return Ok("empty");
    };
    let written = store.conversations().set_model_title(tenant, session, &title).await.map_err(text)?;
    Ok(if written { "written" } else { "given_meanwhile" })
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// What the title model reads: the turn's question and its final answer, each cut short.
fn exchange(messages: &[ChatMessage]) -> Option<String> {
    let question = messages.iter().find(|m| m.role == Role::User)?.text();
    let answer = messages.iter().rev().find(|m| m.role == Role::Assistant && m.tool_calls.is_empty())?.text();
    let cut = |s: &str| s.trim().chars().take(SNIPPET_CHARS).collect::<String>();
    let (question, answer) = (cut(&question), cut(&answer));
    (!question.is_empty() && !answer.is_empty()).then(|| format!("User: {question}\n\nAssistant: {answer}"))
}

/// Characters a title never keeps: markup that could make a link or a format where titles are
/// shown (chats, the console), and invisible ones that could disguise it (bidi overrides,
/// zero-width characters).
fn unwanted(c: char) -> bool {
    matches!(c, '[' | ']' | '<' | '>' | '`' | '*' | '|')
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

/// A model's title as stored: its first non-empty line, without quotes, a `Title:` prefix,
/// markup, invisible or control characters, on one line, at most [`TITLE_CHARS`] characters.
fn cleaned(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let quotes: &[char] = &['#', '"', '\'', '*', '`', '“', '”', '‘', '’', ' '];
    let line = line.trim_matches(quotes);
    let line = match line.get(..6) {
        Some(prefix) if prefix.eq_ignore_ascii_case("title:") => line[6..].trim_matches(quotes),
        _ => line,
    };
    let line: String = line.chars().filter(|c| !unwanted(*c)).map(|c| if c.is_control() { ' ' } else { c }).collect();
    let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.is_empty() {
        return None;
    }
    if line.chars().count() <= TITLE_CHARS {
        return Some(line);
    }
    let cut: String = line.chars().take(TITLE_CHARS - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_one_clean_short_line() {
        assert_eq!(cleaned("Planning a Lisbon trip").as_deref(), Some("Planning a Lisbon trip"));
        assert_eq!(cleaned("\n  \"Title: Debugging Rust lifetimes\"\n").as_deref(), Some("Debugging Rust lifetimes"));
        assert_eq!(cleaned("Title: **Debugging Rust lifetimes**").as_deref(), Some("Debugging Rust lifetimes"));
        assert_eq!(cleaned("# “Tax forms”\nmore text").as_deref(), Some("Tax forms"));
        assert_eq!(cleaned("a\u{7}b\tc").as_deref(), Some("a b c"));
        assert_eq!(
            cleaned("[Click me](https://evil.example) <b>now</b>").as_deref(),
            Some("Click me(https://evil.example) bnow/b")
        );
        assert_eq!(cleaned("Tax\u{202E}txt.exe\u{200B} forms").as_deref(), Some("Taxtxt.exe forms"));
        assert_eq!(cleaned("  \n\"\" "), None);
        let long = cleaned(&"word ".repeat(40)).unwrap();
        assert_eq!(long.chars().count(), TITLE_CHARS);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn the_model_reads_the_question_and_the_final_answer_cut_short() {
        let mut calling = ChatMessage::assistant("let me look");
        calling.tool_calls = vec![
            serde_json::from_value(serde_json::json!({
                "id": "c1", "type": "function", "function": {"name": "web_search", "arguments": "{}"}
            }))
            .unwrap(),
        ];
        let messages = vec![
            ChatMessage::user("x".repeat(2000)),
            calling,
            ChatMessage::tool_result("c1", "web_search", "results"),
            ChatMessage::assistant("Here is the answer."),
        ];
        let got = exchange(&messages).unwrap();
        assert_eq!(got, format!("User: {}\n\nAssistant: Here is the answer.", "x".repeat(SNIPPET_CHARS)));
        assert_eq!(exchange(&messages[..3]), None, "no answer yet, no title");
    }
}
