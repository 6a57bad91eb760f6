//! The `browser` toolset for a turn: upstream's `browser_*` tools from `hermes_browser`, and
//! `browser_vision` here, which has the agent's vision model look at a screenshot and keeps
//! the screenshot with the turn, for the answer to share (`MEDIA:screenshots/...`).

use std::sync::Arc;

use serde_json::{Value, json};

use hermes_browser::{BrowserTurn, Browsers};
use hermes_core::ToolsetName;
use hermes_store::Store;
use hermes_store::turn_files::TurnFile;
use hermes_tools::{SimpleTool, ToolCtx, ToolError, ToolRegistry, ToolSpec, object_schema, required_str};

use crate::models::Models;
use crate::tools::Toolkit;

/// `browser_vision`.
pub(crate) struct BrowserVision {
    pub turn: Arc<BrowserTurn>,
    pub models: Models,
    /// Where the screenshot is kept.
    pub store: Store,
}

impl SimpleTool for BrowserVision {
    const SPEC: ToolSpec = ToolSpec::new(
        "browser_vision",
        ToolsetName::Browser,
        "Take a screenshot of the page and have a vision model answer a question about it (layout, charts, \
         CAPTCHAs, anything the snapshot does not say). The screenshot is kept: put MEDIA:<screenshot_path> on a \
         line of its own in your answer to show it to the user.",
    )
    .read_only();

    fn parameters(&self) -> Value {
        object_schema(
            json!({ "question": { "type": "string", "description": "What you want to know about what the page shows." } }),
            &["question"],
        )
    }

    async fn run(&self, ctx: &ToolCtx, args: Value) -> Result<String, ToolError> {
        let question = required_str(&args, "question")?.to_owned();
        let page = match self.turn.page(ctx) {
            Ok(page) => page,
            Err(why) => return Ok(json!({"success": false, "error": why}).to_string()),
        };
        let shot = match page.screenshot().await {
            Ok(shot) => shot,
            Err(e) => return Ok(json!({"success": false, "error": e.to_string()}).to_string()),
        };
        let id = hermes_tools::text::call_stem(&ctx.call_id);
        let name = format!("screenshot-{id}.png");
        let target = format!("screenshots/{name}");
        let file = TurnFile { target: target.clone(), name, mime: "image/png".into(), data: Ok(shot.clone()) };
        let kept = self.store.turns().save_turn_file(ctx.tenant_id, ctx.turn_id, &file).await;
        let prompt = format!(
            "You are looking at a screenshot of a web page. Describe what it shows, then answer the following question:\n\n{question}"
        );
        let analysis = crate::tools::vision::look_at(&self.models, shot, &prompt).await;
        let mut out = match analysis {
            Ok(analysis) => json!({"success": true, "analysis": analysis}),
            Err(why) => json!({"success": false, "error": format!("the screenshot could not be analysed: {why}")}),
        };
        match kept {
            Ok(()) => out["screenshot_path"] = json!(target),
            Err(e) => tracing::warn!(error = %e, "cannot keep the screenshot"),
        }
        Ok(out.to_string())
    }
}

/// Adds the browser tools to `tools` for this turn.
pub(crate) fn register(kit: &Toolkit, models: &Models, tools: &mut ToolRegistry) {
    let Some(browsers) = kit.browsers.clone() else { return };
    // Long snapshots are saved where read_file can page through them, when this turn has it.
    let spill = kit.spill_for(tools);
    let turn = Arc::new(BrowserTurn { browsers, spill });
    hermes_browser::register(turn.clone(), tools);
    tools.register(Arc::new(BrowserVision { turn, models: models.clone(), store: kit.store.clone() }));
}

/// Closes idle browsers every 30 s until `shutdown`, then all of them.
pub(crate) async fn reap(browsers: Arc<Browsers>, shutdown: tokio_util::sync::CancellationToken) {
    let mut rounds = crate::every::Every::new(std::time::Duration::from_secs(30), shutdown);
    while rounds.next().await {
        let closed = browsers.close_idle().await;
        if closed > 0 {
            tracing::info!(closed, "closed idle browsers");
        }
    }
    browsers.close_all().await;
}
