use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use hermes_core::ChatMessage;

use super::*;
use crate::keys::Credential;
use crate::{ApiMode, ChatRequest, ChatResponse, NoDeltas, SendError, StaticKeys};

/// A scripted send: an answer, or (HTTP status, body, whether output had streamed).
type Scripted = Result<&'static str, (u16, &'static str, bool)>;

/// One scripted result per send, per endpoint model.
#[derive(Default)]
struct FakeTransport {
    script: Mutex<HashMap<String, VecDeque<Scripted>>>,
    sent: Mutex<Vec<(String, Option<String>)>>,
    /// The `Retry-After` every scripted error carries.
    retry_after: Option<Duration>,
}

impl FakeTransport {
    fn with(self, model: &str, results: Vec<Scripted>) -> Self {
        self.script.lock().unwrap().insert(model.to_owned(), results.into());
        self
    }
    fn sent(&self) -> Vec<(String, Option<String>)> {
        self.sent.lock().unwrap().clone()
    }
}

impl Transport for FakeTransport {
    async fn send(
        &self,
        endpoint: &Endpoint,
        key: Option<&str>,
        _: &ChatRequest,
        _: &mut dyn DeltaSink,
    ) -> Result<ChatResponse, SendError> {
        self.sent.lock().unwrap().push((endpoint.model.clone(), key.map(str::to_owned)));
        let next =
            self.script.lock().unwrap().get_mut(&endpoint.model).and_then(VecDeque::pop_front).unwrap_or(Ok("default"));
        match next {
            Ok(text) => Ok(ChatResponse {
                message: ChatMessage::assistant(text),
                finish_reason: Some("stop".into()),
                usage: hermes_core::Usage {
                    prompt_tokens: 100,
                    completion_tokens: text.len() as u64,
                    total_tokens: 100 + text.len() as u64,
                    cached_tokens: 60,
                    cache_write_tokens: 40,
                    reasoning_tokens: 0,
                    priority: false,
                },
            }),
            Err((status, body, emitted)) => {
                Err(SendError { error: LlmError::from_status(status, body, self.retry_after), emitted })
            }
        }
    }
}

/// An in-memory pool (fill_first) that records reports.
#[derive(Default)]
struct Pool {
    keys: Vec<Credential>,
    out: Mutex<HashMap<String, Option<Duration>>>,
}

impl Pool {
    fn of(ids: &[&str]) -> Self {
        let keys = ids
            .iter()
            .map(|id| Credential {
                id: (*id).into(),
                secret: format!("secret-{id}"),
                allowed_hosts: vec!["api.example.com".into()],
            })
            .collect();
        Self { keys, out: Mutex::default() }
    }
    fn reports(&self) -> HashMap<String, Option<Duration>> {
        self.out.lock().unwrap().clone()
    }
}

impl KeySource for Pool {
    async fn acquire(&self, _: &str, exclude: &[String]) -> Result<Option<Credential>, LlmError> {
        if self.keys.is_empty() {
            return Ok(None);
        }
        let out = self.out.lock().unwrap();
        self.keys
            .iter()
            .find(|k| !exclude.contains(&k.id) && !out.contains_key(&k.id))
            .cloned()
            .map(Some)
            .ok_or_else(|| LlmError::new(ErrorClass::RateLimit, "no usable key"))
    }
    async fn report(&self, _: &str, key_id: &str, cooldown: Option<Duration>) {
        self.out.lock().unwrap().insert(key_id.to_owned(), cooldown);
    }
}

