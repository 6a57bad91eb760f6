//! The one way the service starts a background task. A task started with bare `tokio::spawn`
//! that panics is only a line on stderr, with nothing saying which task died; here its name
//! is logged and counted (`hermes_task_panics_total{task}`, for an alert), and the panic goes
//! on to its `JoinHandle` as before, so a supervisor that awaits it still sees it.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use tokio::task::JoinHandle;

/// Starts `work` as a background task called `name` (a short, fixed label: it becomes a
/// metric label).
pub fn spawn<F>(name: &'static str, work: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    #[expect(clippy::disallowed_methods, reason = "the one place tasks are started; see the module doc")]
    tokio::spawn(async move {
        match AssertUnwindSafe(work).catch_unwind().await {
            Ok(done) => done,
            Err(panic) => {
                tracing::error!(task = name, "a background task panicked");
                ::metrics::counter!("hermes_task_panics_total", "task" => name).increment(1);
                std::panic::resume_unwind(panic)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn a_panicking_task_still_reports_its_panic_to_whoever_awaits_it() {
        let done = super::spawn("test_ok", async { 7 }).await.unwrap();
        assert_eq!(done, 7);
        let failed = super::spawn("test_panic", async { panic!("boom") }).await.unwrap_err();
        assert!(failed.is_panic(), "the JoinHandle sees the panic");
    }
}
