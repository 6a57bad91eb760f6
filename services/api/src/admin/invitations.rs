//! Accepting an invitation. The link is handed to whoever invited, so it proves nothing about
//! the invited address (security review 2026-12, H1): an address that has an account joins
//! only when its owner accepts signed in as it; otherwise the link makes a new, unproven
//! account and signs it in. It never signs anyone in as an existing person and never sets an
//! existing account's password. The rules live in `hermes_store::admin::invitations`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use hermes_core::ErrorCode;
use hermes_http::ApiError;
use hermes_store::admin::{Acceptance, Acceptor};

use crate::admin::caller::{Credential, MaybeCaller};
use crate::admin::errors::store_error;
use crate::admin::session::{Attempt, link_invalid, me_body, open_session, password_error};

/// Accepting an invitation: the link's token, and for a new account a name and (optionally) a
/// password.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AcceptInvitation {
    token: String,
    #[serde(default)]
    display_name: String,
    /// For a new account only: someone signed in keeps their own.
    password: Option<String>,
}

fn conflict(code: ErrorCode, message: String) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "invalid_request_error", Some(code), message)
}

#[utoipa::path(post, path = "/admin/v1/invitations/accept", tag = "admin: sign-in", request_body = AcceptInvitation, security(()),
    responses((status = 200, description = "Joined: a new account is signed in (the session cookie is set); someone signed in stays so", body = hermes_wire::admin::Me),
        (status = 400, description = "The link is unknown, used, revoked or expired; or the password is too short", body = hermes_wire::ErrorBody),
        (status = 409, description = "The address has an account: sign in as it first (`sign_in_required`); or the signed-in person is someone else (`invitation_not_yours`). The link still works", body = hermes_wire::ErrorBody),
        (status = 429, description = "Too many attempts from this address, or too many at once", body = hermes_wire::ErrorBody)))]
pub(crate) async fn accept(
    MaybeCaller(caller): MaybeCaller,
    Attempt { state, meta, user_agent, body }: Attempt<AcceptInvitation>,
) -> Result<Response, ApiError> {
    // Only a console session accepts for its person (a token is automation, not them).
    let signed_in = caller.and_then(|c| match c.credential {
        Credential::Session { csrf, scope, .. } => c.person.map(|p| (p, csrf, scope)),
        Credential::Token(_) => None,
    });
    if signed_in.is_some() && body.password.is_some() {
        return Err(ApiError::invalid_request(
            ErrorCode::InvalidValue,
            "you are signed in: your account keeps its password (leave it out)",
        )
        .with_param("password"));
    }
    let hash = match (&signed_in, body.password) {
        (None, Some(p)) => Some(state.passwords.hash(p).await.map_err(|e| password_error(e).with_param("password"))?),
        _ => None,
    };
    let who = match &signed_in {
        Some((person, _, _)) => Acceptor::SignedIn(person.id),
        None => Acceptor::NewAccount { display_name: body.display_name.trim(), password_hash: hash.as_deref() },
    };
    let accepted =
        state.store.admin().accept_invitation(&body.token, who, meta.request_id.clone(), meta.source_address.clone());
    match accepted.await.map_err(store_error)? {
        Acceptance::Joined { person, new_account: true, .. } => open_session(&state, person, &meta, &user_agent).await,
        Acceptance::Joined { person, .. } => {
            let (csrf, scope) = signed_in.map(|(_, csrf, scope)| (csrf, scope)).unzip();
            Ok(Json(me_body(&state, &person, scope.flatten(), csrf.as_deref()).await?).into_response())
        }
        Acceptance::SignInFirst { email } => Err(conflict(
            ErrorCode::SignInRequired,
            format!("{email} already has an account: sign in as {email}, then open this link again"),
        )),
        Acceptance::NotYours => Err(conflict(
            ErrorCode::InvitationNotYours,
            "this invitation is for another address: sign out, then open the link again".into(),
        )),
        Acceptance::Invalid => Err(link_invalid()),
    }
}
