//! Is a webhook POST signed with the hook's secret? The schemes senders use, first header
//! present wins (a request naming none is refused):
//! - GitHub, Gitea, Forgejo: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>`;
//! - Standard Webhooks / Svix: `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>`
//!   (or the `svix-` names) over `id.timestamp.body` with the key a `whsec_` secret encodes, the
//!   timestamp within five minutes (the signed id then dedupes retries);
//! - GitLab: `X-Gitlab-Token: <the secret itself>`;
//! - anything else: `X-Webhook-Signature: <hex HMAC-SHA256 of the body>`.

use axum::http::HeaderMap;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How far a signed timestamp may be from now.
const TOLERANCE_SECONDS: u64 = 300;

/// How a request proved it holds the secret.
#[derive(Debug, PartialEq, Eq)]
pub enum Signed {
    /// Standard Webhooks / Svix: the signed message id (what dedupes its retries).
    Standard { id: String },
    /// A scheme that signs the body only (GitHub, GitLab, generic).
    Body,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No header of a known scheme.
    Unsigned,
    /// A known scheme, and the signature does not match.
    BadSignature,
    /// A signed timestamp too old or too new (a replay, or a skewed clock).
    Stale,
}

fn mac(secret: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length; this cannot fail.
    <Hmac<Sha256> as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim)
}

fn hex_decode(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

/// Equal byte strings, compared without an early exit.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn hex_hmac_matches(secret: &[u8], body: &[u8], claimed_hex: &str) -> bool {
    let Some(claimed) = hex_decode(claimed_hex) else { return false };
    let mut m = mac(secret);
    m.update(body);
    m.verify_slice(&claimed).is_ok()
}

/// The HMAC key Standard Webhooks libraries derive from a `whsec_<base64>` secret (the
/// secret's own bytes when it is not base64).
pub fn standard_key(secret: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(secret).unwrap_or_default();
    let encoded = text.strip_prefix("whsec_").unwrap_or(text);
    base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_else(|_| secret.to_vec())
}

/// Checks the request against `secret`, as of `now` (Unix seconds).
pub fn verify(headers: &HeaderMap, body: &[u8], secret: &[u8], now: i64) -> Result<Signed, Refused> {
    let body_only = |ok: bool| if ok { Ok(Signed::Body) } else { Err(Refused::BadSignature) };
    if let Some(sig) = header(headers, "x-hub-signature-256") {
        let hex = sig.strip_prefix("sha256=").ok_or(Refused::BadSignature)?;
        return body_only(hex_hmac_matches(secret, body, hex));
    }
    for prefix in ["webhook", "svix"] {
        if let Some(signatures) = header(headers, &format!("{prefix}-signature")) {
            let id = header(headers, &format!("{prefix}-id")).ok_or(Refused::BadSignature)?;
            let ts = header(headers, &format!("{prefix}-timestamp")).ok_or(Refused::BadSignature)?;
            let at: i64 = ts.parse().map_err(|_| Refused::BadSignature)?;
            if now.abs_diff(at) > TOLERANCE_SECONDS {
                return Err(Refused::Stale);
            }
            let mut m = mac(&standard_key(secret));
            m.update(format!("{id}.{ts}.").as_bytes());
            m.update(body);
            let expected = m.finalize().into_bytes();
            // Several space-separated `v1,<base64>` entries may be sent (key rotation).
            let matched = signatures.split_whitespace().filter_map(|s| s.strip_prefix("v1,")).any(|b64| {
                base64::engine::general_purpose::STANDARD.decode(b64).is_ok_and(|claimed| same(&claimed, &expected))
            });
            return if matched { Ok(Signed::Standard { id: id.to_owned() }) } else { Err(Refused::BadSignature) };
        }
    }
    if let Some(token) = header(headers, "x-gitlab-token") {
        return body_only(same(token.as_bytes(), secret));
    }
    if let Some(hex) = header(headers, "x-webhook-signature") {
        return body_only(hex_hmac_matches(secret, body, hex));
    }
    Err(Refused::Unsigned)
}

