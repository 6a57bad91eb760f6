//! What wraps the payloads: lists, pages of lists, and the OpenAI-style error.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The `object` of every list: always `"list"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ListKind {
    #[default]
    List,
}

/// A whole list: `{"object": "list", "data": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct List<T> {
    pub object: ListKind,
    pub data: Vec<T>,
}

impl<T> List<T> {
    pub fn of(data: Vec<T>) -> Self {
        Self { object: ListKind::List, data }
    }
}

/// A page of a list, with the cursor of the next page (`next`, `null` on the last).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub object: ListKind,
    pub data: Vec<T>,
    pub next: Option<String>,
}

impl<T> Page<T> {
    pub fn of(data: Vec<T>, next: Option<String>) -> Self {
        Self { object: ListKind::List, data, next }
    }
}

/// A stretch of a list and whether more follow: `{"object": "list", "data": [...], "has_more"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Slice<T> {
    pub object: ListKind,
    pub data: Vec<T>,
    pub has_more: bool,
}

impl<T> Slice<T> {
    pub fn of(data: Vec<T>, has_more: bool) -> Self {
        Self { object: ListKind::List, data, has_more }
    }

    /// A list the tenant API pages like OpenAI's, returned whole.
    pub fn whole(data: Vec<T>) -> Self {
        Self::of(data, false)
    }
}

/// An OpenAI-style error: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    pub message: String,
    /// `invalid_request_error`, `permission_error`, `server_error`, ...
    pub r#type: String,
    pub param: Option<String>,
    /// `invalid_api_key`, `not_signed_in`, `permission_denied`, `tenant_not_found`, ...
    pub code: Option<String>,
    /// Hermes-specific details; clients that do not know them ignore them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub hermes: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_pages_have_the_openai_envelope() {
        let list = serde_json::to_value(List::of(vec![1, 2])).unwrap();
        assert_eq!(list, serde_json::json!({"object": "list", "data": [1, 2]}));
        let last = serde_json::to_value(Page::<u8>::of(vec![], None)).unwrap();
        assert_eq!(last, serde_json::json!({"object": "list", "data": [], "next": null}), "the last page says so");
        let slice = serde_json::to_value(Slice::whole(vec![1])).unwrap();
        assert_eq!(slice, serde_json::json!({"object": "list", "data": [1], "has_more": false}));
    }
}
