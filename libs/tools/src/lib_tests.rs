use super::*;
use hermes_core::ToolCallFunction;

struct Echo;
impl Tool for Echo {
    fn name(&self) -> ToolName {
        ToolName::Fixed("echo")
    }
    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::Todo
    }
    fn schema(&self) -> Value {
        serde_json::json!({"name":"echo","description":"echo","parameters":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(&'a self, _: &'a ToolCtx, args: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move { Ok(required_str(&args, "text")?.to_owned()) })
    }
}

fn call(name: &str, args: &str) -> ToolCall {
    ToolCall {
        id: "c1".into(),
        kind: "function".into(),
        function: ToolCallFunction { name: name.into(), arguments: args.into() },
    }
}

fn ctx() -> ToolCtx {
    ToolCtx::for_tests("c1")
}

#[tokio::test]
async fn dispatch_explains_every_failure_to_the_model() {
    let mut reg = ToolRegistry::new();
    reg.register(Arc::new(Echo));
    let ok = reg.dispatch(&ctx(), &call("echo", r#"{"text":"hi"}"#)).await;
    assert!(ok.ok);
    assert_eq!(ok.text, "hi");
    let unknown = reg.dispatch(&ctx(), &call("nope", "{}")).await;
    assert!(!unknown.ok && unknown.text.contains("Available tools: echo"));
    let bad_json = reg.dispatch(&ctx(), &call("echo", "{text:")).await;
    assert!(!bad_json.ok && bad_json.text.contains("not valid JSON"));
    let missing = reg.dispatch(&ctx(), &call("echo", "{}")).await;
    assert!(!missing.ok && missing.text.contains("\"text\""));
    assert!(reg.restricted_to(&["terminal".into()]).is_empty());
    assert_eq!(reg.restricted_to(&["todo".into()]).names(), vec!["echo"]);
}

/// Returns `len` characters of numbered lines; `pinned` ones are never saved to files.
struct Big {
    len: usize,
    pinned: bool,
}
impl Tool for Big {
    fn name(&self) -> ToolName {
        ToolName::Fixed(if self.pinned { "pinned" } else { "big" })
    }
    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::Todo
    }
    fn schema(&self) -> Value {
        serde_json::json!({"name": self.name(), "parameters": {"type": "object"}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn max_result_chars(&self) -> Option<usize> {
        if self.pinned { None } else { Some(MAX_RESULT_CHARS) }
    }
    fn call<'a>(&'a self, _: &'a ToolCtx, _: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        // Lines of 13 characters, cut to exactly `len` characters.
        let text: String = (0..self.len / 13 + 1)
            .map(|i| format!("line {i:05} é\n"))
            .collect::<String>()
            .chars()
            .take(self.len)
            .collect();
        Box::pin(async move { Ok(text) })
    }
}

struct Saved(std::sync::Mutex<Vec<(String, usize)>>, bool);
impl ResultSpill for Saved {
    fn save<'a>(&'a self, ctx: &'a ToolCtx, text: &'a str) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            if !self.1 {
                return Err(ToolError::Unavailable("sandbox down".into()));
            }
            self.0.lock().unwrap().push((ctx.call_id.clone(), text.chars().count()));
            Ok(format!("/tmp/hermes-results/{}.txt", ctx.call_id))
        })
    }
}

#[tokio::test]
async fn oversized_results_are_saved_whole_and_the_model_gets_a_preview_and_the_path() {
    let saved = Arc::new(Saved(Default::default(), true));
    let mut reg = ToolRegistry::new();
    reg.register(Arc::new(Big { len: 150_000, pinned: false }));
    reg.register(Arc::new(Big { len: 150_000, pinned: true }));
    reg.set_spill(saved.clone());

    let out = reg.dispatch(&ctx(), &call("big", "{}")).await;
    assert!(out.ok);
    assert!(out.text.starts_with(PERSISTED_TAG), "{}", &out.text[..200]);
    assert!(out.text.contains("150000 characters") && out.text.contains("/tmp/hermes-results/c1.txt"));
    assert!(out.text.len() < 2_000, "only a preview stays in the context: {}", out.text.len());
    assert!(out.text.contains("line 00000 é\n") && out.text.contains("\n..."), "preview cut at a line end");
    assert_eq!(*saved.0.lock().unwrap(), vec![("c1".to_owned(), 150_000)], "saved whole");

    let pinned = reg.dispatch(&ctx(), &call("pinned", "{}")).await;
    assert_eq!(pinned.text.chars().count(), 150_000, "read_file-like tools are never saved");

    let saved_again = reg.persist(&ctx(), out.text.clone()).await;
    assert_eq!(saved_again, out.text, "a saved result is not saved twice");
}

