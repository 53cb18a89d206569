//! The time a writer stamps and an age rule judges by, injectable.
//!
//! Commit timestamps (the manifest's `timestamp`, which Lance's cleanup judges a version's
//! age by), index and FRI `created_at`, and every "older than" rule read [`Clock::now`], so a
//! test (or an engine with its own time source) moves time instead of sleeping.

use std::fmt::Debug;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Debug + Send + Sync {
    fn now(&self) -> SystemTime;

    /// Milliseconds since the epoch (0 before it).
    fn now_ms(&self) -> i64 {
        millis_since_epoch(self.now())
    }

    /// Now, as a manifest's `timestamp` field holds it.
    fn timestamp(&self) -> lancet_proto::prost_types::Timestamp {
        let d = self.now().duration_since(UNIX_EPOCH).unwrap_or_default();
        lancet_proto::prost_types::Timestamp {
            seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
        }
    }
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that reads what it is set to, and moves only when told.
#[derive(Debug)]
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    pub fn new(at: SystemTime) -> Self {
        Self(Mutex::new(at))
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `t` in milliseconds since the epoch (0 before it, saturating).
pub fn millis_since_epoch(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).map_or(0, millis)
}

/// `d` in milliseconds, saturating.
pub fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let c = ManualClock::new(UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(c.now_ms(), 10_000);
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now_ms(), 11_500);
        let t = c.timestamp();
        assert_eq!((t.seconds, t.nanos), (11, 500_000_000));
        assert!(SystemClock.now_ms() > 1_700_000_000_000);
    }
}
