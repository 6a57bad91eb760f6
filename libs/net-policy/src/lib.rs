//! Which addresses Hermes may reach on someone else's behalf: only public ones. One list of
//! non-public ranges ([`ranges`]) serves the worker's egress proxy, the Kubernetes backend's
//! NetworkPolicy and every HTTP client that calls URLs tenants choose ([`outbound`]), so all
//! of them refuse the same addresses.

mod connecting;
pub mod outbound;
mod policy;
pub mod ranges;

pub use ranges::{Cidr, NON_PUBLIC_V4, NON_PUBLIC_V6, is_public};
