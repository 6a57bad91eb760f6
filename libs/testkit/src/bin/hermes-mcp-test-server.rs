//! `hermes-mcp-test-server`: the MCP test server of `hermes_testkit::mcp` over stdio, for the
//! stdio transport's tests (it runs inside a sandbox, as tenants' stdio servers do). With
//! `--exit-at-once` it exits with an error before speaking, as a broken server does.

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    if std::env::args().any(|a| a == "--exit-at-once") {
        eprintln!("fatal: MCP_TEST_TOKEN is not set");
        std::process::exit(3);
    }
    hermes_testkit::mcp::serve_stdio().await
}
