//! Small steps many tests take: reading an answer as JSON, picking events out of a stream,
//! ending a `hermesd` child process.

use std::process::Child;

use serde_json::Value;

/// Sends `req` and reads its answer as JSON, whatever its status (the caller asserts on it).
pub async fn json_of(req: reqwest::RequestBuilder) -> Value {
    req.send().await.unwrap().json().await.unwrap()
}

/// The data of the events called `name` among `events` (from [`super::sse_events`]), as JSON.
pub fn sse_data(events: &[(Option<String>, String)], name: &str) -> Vec<Value> {
    events.iter().filter(|(n, _)| n.as_deref() == Some(name)).map(|(_, d)| serde_json::from_str(d).unwrap()).collect()
}

/// Kills a `hermesd` child process and waits for it, so none outlives its test.
pub fn kill(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}
