//! Exponential backoff with jitter for retryable provider errors.

use std::time::Duration;

use crate::LlmError;

/// How often and how patiently to retry.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First delay; doubles each retry.
    pub base: Duration,
    /// No single delay is longer.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_retries: 3, base: Duration::from_secs(1), max_delay: Duration::from_secs(60) }
    }
}

impl RetryPolicy {
    /// The delay before retry number `retry` (1-based) after `error`; a provider's
    /// `Retry-After` wins when it is longer.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Duration {
        let exp = self.base.saturating_mul(2u32.saturating_pow(retry.saturating_sub(1)));
        // +-25 % jitter so many workers hit by one outage do not retry in lockstep.
        let jittered = exp.mul_f64(rand::random_range(0.75..1.25));
        // A provider's Retry-After wins when it asks for longer.
        let wanted = match error.retry_after {
            Some(after) => jittered.max(after),
            None => jittered,
        };
        wanted.min(self.max_delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_and_respect_retry_after_and_the_cap() {
        let p = RetryPolicy { max_retries: 5, base: Duration::from_millis(100), max_delay: Duration::from_secs(2) };
        let e = LlmError::timeout();
        let d1 = p.delay(1, &e);
        let d3 = p.delay(3, &e);
        assert!(d1 >= Duration::from_millis(75) && d1 <= Duration::from_millis(125));
        assert!(d3 >= Duration::from_millis(300) && d3 <= Duration::from_millis(500));
        let rl = LlmError::from_status(429, "", Some(Duration::from_secs(1)));
        assert!(p.delay(1, &rl) >= Duration::from_secs(1));
        assert_eq!(p.delay(20, &e), Duration::from_secs(2));
    }
}
