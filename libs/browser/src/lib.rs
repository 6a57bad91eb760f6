//! The `browser` toolset: a headless Chromium that runs inside the agent's sandbox (so its
//! traffic takes the sandbox's egress rules, and it dies with the sandbox), driven from the
//! worker over the DevTools protocol. sandboxd starts it (`hermes_sandbox::process`) with
//! `--remote-debugging-pipe`, its CDP pipe wired to the program's stdio, so no port is opened.
//!
//! One browser per conversation (tenant, agent, session), kept between turns on the worker
//! that opened it and closed after `browser.inactivity_seconds` unused (upstream's 120 s).
//! Its page lives in an in-memory browser context with downloads denied, so no cookie or
//! download reaches the disk that other conversations' programs share; the browser refuses
//! `file://` (`launch`), and `browser_cdp` sends only allow-listed commands (`allow`).

mod allow;
mod cdp;
mod launch;
mod page;
pub mod snapshot;
mod tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_config::BrowserConfig;
use hermes_core::{AgentId, SessionId, TenantId};
use hermes_sandbox::{SandboxKey, Sandboxes};

pub use allow::CdpRefusal;
pub use cdp::{Cdp, CdpError, ConsoleEntry, Dialog};
pub use page::{BrowserError, Outcome, Page};
pub use tools::{
    BrowserBack, BrowserClick, BrowserConsole, BrowserDialog, BrowserGetImages, BrowserNavigate, BrowserPress,
    BrowserScroll, BrowserSnapshot, BrowserTurn, BrowserType, register,
};

/// Whose browser it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BrowserKey {
    pub tenant: TenantId,
    pub agent: AgentId,
    pub session: SessionId,
    /// The sandbox the browser runs in (its profile is that workspace's).
    pub workspace: hermes_core::Workspace,
}

/// The browsers this worker holds.
pub struct Browsers {
    sandboxes: Arc<dyn Sandboxes>,
    config: BrowserConfig,
    open: Mutex<HashMap<BrowserKey, Arc<Page>>>,
    /// One launch at a time per key.
    launching: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Browsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browsers").finish_non_exhaustive()
    }
}

impl Browsers {
    pub fn new(sandboxes: Arc<dyn Sandboxes>, config: &BrowserConfig) -> Self {
        Self { sandboxes, config: config.clone(), open: Mutex::default(), launching: tokio::sync::Mutex::new(()) }
    }

    pub fn config(&self) -> &BrowserConfig {
        &self.config
    }

    /// The conversation's browser, if one is open and alive.
    pub fn existing(&self, key: BrowserKey) -> Option<Arc<Page>> {
        let mut open = self.open.lock().ok()?;
        match open.get(&key) {
            Some(page) if page.closed().is_none() => Some(page.clone()),
            Some(_) => {
                open.remove(&key);
                None
            }
            None => None,
        }
    }

    /// The conversation's browser, started in the agent's sandbox when there is none.
    pub async fn page(&self, key: BrowserKey) -> Result<Arc<Page>, BrowserError> {
        if let Some(page) = self.existing(key) {
            return Ok(page);
        }
        let _one = self.launching.lock().await;
        if let Some(page) = self.existing(key) {
            return Ok(page);
        }
        let sandbox = SandboxKey { tenant: key.tenant, agent: key.agent, workspace: key.workspace };
        let process = hermes_sandbox::process::spawn(self.sandboxes.as_ref(), sandbox, launch::start(&self.config))
            .await
            .map_err(|e| BrowserError::Refused(format!("the browser could not start: {e}")))?;
        let ended = process.ended.clone();
        let cdp = Cdp::start(process.io, move || ended.lock().ok().and_then(|w| w.clone()));
        let page = match tokio::time::timeout(Duration::from_secs(30), Page::open(cdp)).await {
            Ok(Ok(page)) => Arc::new(page),
            Ok(Err(e)) => return Err(BrowserError::Refused(format!("the browser could not start: {e}"))),
            Err(_) => return Err(BrowserError::Refused("the browser did not start within 30 s".into())),
        };
        if let Ok(mut open) = self.open.lock() {
            open.insert(key, page.clone());
        }
        tracing::info!(session.id = %key.session, "browser started");
        Ok(page)
    }

    /// Closes browsers unused past the inactivity limit (and forgets dead ones); how many.
    pub async fn close_idle(&self) -> usize {
        let limit = Duration::from_secs(self.config.inactivity_seconds.max(10));
        let idle: Vec<Arc<Page>> = match self.open.lock() {
            Ok(mut open) => {
                let keys: Vec<BrowserKey> = open
                    .iter()
                    .filter(|(_, p)| p.closed().is_some() || p.idle_for() > limit)
                    .map(|(k, _)| *k)
                    .collect();
                keys.iter().filter_map(|k| open.remove(k)).collect()
            }
            Err(_) => Vec::new(),
        };
        for page in &idle {
            page.close().await;
        }
        idle.len()
    }

    /// Closes every browser (the worker is stopping).
    pub async fn close_all(&self) {
        let all: Vec<Arc<Page>> = self.open.lock().map(|mut o| o.drain().map(|(_, p)| p).collect()).unwrap_or_default();
        for page in all {
            page.close().await;
        }
    }
}
