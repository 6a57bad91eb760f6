//! The gRPC protocol between a worker and sandboxd, the daemon inside every sandbox
//! (`proto/sandbox.proto`). The worker is the client; sandboxd serves it.

#![allow(clippy::all, clippy::pedantic, clippy::allow_attributes_without_reason, reason = "generated code")]

pub mod trust;

pub mod v1 {
    tonic::include_proto!("hermes.sandbox.v1");
}

/// The header carrying a sandbox's token when sandboxd listens on TCP (Kubernetes).
pub const TOKEN_HEADER: &str = "x-hermes-sandbox-token";

/// Where every backend mounts a fresh directory (tmpfs or emptyDir) for the MCP server user
/// (`--mcp-as`): sandboxd creates that user's private home in it before anything else runs.
pub const MCP_HOME_MOUNT: &str = "/hermes/mcp";