fn ep(model: &str) -> Endpoint {
    Endpoint {
        provider: "p".into(),
        base_url: "https://api.example.com/v1".into(),
        model: model.into(),
        api_mode: ApiMode::ChatCompletions,
        routing: Default::default(),
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy { max_retries: 2, base: Duration::from_millis(1), max_delay: Duration::from_millis(5) }
}

fn req() -> ChatRequest {
    ChatRequest {
        model: "ignored".into(),
        messages: vec![ChatMessage::user("hi")],
        tools: std::sync::Arc::from([]),
        max_tokens: None,
        settings: Default::default(),
    }
}

async fn ask<T: Transport, K: KeySource>(m: &ResilientModel<T, K>) -> Result<String, LlmError> {
    m.complete(&req(), &mut NoDeltas).await.map(|r| r.message.text())
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_on_the_same_key() {
    let t = FakeTransport::default().with("a", vec![Err((500, "x", false)), Err((502, "x", false)), Ok("fine")]);
    let m = ResilientModel::new(t, Pool::of(&["k1"]), vec![ep("a")], fast());
    assert_eq!(ask(&m).await.unwrap(), "fine");
    assert_eq!(m.transport.sent().len(), 3);
}

#[tokio::test]
async fn a_rate_limited_key_is_cooled_for_an_hour_and_the_next_key_is_used() {
    let t = FakeTransport::default().with(
        "a",
        vec![Err((429, "slow", false)), Err((429, "slow", false)), Err((429, "slow", false)), Ok("k2 works")],
    );
    let m = ResilientModel::new(t, Pool::of(&["k1", "k2"]), vec![ep("a")], fast());
    assert_eq!(ask(&m).await.unwrap(), "k2 works");
    let keys: Vec<Option<String>> = m.transport.sent().into_iter().map(|(_, k)| k).collect();
    assert_eq!(
        keys,
        [Some("secret-k1".into()), Some("secret-k1".into()), Some("secret-k1".into()), Some("secret-k2".into())]
    );
    assert_eq!(m.keys.reports().get("k1"), Some(&Some(Duration::from_secs(3600))));
}

#[tokio::test]
async fn a_rate_limit_with_a_far_reset_rotates_at_once_and_cools_the_key_until_the_reset() {
    let reset = Duration::from_secs(20 * 60);
    let t = FakeTransport { retry_after: Some(reset), ..Default::default() }
        .with("a", vec![Err((429, "slow", false)), Ok("k2 works")]);
    let m = ResilientModel::new(t, Pool::of(&["k1", "k2"]), vec![ep("a")], fast());
    assert_eq!(ask(&m).await.unwrap(), "k2 works");
    assert_eq!(m.transport.sent().len(), 2, "no waiting on a key that resets in 20 minutes");
    assert_eq!(m.keys.reports().get("k1"), Some(&Some(reset)));
}

#[tokio::test]
async fn a_lone_key_is_not_cooled_the_chain_falls_back_instead() {
    let t = FakeTransport::default()
        .with("a", vec![Err((429, "slow", false)), Err((429, "slow", false)), Err((429, "slow", false))])
        .with("b", vec![Ok("from b")]);
    let m = ResilientModel::new(t, Pool::of(&["k1"]), vec![ep("a"), ep("b")], fast());
    assert_eq!(ask(&m).await.unwrap(), "from b");
    assert!(m.keys.reports().is_empty(), "the only key stays usable");
}

#[tokio::test]
async fn a_revoked_key_is_retired_for_good() {
    let t = FakeTransport::default()
        .with("a", vec![Err((401, r#"{"error":{"message":"Incorrect API key provided"}}"#, false)), Ok("k2")]);
    let m = ResilientModel::new(t, Pool::of(&["k1", "k2"]), vec![ep("a")], fast());
    assert_eq!(ask(&m).await.unwrap(), "k2");
    assert_eq!(m.keys.reports().get("k1"), Some(&None));
}

#[tokio::test]
async fn the_turn_falls_back_and_the_primary_is_tried_again_after_its_rest() {
    let t = FakeTransport::default()
        .with(
            "primary",
            vec![
                Err((503, "busy", false)),
                Err((503, "busy", false)),
                Err((503, "busy", false)),
                Ok("primary is back"),
            ],
        )
        .with("backup", vec![Ok("backup 1"), Ok("backup 2")]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("primary"), ep("backup")], fast())
        .with_primary_cooldown(Duration::from_millis(80));
    assert_eq!(ask(&m).await.unwrap(), "backup 1");
    assert_eq!(ask(&m).await.unwrap(), "backup 2", "the primary rests");
    let primary_calls = |m: &ResilientModel<FakeTransport, StaticKeys>| {
        m.transport.sent().iter().filter(|(e, _)| e == "primary").count()
    };
    assert_eq!(primary_calls(&m), 3);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ask(&m).await.unwrap(), "primary is back");
}

#[tokio::test]
async fn an_unknown_model_falls_back_at_once_and_a_content_refusal_is_final() {
    let t = FakeTransport::default()
        .with("a", vec![Err((404, "The model `a` does not exist", false))])
        .with("b", vec![Ok("b")]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("a"), ep("b")], fast());
    assert_eq!(ask(&m).await.unwrap(), "b");
    assert_eq!(m.transport.sent().len(), 2, "no retry of a missing model");

    let t = FakeTransport::default()
        .with("a", vec![Err((400, r#"{"error":{"code":"content_filter","message":"filtered"}}"#, false))]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("a"), ep("b")], fast());
    assert_eq!(ask(&m).await.unwrap_err().class, ErrorClass::ContentFilter);
    assert_eq!(m.transport.sent().len(), 1);

    let t = FakeTransport::default().with("a", vec![Err((400, "maximum context length exceeded", false))]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("a"), ep("b")], fast());
    assert_eq!(ask(&m).await.unwrap_err().class, ErrorClass::ContextOverflow, "for the caller to compress");
}

#[tokio::test]
async fn a_key_is_never_sent_to_a_host_it_was_not_issued_for() {
    let key = Credential { id: "k".into(), secret: "sk-openai".into(), allowed_hosts: vec!["api.openai.com".into()] };
    let misconfigured = Endpoint {
        provider: "openai".into(),
        base_url: "https://evil.example/v1".into(),
        model: "gpt".into(),
        api_mode: ApiMode::ChatCompletions,
        routing: Default::default(),
    };
    let t = FakeTransport::default();
    let m = ResilientModel::new(t, StaticKeys(Some(key)), vec![misconfigured], fast());
    let err = ask(&m).await.unwrap_err();
    assert_eq!(err.class, ErrorClass::KeyNotAllowed);
    assert!(m.transport.sent().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn nothing_is_retried_once_output_has_streamed_and_duplicate_chain_entries_are_dropped() {
    let t = FakeTransport::default().with("a", vec![Err((500, "broke mid-stream", true)), Ok("never")]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("a"), ep("a"), ep("b")], fast());
    assert_eq!(m.chain.len(), 2);
    assert_eq!(ask(&m).await.unwrap_err().class, ErrorClass::Server);
    assert_eq!(m.transport.sent().len(), 1);
}

#[tokio::test]
async fn empty_answers_are_retried_then_the_next_model_answers() {
    let t = FakeTransport::default().with("a", vec![Ok(""), Ok(""), Ok("")]).with("b", vec![Ok("b answers")]);
    let m = ResilientModel::new(t, StaticKeys(None), vec![ep("a"), ep("b")], fast());
    assert_eq!(ask(&m).await.unwrap(), "b answers");
    let to_a = m.transport.sent().iter().filter(|(e, _)| e == "a").count();
    assert_eq!(to_a, 3, "one try and two retries (max_retries = 2) before the fallback");
}

#[tokio::test]
async fn every_answered_call_is_metered_under_the_model_and_key_that_served_it() {
    let t = FakeTransport::default().with("a", vec![Ok(""), Err((404, "The model `a` does not exist", false))]);
    let meter = Arc::new(crate::CallBuffer::default());
    let m = ResilientModel::new(t, Pool::of(&["k1"]), vec![ep("a"), ep("b")], fast())
        .with_meter(meter.clone(), hermes_core::CallPurpose::Main);
    assert_eq!(ask(&m).await.unwrap(), "default");
    let calls = meter.drain();
    let served: Vec<(&str, Option<&str>)> = calls.iter().map(|c| (c.model.as_str(), c.key_id.as_deref())).collect();
    // The empty answer was paid for; the failed call was not answered; the fallback answered.
    assert_eq!(served, vec![("a", Some("k1")), ("b", Some("k1"))]);
    assert!(calls.iter().all(|c| c.purpose == hermes_core::CallPurpose::Main
        && c.usage.cached_tokens == 60
        && c.usage.cache_write_tokens == 40));
    assert_eq!(calls[1].usage.completion_tokens, "default".len() as u64);
    assert!(meter.drain().is_empty(), "drained once");
}
