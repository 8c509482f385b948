//! Clocks: the time a component believes. Simulated code never reads the OS
//! clock; it is handed a [`Clock`].

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of "now", in ms since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// The current time in ms since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// A clock that only moves when told to: tests and the differential test.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicI64,
}

impl ManualClock {
    /// A clock reading `start_ms`.
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(Self { now_ms: AtomicI64::new(start_ms) })
    }
    /// Moves the clock forward by `delta_ms` (>= 0).
    pub fn advance_ms(&self, delta_ms: i64) {
        assert!(delta_ms >= 0, "a clock never goes back");
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
    /// Sets the clock to `now_ms`, which must not be earlier than the current reading.
    pub fn set_ms(&self, now_ms: i64) {
        let prev = self.now_ms.swap(now_ms, Ordering::SeqCst);
        assert!(now_ms >= prev, "a clock never goes back");
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// The operating system's wall clock. Production only: never in simulated code.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[allow(clippy::disallowed_methods)] // the production clock module
    fn now_ms(&self) -> i64 {
        let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("system clock before 1970");
        i64::try_from(d.as_millis()).expect("time fits in i64 ms")
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now_ms(&self) -> i64 {
        (**self).now_ms()
    }
}
