//! `ApiJson<T>`: axum's `Json<T>` whose rejections are OpenAI-style errors, so every handler
//! that takes a JSON body refuses a bad one the same way (413 `body_too_large`, 400
//! `invalid_content_type`, 400 `invalid_json` for syntax, a wrong shape or missing fields).

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRef, FromRequest, OptionalFromRequest, Request};
use axum::http::StatusCode;
use serde::de::DeserializeOwned;

use crate::ApiError;
use crate::error::ErrorCode;

/// The body limit the router enforces (`DefaultBodyLimit`), named in the 413 answer. A role's
/// state hands it over with `FromRef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimit(pub usize);

/// A JSON request body; a rejected one answers as [`ApiError`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ApiJson<T>(pub T);

/// The OpenAI-style error for a rejected JSON body.
pub fn json_rejection(rejection: JsonRejection, limit: BodyLimit) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::body_too_large(limit.0);
    }
    match rejection {
        JsonRejection::MissingJsonContentType(_) => ApiError::invalid_request(
            ErrorCode::InvalidContentType,
            "send the body as JSON with Content-Type: application/json",
        ),
        other => ApiError::invalid_request(
            ErrorCode::InvalidJson,
            format!("request body is not valid JSON: {}", other.body_text()),
        ),
    }
}

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
    BodyLimit: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match <Json<T> as FromRequest<()>>::from_request(req, &()).await {
            Ok(Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_rejection(rejection, BodyLimit::from_ref(state))),
        }
    }
}

/// `Option<ApiJson<T>>`: `None` for a request without a JSON content type (an optional body).
impl<T, S> OptionalFromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
    BodyLimit: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        match <Json<T> as OptionalFromRequest<()>>::from_request(req, &()).await {
            Ok(value) => Ok(value.map(|Json(v)| Self(v))),
            Err(rejection) => Err(json_rejection(rejection, BodyLimit::from_ref(state))),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::header::CONTENT_TYPE;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Named {
        #[expect(dead_code, reason = "only its presence is checked")]
        name: String,
    }

    fn request(content_type: Option<&str>, body: &str) -> Request {
        let mut builder = Request::builder().method("POST").uri("/");
        if let Some(ct) = content_type {
            builder = builder.header(CONTENT_TYPE, ct);
        }
        builder.body(Body::from(body.to_owned())).unwrap()
    }

    async fn refusal(content_type: Option<&str>, body: &str) -> ApiError {
        match <ApiJson<Named> as FromRequest<BodyLimit>>::from_request(request(content_type, body), &BodyLimit(16))
            .await
        {
            Ok(_) => panic!("{body:?} was accepted"),
            Err(e) => e,
        }
    }

    #[tokio::test]
    async fn rejected_bodies_get_openai_errors() {
        let json = Some("application/json");
        for (content_type, body, status, code) in [
            (json, "{\"name\": ", StatusCode::BAD_REQUEST, "invalid_json"),
            (json, "{\"other\": 1}", StatusCode::BAD_REQUEST, "invalid_json"),
            (json, "[1]", StatusCode::BAD_REQUEST, "invalid_json"),
            (Some("text/plain"), "{\"name\": \"x\"}", StatusCode::BAD_REQUEST, "invalid_content_type"),
            (None, "{\"name\": \"x\"}", StatusCode::BAD_REQUEST, "invalid_content_type"),
        ] {
            let e = refusal(content_type, body).await;
            assert_eq!(
                (e.status, e.code.map(ErrorCode::as_str), e.kind),
                (status, Some(code), "invalid_request_error"),
                "{body:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_oversized_body_names_the_limit() {
        // Beyond axum's default limit (2 MiB), the one a router without `DefaultBodyLimit` has.
        let huge = format!("{{\"name\": \"{}\"}}", "x".repeat(3 * 1024 * 1024));
        let e = refusal(Some("application/json"), &huge).await;
        assert_eq!((e.status, e.code), (StatusCode::PAYLOAD_TOO_LARGE, Some(ErrorCode::BodyTooLarge)));
        assert!(e.message.contains("16 bytes"), "{}", e.message);
    }

    #[tokio::test]
    async fn an_absent_optional_body_is_none_and_a_good_one_is_read() {
        let none = <ApiJson<Named> as OptionalFromRequest<BodyLimit>>::from_request(request(None, ""), &BodyLimit(16));
        assert!(none.await.unwrap().is_none());
        let some = <ApiJson<Named> as OptionalFromRequest<BodyLimit>>::from_request(
            request(Some("application/json"), "{\"name\": \"x\"}"),
            &BodyLimit(64),
        );
        assert!(some.await.unwrap().is_some());
    }
}
