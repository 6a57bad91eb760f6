//! Team secrets a sandbox can use but never read. Inside the sandbox a bound variable
//! (`GITHUB_TOKEN`) holds a placeholder, unique per sandbox and secret ([`placeholder`]). The
//! egress proxy, outside the sandbox, terminates TLS for exactly the hosts a secret may go to
//! ([`Authority`]), swaps the placeholder for the real value where the binding allows
//! ([`rewrite`]), connects onward with full verification of the real host ([`Upstream`]) and
//! redacts the value from what comes back ([`redact`]). Every other host is tunnelled
//! untouched, so a placeholder sent elsewhere stays a placeholder.
//!
//! What this protects: the value is never in the sandbox, in a transcript or tool output, or
//! at a host it is not allowed for. What it cannot: the agent can still *use* the secret at its
//! allowed hosts, through whatever those hosts let a holder do.

mod authority;
mod intercept;
mod placeholder;
pub mod redact;
pub mod rewrite;
mod secret;
mod upstream;

pub use authority::Authority;
pub use intercept::{InterceptError, intercept};
pub use placeholder::{PLACEHOLDER_PREFIX, placeholder};
pub use secret::{Placement, Secret, Secrets};
pub use upstream::Upstream;

/// Why the egress proxy refused a request: the header its answers carry.
pub const REFUSED_HEADER: &str = "x-hermes-egress-refused";

/// A failure to set up interception (a bad certificate or key).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);
