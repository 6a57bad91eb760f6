//! Building the toolkit when the worker starts: each service that cannot be built is logged
//! and its tools are left out, rather than the worker failing to start.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_tools::ToolRegistry;

use super::{ToolLimits, Toolkit};
use crate::WorkerContext;

/// The toolkit of this worker, with its MCP and browser reapers running until `shutdown`.
pub(crate) fn toolkit(ctx: &WorkerContext, shutdown: &CancellationToken) -> Toolkit {
    let cfg = &ctx.config;
    let builtin = builtin_tools(ctx);
    let (web, web_allowance) = web_services(ctx);
    let mcp = match crate::tools::mcp::servers(&cfg.mcp, ctx.sandboxes.clone()) {
        Ok(servers) => {
            hermes_telemetry::tasks::spawn(
                "worker_mcp_reaper",
                crate::tools::mcp::reap(servers.clone(), shutdown.clone()),
            );
            Some(servers)
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot build the MCP client; agents' MCP servers are off");
            None
        }
    };
    let image_gen = match hermes_media::ImageGenerator::new(&cfg.image_gen, &cfg.outbound.trusted_private_hosts) {
        Ok(generator) => Some(Arc::new(generator)),
        Err(e) => {
            tracing::error!(error = %e, "cannot build the image service's clients; image_generate is off");
            None
        }
    };
    let speaker = speaker(cfg);
    let browsers = Arc::new(hermes_browser::Browsers::new(ctx.sandboxes.clone(), &cfg.browser));
    hermes_telemetry::tasks::spawn(
        "worker_browser_reaper",
        crate::tools::browser::reap(browsers.clone(), shutdown.clone()),
    );
    Toolkit {
        builtin,
        store: ctx.store.clone(),
        sandboxes: ctx.sandboxes.clone(),
        secrets: ctx.secrets.clone(),
        limits: limits(cfg),
        child_slots: ctx.cache.child_slots(),
        broker: ctx.broker.clone(),
        window_counters: ctx.cache.window_counters(),
        skills: Default::default(),
        web,
        web_allowance,
        mcp,
        image_gen,
        speaker,
        browsers: Some(browsers),
        sandbox_secrets: crate::sandbox_secrets::SandboxSecrets::new(
            ctx.store.clone(),
            ctx.secrets.clone(),
            &cfg.sandbox,
        )
        .map(Arc::new),
    }
}

fn limits(cfg: &hermes_config::HermesConfig) -> ToolLimits {
    ToolLimits {
        prewarm: cfg.sandbox.prewarm,
        exec_timeout_seconds: cfg.sandbox.exec_timeout_seconds,
        memory_chars: cfg.memory.memory_char_limit,
        user_chars: cfg.memory.user_char_limit,
        children_per_tenant: cfg.worker.max_children_per_tenant,
        delegation_max_depth: cfg.worker.delegation_max_depth,
    }
}

/// The built-in tools every turn chooses from, with background processes marked in Redis.
fn builtin_tools(ctx: &WorkerContext) -> ToolRegistry {
    let sandbox = &ctx.config.sandbox;
    let activity = crate::background::RedisBackgroundActivity {
        marks: ctx.cache.background_marks(),
        store: ctx.store.clone(),
        lifetime: Duration::from_secs(sandbox.idle_seconds.saturating_mul(4).max(60)),
    };
    hermes_toolbox::builtin_registry(ctx.sandboxes.clone(), sandbox.exec_timeout_seconds, Some(Arc::new(activity)))
}

/// The speech service, when `[tts]` names one it can call.
fn speaker(cfg: &hermes_config::HermesConfig) -> Option<Arc<hermes_media::Speaker>> {
    let trusted = &cfg.outbound.trusted_private_hosts;
    match hermes_media::Speaker::new(&cfg.tts, cfg.stt.openai_api_key.as_deref(), trusted) {
        Ok(speaker) => match speaker.unusable() {
            None => Some(Arc::new(speaker)),
            Some(why) => {
                tracing::info!(reason = %why, "text to speech is off");
                None
            }
        },
        Err(e) => {
            tracing::error!(error = %e, "cannot build the speech client; text to speech is off");
            None
        }
    }
}

/// The web toolset's services and the tenants' daily allowance.
fn web_services(ctx: &WorkerContext) -> (Option<Arc<hermes_web::Web>>, Arc<dyn hermes_web::Allowance>) {
    let cfg = &ctx.config;
    let web = match hermes_web::Web::new(&cfg.web, &cfg.outbound.trusted_private_hosts) {
        Ok(web) => Some(Arc::new(web)),
        Err(e) => {
            tracing::error!(error = %e, "cannot build the web clients; the web toolset is off");
            None
        }
    };
    let allowance = crate::tools::web::RedisAllowance {
        counters: ctx.cache.window_counters(),
        store: ctx.store.clone(),
        defaults: (cfg.web.searches_per_day, cfg.web.extracts_per_day),
    };
    (web, Arc::new(allowance))
}