/// `sha256=<hex>` of `body` under `secret`, as GitHub signs (for senders in tests and tools).
pub fn github_signature(secret: &[u8], body: &[u8]) -> String {
    let mut m = mac(secret);
    m.update(body);
    let digest = m.finalize().into_bytes();
    format!("sha256={}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// `v1,<base64>` of `id.timestamp.body` under `secret`, as Standard Webhooks sign.
pub fn standard_signature(secret: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mut m = mac(secret);
    m.update(format!("{id}.{timestamp}.").as_bytes());
    m.update(body);
    format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(m.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const SECRET: &[u8] = b"It's a Secret to Everybody";
    const NOW: i64 = 1_764_000_000;

    fn with(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn githubs_documented_example_verifies() {
        // The example from GitHub's "Validating webhook deliveries" page.
        let sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert_eq!(github_signature(SECRET, b"Hello, World!"), sig);
        let h = with(&[("x-hub-signature-256", sig.into())]);
        assert_eq!(verify(&h, b"Hello, World!", SECRET, NOW), Ok(Signed::Body));
        assert_eq!(verify(&h, b"Hello, World?", SECRET, NOW), Err(Refused::BadSignature));
        assert_eq!(verify(&h, b"Hello, World!", b"other", NOW), Err(Refused::BadSignature));
        let bare = with(&[("x-hub-signature-256", sig.trim_start_matches("sha256=").into())]);
        assert_eq!(verify(&bare, b"Hello, World!", SECRET, NOW), Err(Refused::BadSignature));
    }

    #[test]
    fn standard_webhooks_check_the_signature_over_id_time_and_body_and_the_clock() {
        // The example secret format of the Standard Webhooks spec: signed with the decoded key.
        let secret = b"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let good = standard_signature(&standard_key(secret), "msg_1", NOW, b"{}");
        let h = |sig: String, ts: i64| {
            with(&[("webhook-id", "msg_1".into()), ("webhook-timestamp", ts.to_string()), ("webhook-signature", sig)])
        };
        let signed = Ok(Signed::Standard { id: "msg_1".into() });
        assert_eq!(verify(&h(good.clone(), NOW), b"{}", secret, NOW + 10), signed);
        assert_eq!(verify(&h(format!("v1,bm9wZQ== {good}"), NOW), b"{}", secret, NOW), signed, "any of several");
        assert_eq!(verify(&h(good.clone(), NOW), b"{ }", secret, NOW), Err(Refused::BadSignature));
        assert_eq!(verify(&h(good.clone(), NOW), b"{}", secret, NOW + 301), Err(Refused::Stale));
        assert_eq!(verify(&h(good.clone(), i64::MIN), b"{}", secret, NOW), Err(Refused::Stale), "no overflow");
    }

    #[test]
    fn gitlab_tokens_and_generic_signatures_and_unsigned_requests() {
        let token = with(&[("x-gitlab-token", String::from_utf8(SECRET.to_vec()).unwrap())]);
        assert_eq!(verify(&token, b"x", SECRET, NOW), Ok(Signed::Body));
        assert_eq!(verify(&token, b"x", b"It's a Secret to Everybody!", NOW), Err(Refused::BadSignature));
        let hex = github_signature(SECRET, b"x").trim_start_matches("sha256=").to_owned();
        assert_eq!(verify(&with(&[("x-webhook-signature", hex)]), b"x", SECRET, NOW), Ok(Signed::Body));
        assert_eq!(
            verify(&with(&[("x-webhook-signature", "zz".into())]), b"x", SECRET, NOW),
            Err(Refused::BadSignature)
        );
        assert_eq!(verify(&HeaderMap::new(), b"x", SECRET, NOW), Err(Refused::Unsigned));
    }
}
