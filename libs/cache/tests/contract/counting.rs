//! What is counted: request rates, window counters and the provider-key pools.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hermes_cache::{Cache, KeyHealth, KeyState};
use hermes_core::TenantId;

/// A window so long that a test never straddles two of them.
const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

async fn the_rate_limiter_allows_the_burst_then_refuses_with_a_retry_time(cache: Cache) {
    let limiter = cache.rate_limiter();
    for left in [2, 1, 0] {
        let d = limiter.check("key-1", 3).await.unwrap();
        assert!(d.allowed, "within the burst of 3");
        assert_eq!(d.remaining, left);
    }
    let refused = limiter.check("key-1", 3).await.unwrap();
    assert!(!refused.allowed, "the fourth of 3 a minute is refused");
    // One more is allowed an emission interval (60 s / 3) after the burst began.
    assert!((1..=20_000).contains(&refused.retry_after_ms), "retry after {} ms", refused.retry_after_ms);
    assert!(limiter.check("key-2", 3).await.unwrap().allowed, "scopes are counted apart");
    let unlimited = limiter.check("key-1", 0).await.unwrap();
    assert!(unlimited.allowed && unlimited.remaining == u64::MAX, "0 means no limit");
}

async fn window_counters_count_hits_and_refuse_a_take_past_the_limit(cache: Cache) {
    let windows = cache.window_counters();
    for expected in 1..=3 {
        assert_eq!(windows.hit("reviews", YEAR).await.unwrap(), expected);
    }
    assert_eq!(windows.take("budget", YEAR, 2, 3).await.unwrap(), Some(2));
    assert_eq!(windows.take("budget", YEAR, 2, 3).await.unwrap(), None, "2 more would pass the limit of 3");
    assert_eq!(windows.take("budget", YEAR, 1, 3).await.unwrap(), Some(3), "a refused take added nothing");
    assert_eq!(windows.take("budget", YEAR, 1, 3).await.unwrap(), None);
    assert_eq!(windows.take("other", YEAR, 3, 3).await.unwrap(), Some(3), "names are counted apart");
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn state_of(health: &[KeyHealth], id: &str) -> KeyState {
    health.iter().find(|h| h.id == id).map(|h| h.state).unwrap()
}

async fn the_key_pool_rotates_and_skips_cooling_and_dead_keys(cache: Cache) {
    let pools = cache.key_pools();
    let tenant = TenantId::mint();
    let keys = ids(&["k1", "k2", "k3"]);
    let mut picks = Vec::new();
    for _ in 0..4 {
        picks.push(pools.select(tenant, "openai", "round_robin", &keys).await.unwrap().unwrap());
    }
    assert_eq!(picks, ids(&["k1", "k2", "k3", "k1"]), "round robin in priority order");

    pools.report(tenant, "openai", "k2", Some(Duration::from_secs(60))).await.unwrap();
    let health = pools.health(tenant, "openai", &keys).await.unwrap();
    assert_eq!(state_of(&health, "k2"), KeyState::CoolingDown);
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis();
    let until = health[1].cooling_until_ms.unwrap();
    assert!(u128::from(until) > now, "cooling until {until}, now {now}");
    assert_eq!((health[0].uses, health[1].uses, health[2].uses), (2, 1, 1), "every pick is counted");
    for _ in 0..4 {
        let pick = pools.select(tenant, "openai", "round_robin", &keys).await.unwrap().unwrap();
        assert_ne!(pick, "k2", "a cooling key is skipped");
    }

    pools.report(tenant, "openai", "k1", None).await.unwrap();
    assert_eq!(state_of(&pools.health(tenant, "openai", &keys).await.unwrap(), "k1"), KeyState::Dead);
    for strategy in ["round_robin", "random", "least_used", "fill_first"] {
        let pick = pools.select(tenant, "openai", strategy, &keys).await.unwrap();
        assert_eq!(pick.as_deref(), Some("k3"), "{strategy}: only k3 is usable");
    }
    pools.report(tenant, "openai", "k3", None).await.unwrap();
    assert_eq!(pools.select(tenant, "openai", "round_robin", &keys).await.unwrap(), None, "none usable");
    assert_eq!(pools.select(tenant, "other", "round_robin", &[]).await.unwrap(), None, "no candidates");
    let elsewhere = pools.select(tenant, "anthropic", "round_robin", &keys).await.unwrap();
    assert_eq!(elsewhere.as_deref(), Some("k1"), "pools are per provider");
}

async fn least_used_evens_out_and_a_cooldown_ends_by_itself(cache: Cache) {
    let pools = cache.key_pools();
    let tenant = TenantId::mint();
    let keys = ids(&["a", "b"]);
    let mut picks = Vec::new();
    for _ in 0..4 {
        picks.push(pools.select(tenant, "p", "least_used", &keys).await.unwrap().unwrap());
    }
    assert_eq!(picks, ids(&["a", "b", "a", "b"]), "the least used, ties to the first");

    pools.report(tenant, "p", "a", Some(Duration::from_secs(1))).await.unwrap();
    assert_eq!(pools.select(tenant, "p", "fill_first", &keys).await.unwrap().as_deref(), Some("b"));
    crate::eventually!(
        "the cooled-down key coming back",
        pools.select(tenant, "p", "fill_first", &keys).await.unwrap().as_deref() == Some("a")
    );
    assert_eq!(state_of(&pools.health(tenant, "p", &keys).await.unwrap(), "a"), KeyState::Ready);
}

crate::contract!(
    the_rate_limiter_allows_the_burst_then_refuses_with_a_retry_time,
    window_counters_count_hits_and_refuse_a_take_past_the_limit,
    the_key_pool_rotates_and_skips_cooling_and_dead_keys,
    least_used_evens_out_and_a_cooldown_ends_by_itself,
);
