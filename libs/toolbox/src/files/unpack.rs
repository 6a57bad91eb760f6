//! `unpack_archive`: sandboxd's `Unpack`, which unpacks a zip, tar or tar.gz in a child
//! process as the sandbox user within its limits and reports what it wrote and skipped. Like
//! the other file tools, it checkpoints the workspace before the turn's first change.

use serde_json::{Value, json};

use hermes_core::ToolsetName;
use hermes_sandbox::proto::{UnpackRequest, UnpackResponse};
use hermes_tools::text::redact;
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolSpec, object_schema, required_str};

use super::{FileTools, fail, str_arg};

/// `unpack_archive`.
pub struct UnpackArchive(pub FileTools);

impl SimpleTool for UnpackArchive {
    const SPEC: ToolSpec = ToolSpec::new(
        "unpack_archive",
        ToolsetName::File,
        "Unpack a zip, tar or tar.gz (into a directory named after it, or dest). Skips links, \
                existing files and paths leaving dest; refuses over 10,000 entries, 1 GiB or 100:1 compression.",
    )
    .sandboxed();

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": { "type": "string" },
                "dest": { "type": "string" }
            }),
            &["path"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let path = ctx.in_workdir(required_str(&args, "path")?);
        let dest = str_arg(&args, "dest").map(|d| ctx.in_workdir(d)).unwrap_or_default();
        let client = self.0.client(ctx).await?;
        self.0.checkpoint_once(ctx, &client, "unpack_archive").await?;
        let request = UnpackRequest { path: path.clone(), dest };
        let r = client.grpc().unpack(request).await.map_err(fail)?.into_inner();
        Ok(redact(&summary(&path, &r), &[]))
    }
}

/// What the model is told: the counts, each skipped entry and why, and an early stop.
fn summary(path: &str, r: &UnpackResponse) -> String {
    let mut out = format!(
        "Unpacked {path} into {}: {} files ({} bytes), {} directories made.",
        r.dest, r.files, r.bytes, r.directories
    );
    if r.skipped_count > 0 {
        out.push_str(&format!("\nSkipped {}:", r.skipped_count));
        for skip in &r.skipped {
            out.push_str(&format!("\n- {}: {}", skip.path, skip.reason));
        }
        let unnamed = r.skipped_count.saturating_sub(r.skipped.len() as u64);
        if unnamed > 0 {
            out.push_str(&format!("\n- ... and {unnamed} more"));
        }
    }
    if !r.stopped.is_empty() {
        out.push_str(&format!("\nStopped before the end: {}. The files written so far stay.", r.stopped));
    }
    out
}

#[cfg(test)]
mod tests {
    use hermes_sandbox::proto::{UnpackResponse, UnpackSkip};

    use super::summary;

    #[test]
    fn the_model_is_told_what_was_written_what_was_skipped_and_why() {
        let r = UnpackResponse {
            dest: "/workspace/inbox/site".into(),
            files: 12,
            directories: 3,
            bytes: 4096,
            skipped: vec![UnpackSkip {
                path: "../evil".into(),
                reason: "its path leads out of the destination (..)".into(),
            }],
            skipped_count: 3,
            stopped: "it unpacked to more than 100 times its own size (a zip bomb?)".into(),
        };
        assert_eq!(
            summary("inbox/site.zip", &r),
            "Unpacked inbox/site.zip into /workspace/inbox/site: 12 files (4096 bytes), 3 directories made.\n\
             Skipped 3:\n\
             - ../evil: its path leads out of the destination (..)\n\
             - ... and 2 more\n\
             Stopped before the end: it unpacked to more than 100 times its own size (a zip bomb?). The files written so far stay."
        );
        let clean = UnpackResponse { dest: "/w/a".into(), files: 1, bytes: 2, ..UnpackResponse::default() };
        assert_eq!(summary("a.zip", &clean), "Unpacked a.zip into /w/a: 1 files (2 bytes), 0 directories made.");
    }
}
