//! File tools: `read_file`, `write_file`, `patch`, `search_files`, `unpack_archive`
//! (`files/unpack.rs`). The daemon in the sandbox does the work (no shell strings carry file
//! contents). Before the first change to files in a turn, the workspace is checkpointed, so
//! `/rollback` can undo the turn.

use hermes_core::ToolsetName;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use hermes_core::TurnId;
use hermes_sandbox::proto::{
    CheckpointRequest, EditFileRequest, ReadFileRequest, Replace, SearchRequest, WriteFileRequest, edit_file_request,
};
use hermes_sandbox::{SandboxClient, SandboxKey, Sandboxes, status_error};
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use crate::sandbox_error;
use hermes_tools::text::{cap_middle, for_model, redact};

mod unpack;
pub use unpack::UnpackArchive;

/// Longest diff shown after an edit.
const MAX_DIFF_CHARS: usize = 10_000;
/// Search output beyond this is cut.
const MAX_SEARCH_CHARS: usize = 50_000;

/// What the file tools share: the sandboxes, and which turns already took their checkpoint.
#[derive(Clone)]
pub struct FileTools {
    sandboxes: Arc<dyn Sandboxes>,
    checkpointed: Arc<Mutex<HashSet<TurnId>>>,
}

impl FileTools {
    pub fn new(sandboxes: Arc<dyn Sandboxes>) -> Self {
        Self { sandboxes, checkpointed: Arc::default() }
    }

    async fn client(&self, ctx: &ToolCtx) -> Result<SandboxClient, ToolError> {
        self.sandboxes
            .open(SandboxKey { tenant: ctx.tenant_id, agent: ctx.agent_id, workspace: ctx.workspace })
            .await
            .map_err(sandbox_error)
    }

    /// Takes the turn's checkpoint before its first change (once per turn and worker).
    /// Takes the turn's checkpoint before `what` changes files (once per turn and worker).
    pub(crate) async fn checkpoint_before(&self, ctx: &ToolCtx, what: &str) -> Result<(), ToolError> {
        let client = self.client(ctx).await?;
        self.checkpoint_once(ctx, &client, what).await
    }

    async fn checkpoint_once(&self, ctx: &ToolCtx, client: &SandboxClient, what: &str) -> Result<(), ToolError> {
        let first = self.checkpointed.lock().map(|mut s| {
            if s.len() > 10_000 {
                s.clear();
            }
            s.insert(ctx.turn_id)
        });
        if first.unwrap_or(false) {
            let reason = format!("before {what} (turn {})", ctx.turn_id);
            if let Err(status) = client.grpc().checkpoint(CheckpointRequest { reason }).await {
                // A workspace too large to snapshot is still editable; say so in the logs.
                tracing::warn!(error = %status.message(), "cannot checkpoint the workspace before a change");
            }
        }
        Ok(())
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn u32_arg(args: &Value, key: &str) -> u32 {
    args.get(key).and_then(Value::as_u64).map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

fn fail(status: tonic::Status) -> ToolError {
    sandbox_error(status_error(status))
}

fn shown_diff(diff: &str) -> String {
    cap_middle(&redact(diff, &[]), MAX_DIFF_CHARS)
}

/// `read_file`.
pub struct ReadFile(pub FileTools);
/// `write_file`.
pub struct WriteFile(pub FileTools);
/// `patch`.
pub struct Patch(pub FileTools);
/// `search_files`.
pub struct SearchFiles(pub FileTools);

// Reading a saved result must not save it again; the daemon caps a read at 100K.
impl SimpleTool for ReadFile {
    const SPEC: ToolSpec = ToolSpec::new(
        "read_file",
        ToolsetName::File,
        "Read a text file with line numbers (LINE|TEXT). Relative paths are under /workspace. \
                Pages with offset/limit (default 500 lines, max 2000).",
    )
    .read_only()
    .sandboxed()
    .never_spilled();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": { "type": "string" },
                "offset": { "type": "integer", "description": "First line, from 1." },
                "limit": { "type": "integer" }
            }),
            &["path"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let path = ctx.in_workdir(required_str(&args, "path")?);
        let client = self.0.client(ctx).await?;
        let request =
            ReadFileRequest { path: path.clone(), offset: u32_arg(&args, "offset"), limit: u32_arg(&args, "limit") };
        let r = client.grpc().read_file(request).await.map_err(fail)?.into_inner();
        let mut out = redact(&r.content, &[]);
        if r.first_line > 1 || r.last_line < r.total_lines {
            out.push_str(&format!(
                "[lines {}-{} of {}; read on with offset={}]",
                r.first_line,
                r.last_line,
                r.total_lines,
                r.last_line + 1
            ));
        }
        if out.is_empty() {
            out = format!("({path} is empty)");
        }
        Ok(out)
    }
}

impl SimpleTool for WriteFile {
    const SPEC: ToolSpec = ToolSpec::new(
        "write_file",
        ToolsetName::File,
        "Create or overwrite a file with the full content (parent directories are created). \
                For small changes to an existing file use patch.",
    )
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(json!({ "path": { "type": "string" }, "content": { "type": "string" } }), &["path", "content"])
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let path = ctx.in_workdir(required_str(&args, "path")?);
        let content = required_str(&args, "content")?.to_owned();
        let client = self.0.client(ctx).await?;
        self.0.checkpoint_once(ctx, &client, "write_file").await?;
        let lines = content.lines().count();
        let bytes = content.len();
        let r = client.grpc().write_file(WriteFileRequest { path, content }).await.map_err(fail)?.into_inner();
        let verb = if r.created { "Created" } else { "Overwrote" };
        Ok(format!("{verb} {} ({lines} lines, {bytes} bytes).", r.path))
    }
}

