//! `POST /v1/interactions/{id}`: the user's answer to a turn that waits for them (a
//! dangerous-command approval or a clarifying question). The turn resumes, and the response
//! is its continuation, as `chat/completions` would answer (`"stream": true` streams it),
//! which may itself wait for another answer.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use hermes_http::ApiError;
use hermes_queue::SessionWork;
use hermes_store::StoreError;

use crate::AppState;
use crate::auth::Caller;
use crate::chat::{SESSION_HEADER, completion, signal_work};

/// Longest free-text answer to a question.
const MAX_ANSWER_CHARS: usize = 4_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerRequest {
    /// Approval: once, session, always or deny (approve/allow/yes mean once, no/reject deny).
    pub choice: Option<String>,
    /// Question: the user's answer.
    pub answer: Option<String>,
    #[serde(default)]
    pub stream: bool,
}

/// The stored answer for an interaction of `kind`, or why the request is wrong.
pub(crate) fn answer_for(kind: &str, request: &AnswerRequest) -> Result<Value, ApiError> {
    let invalid =
        |param: &'static str, msg: &'static str| ApiError::invalid_request("invalid_value", msg).with_param(param);
    match kind {
        "approval" => {
            let choice = request.choice.as_deref().map(str::trim).map(str::to_ascii_lowercase);
            let choice = match choice.as_deref() {
                Some("once" | "approve" | "approved" | "allow" | "yes") => "once",
                Some("session") => "session",
                Some("always") => "always",
                Some("deny" | "denied" | "no" | "reject") => "deny",
                _ => return Err(invalid("choice", "choice must be once, session, always or deny")),
            };
            Ok(json!({ "choice": choice }))
        }
        _ => {
            let text = request.answer.as_deref().or(request.choice.as_deref()).map(str::trim).unwrap_or_default();
            if text.is_empty() {
                return Err(invalid("answer", "answer must be a non-empty string"));
            }
            if text.chars().count() > MAX_ANSWER_CHARS {
                return Err(invalid("answer", "answer is longer than 4000 characters"));
            }
            Ok(json!({ "text": text }))
        }
    }
}

#[utoipa::path(post, path = "/v1/interactions/{id}", tag = "hermes", params(("id" = String, Path, description = "The object's id")),
    responses((status = 200, description = "The resumed turn's answer, as chat/completions answers", body = crate::openapi::ChatCompletion), (status = 400, description = "Invalid request", body = crate::openapi::ErrorBody), (status = 401, description = "Missing or invalid API key", body = crate::openapi::ErrorBody), (status = 404, description = "Not found (or another tenant's)", body = crate::openapi::ErrorBody),
              (status = 409, description = "Already answered or expired", body = crate::openapi::ErrorBody)))]
pub(crate) async fn answer_interaction(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
    body: Result<Json<AnswerRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let not_found = || ApiError::not_found("interaction_not_found", "no pending question with this id");
    let id = uuid::Uuid::parse_str(&id).map_err(|_| not_found())?;
    let Json(request) = body.map_err(|e| {
        ApiError::invalid_request("invalid_json", format!("request body is not valid JSON: {}", e.body_text()))
    })?;
    let pending = match state.store.pending_interaction(auth.tenant_id, id).await {
        // A key limited to another agent sees nothing of this one.
        Ok((_, agent)) if auth.agent_id.is_some_and(|only| only != agent) => return Err(not_found()),
        Ok((p, _)) => p,
        Err(StoreError::NotFound) => return Err(not_found()),
        Err(e) => return Err(ApiError::internal(e)),
    };
    let answer = answer_for(&pending.kind, &request)?;
    let hub = state.events.id().to_owned();
    let answered = match state.store.answer_interaction(auth.tenant_id, id, &answer, Some(&hub)).await {
        Ok(a) => a,
        Err(StoreError::NotFound) => return Err(not_found()),
        Err(StoreError::Conflict(_)) => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "invalid_request_error",
                Some("interaction_closed"),
                "this question was already answered, expired, or its turn was stopped",
            ));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    let sub = state.events.subscribe(answered.turn_id);
    signal_work(&state, SessionWork { tenant_id: auth.tenant_id, session_id: answered.session_id }).await;
    let model = state.store.agent(auth.tenant_id, answered.agent_id).await.map(|a| a.name).unwrap_or_default();
    let completion = completion(&state, auth.tenant_id, answered.turn_id, sub, model);
    let mut resp = if request.stream { completion.stream(false).into_response() } else { completion.collect().await? };
    if let Ok(v) = HeaderValue::from_str(&answered.session_id.to_string()) {
        resp.headers_mut().entry(SESSION_HEADER).or_insert(v);
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(choice: Option<&str>, answer: Option<&str>) -> AnswerRequest {
        AnswerRequest { choice: choice.map(str::to_owned), answer: answer.map(str::to_owned), stream: false }
    }

    #[test]
    fn approvals_take_a_choice_and_questions_take_text() {
        assert_eq!(answer_for("approval", &req(Some("Approve"), None)).unwrap(), json!({"choice": "once"}));
        assert_eq!(answer_for("approval", &req(Some("always"), None)).unwrap(), json!({"choice": "always"}));
        assert_eq!(answer_for("approval", &req(Some("no"), None)).unwrap(), json!({"choice": "deny"}));
        assert!(answer_for("approval", &req(Some("maybe"), None)).is_err());
        assert!(answer_for("approval", &req(None, Some("yes please"))).is_err());
        assert_eq!(answer_for("clarify", &req(None, Some(" blue "))).unwrap(), json!({"text": "blue"}));
        assert_eq!(answer_for("clarify", &req(Some("red"), None)).unwrap(), json!({"text": "red"}));
        assert!(answer_for("clarify", &req(None, Some("  "))).is_err());
    }
}
