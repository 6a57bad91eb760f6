//! Why a use case refused or failed, in terms every front end can show: the API as an
//! OpenAI-style error, the CLI as a message.

use hermes_core::ErrorCode;
use hermes_core::access::{AdminOp, Standing};
use hermes_store::StoreError;

pub type Result<T, E = OpsError> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// The input is wrong; `param` names the field.
    #[error("{message}")]
    Invalid { code: ErrorCode, param: &'static str, message: String },
    /// What the request names does not exist in the tenant.
    #[error("no such {what}")]
    NotFound { code: ErrorCode, what: &'static str },
    /// The request is well formed but refused (a platform declined the credentials, a wrong
    /// pairing code).
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
    /// Too many attempts: refused for a while.
    #[error("{message}")]
    Locked { code: ErrorCode, message: String },
    /// The caller's standing does not allow the operation.
    #[error("{} may not do `{op}` here", who(*.standing))]
    Forbidden { standing: Standing, op: AdminOp },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl OpsError {
    pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid { code: ErrorCode::InvalidValue, param, message: message.into() }
    }

    /// `err`, with not found meaning the `what` the request named.
    pub(crate) fn missing(err: StoreError, code: ErrorCode, what: &'static str) -> Self {
        match err {
            StoreError::NotFound => Self::NotFound { code, what },
            other => Self::Store(other),
        }
    }
}

/// The caller as a refusal names them.
fn who(standing: Standing) -> String {
    match standing {
        Standing::Operator => "an operator".to_owned(),
        Standing::Member(role) => format!("the role `{role}`"),
    }
}
