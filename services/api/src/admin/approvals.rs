//! Questions parked turns wait on: a dangerous command to approve, or a clarifying question.
//! Answering one here resumes its turn, as an answer in the chat or through the API would.

use axum::Json;
use axum::extract::Path;
use serde::Deserialize;

use hermes_core::access::AdminOp;
use hermes_core::{ApprovalChoice, ErrorCode, InteractionAnswer};
use hermes_http::ApiError;
use hermes_store::StoreError;
use hermes_store::admin::Change;
use hermes_wire::List;
use hermes_wire::admin::Answered;

use crate::admin::errors::{Result, path_id, store_error, store_error_for};
use crate::admin::tenant_call::{Body, TenantCall};
use crate::documented::{ObjectPath, TenantNotFound, TenantPath};

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/approvals", tag = "admin: sessions", params(TenantPath),
    responses((status = 200, description = "Questions waiting for an answer, oldest first", body = List<hermes_wire::admin::WaitingQuestion>),
        TenantNotFound))]
pub(crate) async fn waiting(call: TenantCall) -> Result<Json<List<hermes_wire::admin::WaitingQuestion>>> {
    call.list(AdminOp::ViewApprovals, async |store, t| store.admin().waiting_interactions(t).await).await
}

/// The answer: a `choice` for an approval (`once`, `session`, `always`, `deny`), `text` for a
/// question.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Answer {
    #[schema(value_type = Option<String>)]
    choice: Option<ApprovalChoice>,
    text: Option<String>,
}

#[utoipa::path(post, path = "/admin/v1/tenants/{tenant}/approvals/{id}", tag = "admin: sessions", request_body = Answer,
    params(TenantPath, ("id" = String, Path, description = "Interaction id")),
    responses((status = 200, description = "Answered: the turn runs again", body = Answered),
        (status = 400, description = "Neither a choice nor a text", body = hermes_wire::ErrorBody),
        (status = 403, description = "The caller's role may not answer", body = hermes_wire::ErrorBody),
        (status = 404, description = "No such question", body = hermes_wire::ErrorBody),
        (status = 409, description = "Already answered, expired, or its turn stopped", body = hermes_wire::ErrorBody)))]
pub(crate) async fn answer(
    call: TenantCall,
    Path(ObjectPath { id }): Path<ObjectPath>,
    body: Body<Answer>,
) -> Result<Json<Answered>> {
    let t = call.allow(AdminOp::AnswerApprovals).await?;
    let id: hermes_core::InteractionId = path_id(&id, ErrorCode::InteractionNotFound, "question")?;
    let hermes_http::ApiJson(body) = body?;
    let answer = match (body.choice, body.text) {
        (Some(choice), _) => InteractionAnswer::Approval { choice },
        (None, Some(text)) if !text.trim().is_empty() => InteractionAnswer::Text { text },
        _ => return Err(ApiError::invalid_request(ErrorCode::InvalidValue, "answer with a `choice` or a `text`")),
    };
    let mut tx = call.begin(t.id).await?;
    let answered = tx.answer_interaction(id, &answer, None).await.map_err(|e| match e {
        StoreError::Conflict(what) => ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "invalid_request_error",
            Some(ErrorCode::InteractionClosed),
            format!("{what}: nothing to answer any more"),
        ),
        other => store_error_for(other, ErrorCode::InteractionNotFound, "question"),
    })?;
    tx.commit(Change::new("approval.answered", "interaction", id).after(&answer)).await.map_err(store_error)?;
    if let Some(broker) = &call.state.broker {
        let work = hermes_queue::SessionWork { tenant_id: t.id, session_id: answered.session_id };
        if let Err(e) = broker.publish_work(&work).await {
            tracing::warn!(error = %e, "cannot publish work; the reaper will pick the turn up");
        }
    }
    Ok(Json(Answered { answered: true, turn_id: answered.turn_id, session_id: answered.session_id }))
}
