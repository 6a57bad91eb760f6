//! The request and response bodies of the HTTP APIs: one Rust type per payload. The handlers
//! return them, their derives describe them in `/openapi.json`, and `hermesctl --url` reads
//! them back, so a shape is written once. Types only: no I/O, no framework.
//!
//! `admin` holds `/admin/v1`'s bodies, `v1` those of `/v1` and `/api`, the turn path's streamed
//! events included.
//!
//! With the `sqlx` feature (the store's alone) the bodies the store returns also derive
//! `sqlx::FromRow`, so a row is read as its body with no copy in between (see [`rows`]).

pub mod admin;
mod envelope;
#[cfg(feature = "sqlx")]
pub mod rows;
pub mod v1;

pub use envelope::{ErrorBody, ErrorDetail, List, ListKind, Page, Slice};
