//! A request to a secret's host, as it leaves the proxy: each placeholder replaced by its value
//! where its binding allows (headers, HTTP Basic credentials inside `Authorization`, and the
//! query string or one body field when named), never in cookies or forwarding headers.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::header::{ACCEPT_ENCODING, HeaderName, HeaderValue};
use http::request::Parts;

use crate::Secret;

/// A request the proxy will not send: the reason goes back to the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Headers a placeholder is never replaced in: a cookie jar or a forwarding header may carry
/// anything to anyone the host passes it on to.
fn never_substituted(name: &HeaderName) -> bool {
    let name = name.as_str();
    matches!(name, "cookie" | "forwarded" | "via" | "x-real-ip" | "proxy-authorization" | "proxy-connection")
        || name.starts_with("x-forwarded-")
}

/// Replaces every placeholder of `secrets` in `text`; whether any was.
fn substitute(text: &str, secrets: &[Secret]) -> Option<String> {
    let mut out = None::<String>;
    for secret in secrets {
        let current = out.as_deref().unwrap_or(text);
        if current.contains(&secret.placeholder) {
            out = Some(current.replace(&secret.placeholder, &secret.value));
        }
    }
    out
}

/// The value of an `Authorization: Basic` header with placeholders replaced inside the
/// decoded `user:password`.
fn basic_credentials(value: &str, secrets: &[Secret]) -> Option<String> {
    let decoded = basic_decoded(value)?;
    let replaced = substitute(&decoded, secrets)?;
    Some(format!("Basic {}", STANDARD.encode(replaced)))
}

/// Refuses a request that carries a secret's required header with any other credential in it.
fn check_required(parts: &Parts, secrets: &[Secret]) -> Result<(), Refused> {
    for secret in secrets {
        let Some(header) = &secret.placement.required_header else { continue };
        for value in parts.headers.get_all(header.as_str()) {
            let text = value.to_str().unwrap_or_default();
            let inside = basic_decoded(text).unwrap_or_default();
            if !text.contains(&secret.placeholder) && !inside.contains(&secret.placeholder) {
                return Err(Refused(format!(
                    "{header} must carry ${} here: requests to these hosts may use only that credential",
                    secret.name
                )));
            }
        }
    }
    Ok(())
}

/// The `user:password` of an `Authorization: Basic` value.
fn basic_decoded(text: &str) -> Option<String> {
    let encoded = text.strip_prefix("Basic ").or_else(|| text.strip_prefix("basic "))?;
    String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()
}

/// Rewrites the head of a request to a host `secrets` may go to.
pub fn rewrite_head(parts: &mut Parts, secrets: &[Secret]) -> Result<(), Refused> {
    check_required(parts, secrets)?;
    let names: Vec<HeaderName> = parts.headers.keys().cloned().collect();
    for name in names {
        if never_substituted(&name) {
            continue;
        }
        let values: Vec<HeaderValue> = parts.headers.get_all(&name).iter().cloned().collect();
        let mut changed = false;
        let mut rewritten = Vec::with_capacity(values.len());
        for value in values {
            let Ok(text) = value.to_str() else {
                rewritten.push(value);
                continue;
            };
            let basic = (name == http::header::AUTHORIZATION).then(|| basic_credentials(text, secrets)).flatten();
            match basic.or_else(|| substitute(text, secrets)) {
                Some(new) => {
                    let value = HeaderValue::from_str(&new)
                        .map_err(|_| Refused(format!("a secret's value cannot go in the {name} header")))?;
                    rewritten.push(value);
                    changed = true;
                }
                None => rewritten.push(value),
            }
        }
        if changed {
            parts.headers.remove(&name);
            for value in rewritten {
                parts.headers.append(name.clone(), value);
            }
        }
    }
    rewrite_query(parts, secrets)?;
    // The answer is scanned for the values: it must come uncompressed.
    parts.headers.insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
    Ok(())
}

/// Percent-encodes `value` for a query string.
fn query_encoded(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn rewrite_query(parts: &mut Parts, secrets: &[Secret]) -> Result<(), Refused> {
    let allowed: Vec<Secret> = secrets
        .iter()
        .filter(|s| s.placement.query)
        .map(|s| Secret { value: query_encoded(&s.value), ..s.clone() })
        .collect();
    let Some(query) = parts.uri.query() else { return Ok(()) };
    let Some(replaced) = substitute(query, &allowed) else { return Ok(()) };
    let path_and_query = format!("{}?{replaced}", parts.uri.path());
    let mut uri = parts.uri.clone().into_parts();
    uri.path_and_query =
        Some(path_and_query.parse().map_err(|_| Refused("the query string cannot carry that secret".into()))?);
    parts.uri = http::Uri::from_parts(uri).map_err(|_| Refused("the request's address is not valid".into()))?;
    Ok(())
}

/// The secrets whose binding names a body field: a request body is read only for them.
pub fn body_fields(secrets: &[Secret]) -> Vec<(&str, &Secret)> {
    secrets.iter().filter_map(|s| s.placement.body_field.as_deref().map(|f| (f, s))).collect()
}

/// A JSON or form body with each named field's placeholder replaced; other fields, and any
/// other kind of body, are left as they are.
pub fn rewrite_body(content_type: Option<&str>, body: &[u8], secrets: &[Secret]) -> Option<Vec<u8>> {
    let fields = body_fields(secrets);
    if fields.is_empty() {
        return None;
    }
    let kind = content_type.unwrap_or_default().split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    match kind.as_str() {
        "application/json" => {
            let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
            let object = value.as_object_mut()?;
            let mut changed = false;
            for (field, secret) in fields {
                if let Some(serde_json::Value::String(text)) = object.get_mut(field)
                    && text.contains(&secret.placeholder)
                {
                    *text = text.replace(&secret.placeholder, &secret.value);
                    changed = true;
                }
            }
            changed.then(|| serde_json::to_vec(&value).unwrap_or_default())
        }
        "application/x-www-form-urlencoded" => {
            let mut changed = false;
            let pairs: Vec<(String, String)> = form_urlencoded::parse(body)
                .map(|(k, v)| {
                    let secret = fields.iter().find(|(f, s)| *f == k && v.contains(&s.placeholder));
                    match secret {
                        Some((_, s)) => {
                            changed = true;
                            (k.into_owned(), v.replace(&s.placeholder, &s.value))
                        }
                        None => (k.into_owned(), v.into_owned()),
                    }
                })
                .collect();
            changed.then(|| form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish().into_bytes())
        }
        _ => None,
    }
}

#[cfg(test)]
#[path = "rewrite_tests.rs"]
mod tests;
