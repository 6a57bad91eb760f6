//! Any bytes posted to `/v1/chat/completions` are refused or read without a panic (the JSON
//! extractor, then the request's own checks).
#![no_main]

use hermes_http::chat_request::{ChatCompletionRequest, ParsedChat};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Ok(request) = serde_json::from_slice::<ChatCompletionRequest>(body) {
        let _ = ParsedChat::try_from(request);
    }
});
