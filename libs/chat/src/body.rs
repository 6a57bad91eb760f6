//! Sending requests to platforms and reading their answers with a byte cap: a platform API (or
//! whoever answers at its address) cannot make the gateway buffer more than this.

use std::time::Duration;

use serde_json::Value;

pub use hermes_net_policy::outbound::ReadError;

/// The largest JSON answer taken from a platform API (a page of 100 Telegram updates is far
/// below it).
pub const MAX_API_ANSWER: usize = 8 * 1024 * 1024;

/// Sends `request`, waiting at most `wait` for the answer. A failure never names the URL: a
/// Telegram URL holds the bot's token.
pub async fn send(request: reqwest::RequestBuilder, wait: Duration) -> Result<reqwest::Response, String> {
    request.timeout(wait).send().await.map_err(|e| e.without_url().to_string())
}

/// The JSON of `resp`, read up to [`MAX_API_ANSWER`] bytes.
pub async fn json(resp: reqwest::Response) -> Result<Value, String> {
    let bytes = hermes_net_policy::outbound::read_capped(resp, MAX_API_ANSWER).await.map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes).map_err(|e| format!("the answer is not JSON: {e}"))
}

/// The body of `resp`, at most `max` bytes.
pub async fn bytes(resp: reqwest::Response, max: u64) -> Result<Vec<u8>, ReadError> {
    hermes_net_policy::outbound::read_capped(resp, usize::try_from(max).unwrap_or(usize::MAX)).await
}
