//! The request and response bodies of the HTTP APIs: one Rust type per payload. The handlers
//! return them, their derives describe them in `/openapi.json`, and `hermesctl --url` reads
//! them back, so a shape is written once. Types only: no I/O, no framework.
//!
//! The admin API's credentials and tenants come first (`admin`); the rest of `/admin/v1` and
//! `/v1` follow (their handlers still build `serde_json` bodies described by `schemas.rs`).

pub mod admin;
mod envelope;
pub mod v1;

pub use envelope::{ErrorBody, ErrorDetail, List, ListKind, Page, Slice};
