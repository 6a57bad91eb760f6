//! The cache's contract: every test body is written once, as `async fn x(cache: Cache)`, and
//! runs twice, on Redis (127.0.0.1:6379, under a key prefix of its own) and on the in-memory
//! engine (`Cache::in_memory`), so the two cannot drift apart on what callers rely on.
//!
//! Run: `cargo nextest run -p hermes-cache` (Redis must be up: `deploy/dev/ensure-services.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "test code: a failed unwrap fails it")]

mod coordination;
mod counting;
mod signals;

use std::future::Future;

use hermes_cache::Cache;

/// The Redis every developer machine and CI job has (see `deploy/dev/ensure-services.sh`).
const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// Runs `body` on a Redis cache with a prefix no other test uses, then deletes its keys.
pub async fn on_redis<F, Fut>(body: F)
where
    F: FnOnce(Cache) -> Fut,
    Fut: Future<Output = ()>,
{
    let prefix = format!("hermes-contract:{}", uuid::Uuid::now_v7().simple());
    let cache = Cache::connect(REDIS_URL, &prefix).await.unwrap_or_else(|e| {
        panic!("the cache contract needs Redis at {REDIS_URL} (deploy/dev/ensure-services.sh starts it): {e}")
    });
    body(cache).await;
    let client = redis::Client::open(REDIS_URL).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}:*")).query_async(&mut conn).await.unwrap();
    if !keys.is_empty() {
        let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.unwrap();
    }
}

/// Runs `body` on a fresh in-memory cache.
pub async fn in_memory<F, Fut>(body: F)
where
    F: FnOnce(Cache) -> Fut,
    Fut: Future<Output = ()>,
{
    body(Cache::in_memory()).await;
}

/// The roles share the cache across tasks, so on either engine it must be `Send + Sync`; this
/// fails to compile otherwise.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Cache>();
};

/// Generates, for each named body in the calling module, one `#[tokio::test]` per engine:
/// `redis::name` and `memory::name`.
#[macro_export]
macro_rules! contract {
    ($($name:ident),+ $(,)?) => {
        $crate::on_engine!(redis, on_redis, $($name),+);
        $crate::on_engine!(memory, in_memory, $($name),+);
    };
}

/// One engine's half of [`contract!`]: module `$engine` with a test per body, run by `$runner`.
#[macro_export]
macro_rules! on_engine {
    ($engine:ident, $runner:ident, $($name:ident),+) => {
        mod $engine {
            $(#[tokio::test] async fn $name() { $crate::$runner(super::$name).await; })+
        }
    };
}

/// Polls `$cond` (an expression that may `.await`) every 100 ms until it holds, failing after
/// 5 s: for what takes a short expiry to happen, without betting on exact timing.
#[macro_export]
macro_rules! eventually {
    ($what:literal, $cond:expr) => {{
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            if $cond {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "{} did not happen within 5 s", $what);
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }};
}
