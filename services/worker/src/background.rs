//! Marks sessions with background processes in Redis (`hermes_cache::BackgroundMarks`), so the
//! gateway does not reset a chat while one runs, and records the watches on processes that
//! should wake the agent (polled by `crate::watches`).

use std::time::Duration;

use futures_util::future::BoxFuture;

use hermes_cache::BackgroundMarks;
use hermes_store::process_watches::Watched;
use hermes_toolbox::{BackgroundActivity, ProcessWatch};
use hermes_tools::ToolCtx;

pub(crate) struct RedisBackgroundActivity {
    pub marks: BackgroundMarks,
    pub store: hermes_store::Store,
    /// How long a process can outlive its sandbox's last use: the reaper keeps a sandbox with
    /// processes up to four idle periods.
    pub lifetime: Duration,
}

impl BackgroundActivity for RedisBackgroundActivity {
    fn started(&self, ctx: &ToolCtx) -> BoxFuture<'static, ()> {
        let (marks, lifetime, tenant, session) = (self.marks.clone(), self.lifetime, ctx.tenant_id, ctx.session_id);
        Box::pin(async move {
            if let Err(e) = marks.mark(tenant, session, lifetime).await {
                tracing::warn!(error = %e, "cannot mark the session's background process");
            }
        })
    }

    /// Only a turn someone attends is woken later: a cron run's or a webhook's notice would run
    /// past the limits its job or hook set.
    fn watch(&self, ctx: &ToolCtx, watch: ProcessWatch) -> BoxFuture<'static, Result<(), String>> {
        let (store, ctx) = (self.store.clone(), ctx.clone());
        Box::pin(async move {
            if !ctx.interaction.enabled {
                return Err("only a conversation someone takes part in is woken".into());
            }
            let unavailable = |e: hermes_store::StoreError| {
                tracing::warn!(error = %e, "cannot record a process watch");
                "it could not be recorded".to_owned()
            };
            let new = hermes_store::process_watches::NewWatch {
                agent: ctx.agent_id,
                session: ctx.session_id,
                turn: ctx.turn_id,
                workspace: ctx.workspace,
                process_id: &watch.process_id,
                command: &watch.command,
                patterns: &watch.patterns,
                notify_on_complete: watch.notify_on_complete,
            };
            match store.automation().watch_process(ctx.tenant_id, &new).await.map_err(unavailable)? {
                Watched::Watching => Ok(()),
                Watched::FromNotice => Err("a notice's own turn may not start another watch".into()),
            }
        })
    }

    fn all_finished(&self, ctx: &ToolCtx) -> BoxFuture<'static, ()> {
        let (marks, tenant, session) = (self.marks.clone(), ctx.tenant_id, ctx.session_id);
        Box::pin(async move {
            if let Err(e) = marks.clear(tenant, session).await {
                tracing::debug!(error = %e, "cannot clear the session's background mark");
            }
        })
    }
}
