//! The `browser` toolset: a headless Chromium that runs inside the agent's sandbox (so its
//! traffic takes the sandbox's egress rules, and it dies with the sandbox), driven from the
//! worker over the DevTools protocol. sandboxd starts it (`hermes_sandbox::process`) with
//! `--remote-debugging-pipe`, its CDP pipe wired to the program's stdio, so no port is opened.
//!
//! One browser per conversation (tenant, agent, session), kept between turns on the worker
//! that opened it and closed after `browser.inactivity_seconds` unused (upstream's 120 s).

mod cdp;
mod page;
pub mod snapshot;
mod tools;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hermes_config::BrowserConfig;
use hermes_core::{AgentId, SessionId, TenantId};
use hermes_sandbox::proto::StdioStart;
use hermes_sandbox::{SandboxKey, Sandboxes};

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
}

/// The sandbox's egress relay (`hermes_sandbox::PROXY_ENV`); the sandbox's own loopback is
/// reached directly, every other address through the relay.
const PROXY_FLAGS: [&str; 2] =
    ["--proxy-server=http://127.0.0.1:3128", "--proxy-bypass-list=<-loopback>;localhost;127.0.0.1;[::1]"];

/// The flags of a browser profile in `dir`. `--no-sandbox`: the tenant's sandbox is the
/// isolation (Chromium's own needs user namespaces a container rarely has), as upstream
/// sets it for containers.
fn flags(dir: &str, extra: &[String]) -> Vec<String> {
    let mut flags: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--mute-audio",
        "--window-size=1280,900",
        "--remote-debugging-pipe",
    ]
    .iter()
    .map(|f| (*f).to_owned())
    .collect();
    flags.extend(PROXY_FLAGS.iter().map(|f| (*f).to_owned()));
    flags.push(format!("--user-data-dir={dir}"));
    flags.extend(extra.iter().cloned());
    flags.push("about:blank".into());
    flags
}

/// The sandbox program: the browser with its CDP pipe (fds 3 and 4) on stdin and stdout.
fn start(config: &BrowserConfig) -> StdioStart {
    let dir = format!("/tmp/hermes-browser-{}", uuid::Uuid::now_v7().simple());
    let mut args = vec!["-c".to_owned(), "exec \"$0\" \"$@\" 3<&0 4>&1 1>/dev/null".to_owned(), config.command.clone()];
    args.extend(flags(&dir, &config.extra_args));
    StdioStart { command: "sh".into(), args, env: Default::default(), as_mcp_user: false }
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
        let sandbox = SandboxKey { tenant: key.tenant, agent: key.agent };
        let process = hermes_sandbox::process::spawn(self.sandboxes.as_ref(), sandbox, start(&self.config))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_speaks_cdp_on_its_stdio_and_goes_out_through_the_sandbox_relay() {
        let start = start(&BrowserConfig { extra_args: vec!["--lang=de".into()], ..BrowserConfig::default() });
        assert_eq!(
            (start.command.as_str(), start.args[1].as_str()),
            ("sh", "exec \"$0\" \"$@\" 3<&0 4>&1 1>/dev/null")
        );
        assert_eq!(start.args[2], "chromium");
        assert!(start.args.contains(&"--remote-debugging-pipe".to_owned()));
        assert!(start.args.contains(&"--proxy-server=http://127.0.0.1:3128".to_owned()));
        assert_eq!(start.args.last().map(String::as_str), Some("about:blank"));
        assert!(start.args.iter().any(|a| a == "--lang=de"));
    }
}
