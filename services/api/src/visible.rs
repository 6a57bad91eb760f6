//! What a `/.../{id}` handler starts from: the caller, and the object of theirs the path's
//! `{id}` names, found before the handler runs. Another tenant's object, or one of an agent
//! the key may not use, is answered like a missing one, by the resource's own 404.
//!
//! The lookup runs before the extractors that follow [`Visible`]: a handler whose body (or
//! query) is refused before the lookup starts from [`Addressed`] and looks up afterwards, so
//! that order stays.

use std::future::Future;

use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use serde::de::DeserializeOwned;

use hermes_http::{ApiError, ApiJson};
use hermes_store::KeyAuth;

use crate::auth::Caller;
use crate::state::AppState;

/// A JSON body whose refusal waits until the caller's object (or tenant) is found: another
/// tenant's URL is a 404 whatever the body.
pub(crate) type Body<T> = Result<ApiJson<T>, ApiError>;

/// Part `T` of the request, its rejection as the response it answers with: an extractor built
/// of several parts answers whichever of them refuses first.
pub(crate) async fn part<T: FromRequestParts<S>, S: Send + Sync>(parts: &mut Parts, state: &S) -> Result<T, Response> {
    T::from_request_parts(parts, state).await.map_err(IntoResponse::into_response)
}

/// An object a caller may see by its id.
pub(crate) trait CallerObject: Sized {
    /// The path's `{id}` as the document describes it.
    type Path: DeserializeOwned + Into<String> + Send;

    /// The answer when the caller has no such object.
    type Missing: IntoResponse;

    /// The caller's object `id` names.
    fn find(state: &AppState, auth: &KeyAuth, id: &str) -> impl Future<Output = Result<Self, Self::Missing>> + Send;
}

/// The caller, and their object `T` the path names (`id` as the path gave it).
pub(crate) struct Visible<T> {
    pub state: AppState,
    pub auth: KeyAuth,
    pub id: String,
    pub found: T,
}

impl<S: Send + Sync, T: CallerObject> FromRequestParts<S> for Visible<T>
where
    AppState: FromRef<S>,
{
    /// 401 without a key, then a bad path's answer, then the object's 404.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let addressed = Addressed::<T>::from_request_parts(parts, state).await?;
        addressed.find().await.map_err(IntoResponse::into_response)
    }
}

/// The caller and the path's `{id}`, their object `T` not looked up yet: for a handler whose
/// body (or query) is refused before the lookup ([`Addressed::find`]).
pub(crate) struct Addressed<T: CallerObject> {
    state: AppState,
    auth: KeyAuth,
    path: T::Path,
}

impl<S: Send + Sync, T: CallerObject> FromRequestParts<S> for Addressed<T>
where
    AppState: FromRef<S>,
{
    /// 401 without a key, then a bad path's answer.
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Caller(auth) = part(parts, state).await?;
        let Path(path) = part::<Path<T::Path>, _>(parts, state).await?;
        Ok(Self { state: AppState::from_ref(state), auth, path })
    }
}

impl<T: CallerObject> Addressed<T> {
    /// The caller's object the path names, or the resource's 404.
    pub(crate) async fn find(self) -> Result<Visible<T>, T::Missing> {
        let Self { state, auth, path } = self;
        let id: String = path.into();
        let found = T::find(&state, &auth, &id).await?;
        Ok(Visible { state, auth, id, found })
    }
}