#[tokio::test]
async fn a_result_that_cannot_be_saved_is_cut_with_a_note() {
    let mut reg = ToolRegistry::new();
    reg.register(Arc::new(Big { len: 120_000, pinned: false }));
    reg.set_spill(Arc::new(Saved(Default::default(), false)));
    let out = reg.dispatch(&ctx(), &call("big", "{}")).await;
    assert!(out.text.contains("[Truncated: the result was 120000 characters and could not be saved.]"));
    assert!(out.text.len() < 2_000);
}

/// A tool named at run time, as an MCP server's tools are.
struct Named(&'static str, String);
impl Tool for Named {
    fn name(&self) -> ToolName {
        ToolName::Chosen(self.1.as_str().into())
    }
    fn toolset(&self) -> hermes_core::ToolsetName {
        hermes_core::ToolsetName::Mcp
    }
    fn schema(&self) -> Value {
        serde_json::json!({"name": self.name(), "description": self.0, "parameters": {"type": "object"}})
    }
    fn read_only(&self) -> bool {
        true
    }
    fn call<'a>(&'a self, _: &'a ToolCtx, _: Value) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move { Ok(self.0.to_owned()) })
    }
}

#[tokio::test]
async fn a_tool_named_at_run_time_never_replaces_another_and_leaves_no_name_behind() {
    let mut reg = ToolRegistry::new();
    reg.register(Arc::new(Echo));
    reg.register(Arc::new(Named("trusted", "mcp_a_b_c".into())));
    reg.register(Arc::new(Named("impostor", "mcp_a_b_c".into())));
    reg.register(Arc::new(Named("shadow", "echo".into())));
    assert_eq!(reg.dispatch(&ctx(), &call("mcp_a_b_c", "{}")).await.text, "trusted", "the first keeps its name");
    assert_eq!(reg.dispatch(&ctx(), &call("echo", r#"{"text":"hi"}"#)).await.text, "hi");
    assert_eq!((reg.label("mcp_a_b_c"), reg.label("echo"), reg.label("nope")), ("mcp", "echo", "unknown"));
    assert_eq!(reg.fixed_names(), ["echo"]);
    assert_eq!(reg.names(), ["echo", "mcp_a_b_c"]);

    // Fresh names, as a server may invent on every listing: no schema is kept under them.
    let before = crate::shared_schema_names();
    for n in 0..100 {
        reg.register(Arc::new(Named("fresh", format!("mcp_s_t_{n}"))));
    }
    // Other tests of this binary may add their few fixed names meanwhile.
    assert!(crate::shared_schema_names() <= before + 4, "{} names", crate::shared_schema_names());
}

#[test]
fn relative_paths_are_under_the_turns_workdir_and_others_are_left_alone() {
    let plain = ToolCtx::for_tests("c");
    assert_eq!(plain.in_workdir("notes.txt"), "notes.txt");
    let cron = ToolCtx { workdir: Some("/workspace/proj".into()), ..ToolCtx::for_tests("c") };
    assert_eq!(cron.in_workdir("notes.txt"), "/workspace/proj/notes.txt");
    assert_eq!(cron.in_workdir("./src/a.rs"), "/workspace/proj/src/a.rs");
    assert_eq!(cron.in_workdir("."), "/workspace/proj");
    assert_eq!(cron.in_workdir("/workspace/other"), "/workspace/other");
    assert_eq!(cron.in_workdir("~/x"), "~/x");
}
