//! Marks sessions with background processes in Redis (`hermes_cache::BackgroundMarks`), so the
//! gateway does not reset a chat while one runs.

use std::time::Duration;

use futures_util::future::BoxFuture;

use hermes_cache::BackgroundMarks;
use hermes_toolbox::BackgroundActivity;
use hermes_tools::ToolCtx;

pub(crate) struct RedisBackgroundActivity {
    pub marks: BackgroundMarks,
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

    fn all_finished(&self, ctx: &ToolCtx) -> BoxFuture<'static, ()> {
        let (marks, tenant, session) = (self.marks.clone(), ctx.tenant_id, ctx.session_id);
        Box::pin(async move {
            if let Err(e) = marks.clear(tenant, session).await {
                tracing::debug!(error = %e, "cannot clear the session's background mark");
            }
        })
    }
}