impl SimpleTool for Patch {
    const SPEC: ToolSpec = ToolSpec::new(
        "patch",
        ToolsetName::File,
        "Edit a file. mode=replace (default): replace old_string, which must match exactly and \
                once (or set replace_all). mode=patch: apply a unified diff. Returns the diff.",
    )
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "mode": { "type": "string", "enum": ["replace", "patch"] },
                "path": { "type": "string" },
                "old_string": { "type": "string" },
                "new_string": { "type": "string" },
                "replace_all": { "type": "boolean" },
                "patch": { "type": "string", "description": "Unified diff (mode=patch)." }
            }),
            &["path"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let path = ctx.in_workdir(required_str(&args, "path")?);
        let edit = match str_arg(&args, "mode").unwrap_or("replace") {
            "replace" => edit_file_request::Edit::Replace(Replace {
                old_string: required_str(&args, "old_string")?.to_owned(),
                new_string: str_arg(&args, "new_string").unwrap_or_default().to_owned(),
                replace_all: args.get("replace_all").and_then(Value::as_bool).unwrap_or(false),
            }),
            "patch" => edit_file_request::Edit::UnifiedDiff(required_str(&args, "patch")?.to_owned()),
            other => {
                return Err(ToolError::RespondToModel(format!("unknown mode {other:?}; use replace or patch")));
            }
        };
        let client = self.0.client(ctx).await?;
        self.0.checkpoint_once(ctx, &client, "patch").await?;
        let r = client.grpc().edit_file(EditFileRequest { path, edit: Some(edit) }).await.map_err(fail)?.into_inner();
        let what = if r.replacements > 1 { format!(" ({} replacements)", r.replacements) } else { String::new() };
        Ok(format!("Edited {}{what}.\n{}", r.path, shown_diff(&r.diff)))
    }
}

impl SimpleTool for SearchFiles {
    const SPEC: ToolSpec = ToolSpec::new(
        "search_files",
        ToolsetName::File,
        "Search file contents by regular expression (target=content, default) or file names \
                by glob (target=files, newest first). Honours .gitignore; skips hidden files.",
    )
    .read_only()
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "pattern": { "type": "string" },
                "target": { "type": "string", "enum": ["content", "files"] },
                "path": { "type": "string", "description": "Directory (default /workspace)." },
                "file_glob": { "type": "string", "description": "Only files matching, e.g. *.py." },
                "limit": { "type": "integer", "description": "Default 50." },
                "offset": { "type": "integer" },
                "output_mode": { "type": "string", "enum": ["content", "files_only", "count"] },
                "context": { "type": "integer", "description": "Lines around each match." }
            }),
            &["pattern"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let mode = str_arg(&args, "output_mode").unwrap_or("content");
        let request = SearchRequest {
            pattern: required_str(&args, "pattern")?.to_owned(),
            files: str_arg(&args, "target") == Some("files"),
            path: str_arg(&args, "path").map_or_else(|| ctx.workdir.clone().unwrap_or_default(), |p| ctx.in_workdir(p)),
            file_glob: str_arg(&args, "file_glob").unwrap_or_default().to_owned(),
            limit: u32_arg(&args, "limit"),
            offset: u32_arg(&args, "offset"),
            context: u32_arg(&args, "context").min(10),
            count_only: mode == "count",
            files_only: mode == "files_only",
        };
        let client = self.0.client(ctx).await?;
        let files_mode = request.files;
        let r = client.grpc().search(request).await.map_err(fail)?.into_inner();
        if r.hits.is_empty() {
            return Ok(format!("No matches ({} in all).", r.total));
        }
        let lines: Vec<String> = r
            .hits
            .iter()
            .map(|h| match (files_mode, mode) {
                (true, _) | (false, "files_only") => h.path.clone(),
                (false, "count") => format!("{}: {}", h.path, h.count),
                _ if h.text.contains('\n') => format!("{}:\n{}", h.path, h.text),
                _ => format!("{}:{}: {}", h.path, h.line, h.text),
            })
            .collect();
        let mut out = for_model(&lines.join("\n"), MAX_SEARCH_CHARS);
        if (r.hits.len() as u64) < r.total {
            out.push_str(&format!("\n[{} of {} shown; page with offset]", r.hits.len(), r.total));
        }
        if r.truncated {
            out.push_str("\n[the search stopped at its file limit; narrow the path]");
        }
        Ok(out)
    }
}
