//! From a webhook POST to what the agent reads: the payload (JSON, or a form whose `payload`
//! field may hold JSON, as GitHub sends with `application/x-www-form-urlencoded`), its event
//! type and delivery id from the headers senders use, and the hook's prompt with `{dotted.path}`
//! placeholders filled from the payload.

use axum::http::HeaderMap;
use serde_json::{Map, Value};

/// Longest text a placeholder that names an object or a list expands to.
const OBJECT_CHARS: usize = 2_000;
/// Longest text of the whole payload (`{__raw__}`, or a hook without a prompt), and of any one
/// placeholder's value.
const RAW_CHARS: usize = 4_000;
/// Longest prompt a delivery renders to, whatever the template and the payload (a template may
/// name one huge field many times): the rest is cut.
pub const MAX_RENDERED_BYTES: usize = 64 * 1024;

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The payload, or `None` when the body is neither JSON nor a form.
pub fn payload(headers: &HeaderMap, body: &[u8]) -> Option<Value> {
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        return Some(json);
    }
    let form = header(headers, "content-type").is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    if !form {
        return None;
    }
    let fields: Map<String, Value> =
        form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), Value::String(v.into_owned()))).collect();
    match fields.get("payload").and_then(Value::as_str).and_then(|p| serde_json::from_str::<Value>(p).ok()) {
        Some(json) => Some(json),
        None => Some(Value::Object(fields)),
    }
}

/// The event's type: the sender's header, else the payload's `event_type` or `type`.
pub fn event_type(headers: &HeaderMap, payload: &Value) -> String {
    header(headers, "x-github-event")
        .or_else(|| header(headers, "x-gitea-event"))
        .or_else(|| header(headers, "x-gitlab-event"))
        .or_else(|| payload["event_type"].as_str().map(str::to_owned))
        .or_else(|| payload["type"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The sender's id of this delivery (the same on its retries), if it gives one.
pub fn delivery_id(headers: &HeaderMap) -> Option<String> {
    ["x-github-delivery", "x-gitea-delivery", "webhook-id", "svix-id", "x-gitlab-event-uuid", "x-request-id"]
        .iter()
        .find_map(|name| header(headers, name))
}

fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

fn lookup<'a>(payload: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(payload, |v, key| match v {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// The hook's prompt with `{a.b.c}` filled from the payload (`{event_type}`, `{__raw__}` the
/// whole payload); a path the payload lacks stays as written. No prompt: the event and payload.
/// Each value is cut to [`RAW_CHARS`] and the whole to [`MAX_RENDERED_BYTES`], so the work and
/// memory of one delivery are bounded by the cap, not by the template times the payload.
pub fn prompt(template: &str, payload: &Value, event: &str) -> String {
    let mut out = fill(template, payload, event);
    if out.len() > MAX_RENDERED_BYTES {
        let mut at = MAX_RENDERED_BYTES;
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        out.truncate(at);
        out.push('…');
    }
    out
}

fn fill(template: &str, payload: &Value, event: &str) -> String {
    let raw = || cut(serde_json::to_string_pretty(payload).unwrap_or_default(), RAW_CHARS);
    if template.trim().is_empty() {
        return format!("Event `{event}`:\n```json\n{}\n```", raw());
    }
    let mut out = String::with_capacity(template.len().min(MAX_RENDERED_BYTES));
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if out.len() > MAX_RENDERED_BYTES {
            return out;
        }
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}');
        let name = close.map(|c| &after[..c]);
        let valid =
            name.is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'));
        match (name, close) {
            (Some(name), Some(close)) if valid => {
                let value = match name {
                    "__raw__" => Some(raw()),
                    "event_type" => Some(event.to_owned()),
                    path => lookup(payload, path).map(|v| match v {
                        Value::String(s) => cut(s.clone(), RAW_CHARS),
                        Value::Object(_) | Value::Array(_) => {
                            cut(serde_json::to_string_pretty(v).unwrap_or_default(), OBJECT_CHARS)
                        }
                        other => other.to_string(),
                    }),
                };
                match value {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    #[test]
    fn placeholders_fill_from_the_payload_and_unknown_ones_stay() {
        let pr = json!({"action": "opened", "number": 7, "pull_request": {"title": "Fix it", "labels": [{"name": "bug"}]},
                        "draft": false});
        let text = prompt(
            "PR #{number} {action}: {pull_request.title} [{pull_request.labels.0.name}] {missing.path} {event_type} {draft} {not a path}",
            &pr,
            "pull_request",
        );
        assert_eq!(text, "PR #7 opened: Fix it [bug] {missing.path} pull_request false {not a path}");
        let obj = prompt("{pull_request}", &pr, "x");
        assert!(obj.contains("\"title\": \"Fix it\""), "{obj}");
        let empty = prompt("", &pr, "pull_request");
        assert!(empty.starts_with("Event `pull_request`:\n```json\n{"), "{empty}");
        let long = json!({"body": "é".repeat(5_000)});
        assert!(prompt("{__raw__}", &long, "x").chars().count() <= RAW_CHARS + 1);
        assert_eq!(prompt("{unclosed", &pr, "x"), "{unclosed");
    }

    #[test]
    fn one_huge_field_named_many_times_renders_to_the_cap() {
        let huge = json!({"a": "x".repeat(900_000)});
        let template = "{a}".repeat(2_000);
        let text = prompt(&template, &huge, "x");
        assert!(text.len() <= MAX_RENDERED_BYTES + '…'.len_utf8(), "{}", text.len());
        assert!(text.len() > MAX_RENDERED_BYTES / 2, "the cap, not less: {}", text.len());
        assert!(prompt("{a}", &huge, "x").chars().count() <= RAW_CHARS + 1, "one value is cut too");
        // A cut never splits a character.
        let wide = json!({"a": "é".repeat(3_000)});
        assert!(prompt(&"{a}".repeat(100), &wide, "x").ends_with('…'));
    }

    #[test]
    fn form_bodies_and_event_headers() {
        let mut h = HeaderMap::new();
        h.insert("content-type", HeaderValue::from_static("application/x-www-form-urlencoded"));
        let body = b"payload=%7B%22zen%22%3A%22Keep%20it%20logically%20awesome.%22%7D";
        let p = payload(&h, body).unwrap();
        assert_eq!(p["zen"], "Keep it logically awesome.");
        assert_eq!(payload(&h, b"a=1&b=two").unwrap(), json!({"a": "1", "b": "two"}));
        assert_eq!(payload(&HeaderMap::new(), b"not json"), None);
        assert_eq!(event_type(&h, &json!({"type": "invoice.paid"})), "invoice.paid");
        h.insert("x-github-event", HeaderValue::from_static("push"));
        h.insert("x-github-delivery", HeaderValue::from_static("72d3162e"));
        assert_eq!((event_type(&h, &json!({})), delivery_id(&h)), ("push".to_owned(), Some("72d3162e".to_owned())));
    }
}
