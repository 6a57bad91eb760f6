//! `GET /v1/files/{id}` and `/v1/files/{id}/content`: the files an agent made in an API turn
//! (a generated picture, speech), as OpenAI's Files API shows files. The id names the turn
//! (`hermes_core::media::file_id`), so a file is looked up within the caller's tenant only;
//! another tenant's, or another agent's for a key restricted to one, answers 404. The content
//! is served with its stored type, never sniffed, and sandboxed should a browser open it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use hermes_http::{ApiError, ErrorCode};
use hermes_store::KeyAuth;
use hermes_store::turn_files::SharedFile;
use hermes_wire::v1::FileObject;

use crate::auth::Caller;
use crate::documented::{FileIdPath, NoApiKey, NotFound};
use crate::state::AppState;

/// The file `id` names, if the caller may see it.
async fn find(state: &AppState, auth: &KeyAuth, id: &str) -> Result<SharedFile, ApiError> {
    let missing = || ApiError::not_found(ErrorCode::NotFound, format!("No file with id {id:?}."));
    let (turn, name) = hermes_core::media::parse_file_id(id).ok_or_else(missing)?;
    let file = state.store.turns().shared_file(auth.tenant_id, turn, &name).await.map_err(ApiError::internal)?;
    file.filter(|f| auth.agent_id.is_none_or(|agent| agent == f.agent_id)).ok_or_else(missing)
}

#[utoipa::path(get, path = "/v1/files/{id}", tag = "openai", params(FileIdPath),
    responses((status = 200, description = "A file an agent made", body = FileObject), NoApiKey, NotFound))]
pub(crate) async fn get(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Json<FileObject>, ApiError> {
    let file = find(&state, &auth, &id).await?;
    Ok(Json(FileObject {
        id,
        object: "file".into(),
        bytes: file.data.len(),
        created_at: file.created_at.timestamp(),
        filename: file.name,
        purpose: "assistants_output".into(),
        mime_type: file.mime,
    }))
}

#[utoipa::path(get, path = "/v1/files/{id}/content", tag = "openai", params(FileIdPath),
    responses((status = 200, description = "The file's bytes, with its type", content_type = "application/octet-stream", body = Vec<u8>), NoApiKey, NotFound))]
pub(crate) async fn content(
    State(state): State<AppState>,
    Caller(auth): Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let file = find(&state, &auth, &id).await?;
    let disposition = format!("inline; filename=\"{}\"", file.name);
    Ok((
        [
            (header::CONTENT_TYPE, file.mime),
            (header::CONTENT_DISPOSITION, disposition),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
            (header::CONTENT_SECURITY_POLICY, "sandbox; default-src 'none'".to_owned()),
            (header::CACHE_CONTROL, "private, max-age=3600".to_owned()),
        ],
        file.data,
    )
        .into_response())
}
