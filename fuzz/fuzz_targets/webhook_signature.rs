//! Any headers, body, secret and clock: `verify` answers without panicking, and a body signed
//! with the secret (GitHub's scheme, Standard Webhooks') always verifies.
#![no_main]

use arbitrary::Arbitrary;
use hermes_http::signed::{github_signature, standard_key, standard_signature, verify};
use libfuzzer_sys::fuzz_target;

const NAMES: [&str; 10] = [
    "x-hub-signature-256",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "svix-id",
    "svix-timestamp",
    "svix-signature",
    "x-gitlab-token",
    "x-webhook-signature",
    "x-github-delivery",
];

#[derive(Arbitrary, Debug)]
struct Delivery {
    headers: Vec<(u8, String)>,
    body: Vec<u8>,
    secret: Vec<u8>,
    now: i64,
    id: String,
}

fuzz_target!(|d: Delivery| {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &d.headers {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.append(NAMES[usize::from(*name) % NAMES.len()], value);
        }
    }
    let _ = verify(&headers, &d.body, &d.secret, d.now);

    let mut github = http::HeaderMap::new();
    if let Ok(value) = http::HeaderValue::from_str(&github_signature(&d.secret, &d.body)) {
        github.insert("x-hub-signature-256", value);
        assert!(verify(&github, &d.body, &d.secret, d.now).is_ok(), "a GitHub-signed body verifies");
    }
    // Signed now, received now (a clock between 1970 and 2100).
    let now = d.now.rem_euclid(4_102_444_800);
    let key = standard_key(&d.secret);
    let signature = standard_signature(&key, &d.id, now, &d.body);
    let mut standard = http::HeaderMap::new();
    let values = (
        http::HeaderValue::from_str(&d.id),
        http::HeaderValue::from_str(&now.to_string()),
        http::HeaderValue::from_str(&signature),
    );
    if let (Ok(id), Ok(at), Ok(signature)) = values
        // Header values we read are visible ASCII, as Standard Webhooks ids are.
        && !d.id.is_empty()
        && d.id.bytes().all(|b| b.is_ascii_graphic())
    {
        standard.insert("webhook-id", id);
        standard.insert("webhook-timestamp", at);
        standard.insert("webhook-signature", signature);
        assert!(verify(&standard, &d.body, &d.secret, now).is_ok(), "a Standard-Webhooks-signed body verifies");
    }
});
