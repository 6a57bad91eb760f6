//! Small steps many tests take: reading an answer as JSON, picking events out of a stream,
//! ending a `hermesd` child process, a port for a server.

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

/// A free TCP port on loopback that a server can bind after this returns: below Linux's ephemeral range
/// (32768 and up), which the suite's many outgoing connections draw their local ports from, so
/// none of them takes it between this check and the server's bind (that failed a RabbitMQ
/// node's start once under the full suite).
pub fn free_port() -> u16 {
    let seed = uuid::Uuid::now_v7().as_u128();
    (0..2_000u32)
        .map(|i| 20_000 + ((seed as u32).wrapping_add(i.wrapping_mul(7_919)) % 12_000) as u16)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port below the ephemeral range")
}
