//! `execute_code` end to end: a real Python in a real (bubblewrap) sandbox, calling the
//! agent's tools back through the worker, with the limits enforced by sandboxd.

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_toolbox::{ExecuteCode, TerminalTool, builtin_registry};
use hermes_tools::{Tool, ToolCtx};

use crate::sandbox::{Fixture, LocalFixture, run};

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("call_code")
}

/// A local sandbox and `execute_code` on it, with the terminal and the built-in tools.
async fn fixture_with_tool(timeout_secs: u32, max_calls: u32) -> (LocalFixture, ExecuteCode) {
    let f = LocalFixture::new().await;
    let sandboxes = f.shared();
    let registry = builtin_registry(sandboxes.clone(), 30, None);
    let terminal = Arc::new(TerminalTool::new(sandboxes.clone(), 30));
    let tool = ExecuteCode::new(sandboxes, &registry, Some(terminal)).with_limits(timeout_secs, max_calls);
    (f, tool)
}

async fn execute(tool: &ExecuteCode, ctx: &ToolCtx, code: &str) -> Value {
    let out = tool.call(ctx, json!({ "code": code })).await.unwrap();
    serde_json::from_str(&out).unwrap()
}

#[tokio::test]
async fn a_script_calls_tools_and_only_its_printout_comes_back() {
    let (f, tool) = fixture_with_tool(60, 50).await;
    let ctx = ctx();
    let script = r#"
from hermes_tools import terminal, write_file, read_file, search_files
r = terminal("echo hello from $(basename $PWD); exit 3")
write_file("notes/plan.md", "step one\nstep two\n")
page = read_file("notes/plan.md")
found = search_files("two", path="notes")
print(r["exit_code"], r["output"].strip())
print("two" in found, page.count("step"))
"#;
    let out = execute(&tool, &ctx, script).await;
    assert_eq!(out["status"], "success", "{out}");
    assert_eq!(out["output"], "3 hello from workspace\nTrue 2\n");
    assert_eq!(out["tool_calls_made"], 4);
    let key = hermes_sandbox::SandboxKey::shared(ctx.tenant_id, ctx.agent_id);
    assert_eq!(run(f.sandboxes(), key, "cat notes/plan.md", 20).await.output, "step one\nstep two\n");

    // The schema lists the script tools the agent has, and nothing else.
    let description = tool.schema()["description"].as_str().unwrap().to_owned();
    assert!(description.contains("terminal(command: str") && description.contains("read_file(path: str"));
    assert!(!description.contains("web_search("), "web tools are not enabled here");
}

#[tokio::test]
async fn a_failing_script_shows_its_traceback_and_tool_errors_reach_the_script() {
    let (_f, tool) = fixture_with_tool(60, 50).await;
    let script = r#"
from hermes_tools import read_file
print(read_file("/definitely/missing.txt"))
raise ValueError("boom")
"#;
    let out = execute(&tool, &ctx(), script).await;
    assert_eq!(out["status"], "error");
    let output = out["output"].as_str().unwrap();
    assert!(output.starts_with("Error:"), "the tool's error is the call's value: {output}");
    assert!(output.contains("ValueError: boom"), "{output}");
}

#[tokio::test]
async fn the_tool_call_cap_stops_calls_inside_the_script() {
    let (_f, tool) = fixture_with_tool(60, 3).await;
    let script = r#"
from hermes_tools import terminal
done = 0
try:
    for i in range(10):
        terminal("true")
        done += 1
except RuntimeError as e:
    print(done, e)
"#;
    let out = execute(&tool, &ctx(), script).await;
    assert_eq!(out["tool_calls_made"], 3);
    let output = out["output"].as_str().unwrap();
    assert!(output.starts_with("3 tool call limit reached (3 per script)"), "{output}");
}

#[tokio::test]
async fn a_script_past_its_timeout_is_killed_with_its_children() {
    let (f, tool) = fixture_with_tool(2, 50).await;
    let ctx = ctx();
    let script = r#"
import subprocess, time
subprocess.Popen(["sleep", "307"])
print("started", flush=True)
time.sleep(60)
"#;
    let started = std::time::Instant::now();
    let out = execute(&tool, &ctx, script).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert_eq!(out["status"], "timeout");
    assert!(out["output"].as_str().unwrap().starts_with("started\n"), "{out}");
    let key = hermes_sandbox::SandboxKey::shared(ctx.tenant_id, ctx.agent_id);
    let ps = run(f.sandboxes(), key, "ps -eo args | grep 'sleep 30[7]'", 20).await;
    assert_eq!(ps.output.trim(), "", "the script's child died with it");
}

#[tokio::test]
async fn stdout_is_capped_head_and_tail() {
    let (_f, tool) = fixture_with_tool(60, 50).await;
    let script = "for i in range(20000):\n    print(f'line {i:05}')\n";
    let out = execute(&tool, &ctx(), script).await;
    let output = out["output"].as_str().unwrap();
    assert!(output.starts_with("line 00000\n"));
    assert!(output.ends_with("line 19999\n"));
    assert!(output.contains("[OUTPUT TRUNCATED - "), "{}", &output[..100]);
    assert!(output.len() < 51_000, "{}", output.len());
}
