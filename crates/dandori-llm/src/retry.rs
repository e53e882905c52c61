//! Backoff: exponential with jitter, honouring the server's `retry-after-ms` /
//! `Retry-After`. Whether to retry at all is `LlmError::retry_decision`.

use std::time::Duration;

use rand::Rng;

pub use crate::error::RetryDecision;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    pub base: Duration,
    pub max: Duration,
}

impl Backoff {
    /// Delay before retry number `retry` (1-based). A server hint wins (capped at
    /// `max`); otherwise `base * 2^(retry-1)` scaled by a jitter factor in [0.5, 1].
    pub fn delay(&self, retry: u32, server_hint: Option<Duration>) -> Duration {
        if let Some(hint) = server_hint {
            return hint.min(self.max);
        }
        let exp = self
            .base
            .saturating_mul(2u32.saturating_pow(retry.saturating_sub(1).min(16)));
        let capped = exp.min(self.max);
        let jitter: f64 = rand::rng().random_range(0.5..=1.0);
        capped.mul_f64(jitter)
    }
}

/// `retry-after-ms` (milliseconds, preferred: finer) or `Retry-After` (seconds; an
/// HTTP date is ignored, leaving the exponential backoff).
pub fn server_hint(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    if let Some(secs) = get("retry-after").and_then(|v| v.parse::<f64>().ok())
        && secs.is_finite()
        && secs >= 0.0
    {
        return Some(Duration::from_secs_f64(secs));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    #[test]
    fn exponential_with_jitter_and_cap() {
        let b = Backoff {
            base: Duration::from_millis(100),
            max: Duration::from_millis(1000),
        };
        for _ in 0..50 {
            let d1 = b.delay(1, None);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100));
            let d3 = b.delay(3, None);
            assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400));
            assert!(b.delay(30, None) <= Duration::from_millis(1000));
        }
        assert_eq!(
            b.delay(1, Some(Duration::from_secs(5))),
            Duration::from_millis(1000)
        );
        assert_eq!(
            b.delay(4, Some(Duration::from_millis(7))),
            Duration::from_millis(7)
        );
    }

    #[test]
    fn prefers_retry_after_ms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(server_hint(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(server_hint(&h), Some(Duration::from_millis(250)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(server_hint(&date), None);
    }
}
