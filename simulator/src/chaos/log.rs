//! The chaos run's fault log: every real fault applied (and every restart),
//! with its wall time since the run began, as structured entries.

use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;
use tokio::time::Instant;

/// Entries kept at most; later ones are counted, not kept.
const MAX_ENTRIES: usize = 20_000;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChaosFault {
    /// A bookingd exited by itself right after a store commit (fault seam).
    CrashAfterCommit,
    /// A bookingd was sent SIGKILL.
    Kill9,
    /// A bookingd was started again after a crash or a kill.
    Restart,
    /// A client sent a request and reset the connection a few ms later.
    Disconnect,
    /// Every PostgreSQL backend of the run's database was terminated.
    PgTerminateBackends,
    /// The run's seat-map cache entries in Redis were overwritten with garbage.
    RedisPoison,
    /// The run's own Redis was killed (waiting-room runs).
    RedisStop,
    /// The run's own Redis was started again, empty (waiting-room runs).
    RedisRestartEmpty,
    /// The run's own Redis was started again with its data (persistence on: cache-fault runs).
    RedisRestartKept,
    /// The run's own Redis stopped answering for a while (waiting-room runs).
    RedisStall,
    /// A bookingd was cut off from PostgreSQL (its connections reset, new ones refused).
    DbPartition,
    /// A cut-off bookingd reaches PostgreSQL again.
    DbHeal,
    /// A bookingd's link to PostgreSQL slowed ([`super::db_latency`]).
    DbLatency,
    /// A slowed link answers at once again.
    DbLatencyEnd,
    /// The run's own PostgreSQL was stopped `-m immediate` (a server crash).
    PgStop,
    /// The run's own PostgreSQL was started again.
    PgStart,
    /// A bookingd was cut off from the provider ([`super::provider_link`]).
    ProviderCut,
    /// The provider could not reach bookingd: answers lost, webhooks refused; calls still arrived.
    ProviderOneWay,
    /// A bookingd's answers to the provider's webhooks were lost; the webhooks still arrived.
    WebhookAnswersLost,
    /// A provider or webhook link fault ended.
    LinkHeal,
    /// The run's own primary was stopped `-m immediate` for a failover ([`super::db_failover`]).
    PgFailover,
    /// The run's standby was promoted and serves as the primary.
    PgPromoted,
    /// A process life started with its wall clock skewed (libfaketime).
    ClockSkew,
    /// A user paused longer than its hold (its token went stale).
    ClientPause,
    /// A user replayed a checkout with an old hold token.
    StaleReplay,
    /// Something about the run worth knowing (kept database, ...).
    Note,
}

/// One entry.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Wall ms since the run began.
    pub at_ms: u64,
    /// What.
    pub fault: ChaosFault,
    /// The bookingd slot it struck, where it struck one alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<usize>,
    /// Which process, endpoint or user, and how.
    pub detail: String,
}

/// The log; shared by the run's tasks.
pub struct FaultLog {
    start: Instant,
    entries: Mutex<(Vec<Entry>, BTreeMap<ChaosFault, u64>)>,
}

impl FaultLog {
    /// An empty log whose clock starts now.
    pub fn new() -> Self {
        Self { start: Instant::now(), entries: Mutex::new((Vec::new(), BTreeMap::new())) }
    }

    /// When the run began (the client history counts from it too).
    pub fn start(&self) -> Instant {
        self.start
    }

    /// Wall ms since the run began.
    pub fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    /// Records `fault` (counted always, kept up to a bound).
    pub fn record(&self, fault: ChaosFault, detail: impl Into<String>) {
        self.push(fault, None, detail.into());
    }

    /// Records `fault`, which struck bookingd `slot` alone.
    pub fn record_at(&self, fault: ChaosFault, slot: usize, detail: impl Into<String>) {
        self.push(fault, Some(slot), detail.into());
    }

    fn push(&self, fault: ChaosFault, slot: Option<usize>, detail: String) {
        let at_ms = self.now_ms();
        let mut g = self.entries.lock().expect("fault log poisoned");
        *g.1.entry(fault).or_default() += 1;
        if g.0.len() < MAX_ENTRIES {
            g.0.push(Entry { at_ms, fault, slot, detail });
        }
    }

    /// Records a note.
    pub fn note(&self, detail: impl Into<String>) {
        self.record(ChaosFault::Note, detail);
    }

    /// The kept entries, in time order.
    pub fn entries(&self) -> Vec<Entry> {
        self.entries.lock().expect("fault log poisoned").0.clone()
    }

    /// How often each fault happened.
    pub fn counts(&self) -> BTreeMap<ChaosFault, u64> {
        self.entries.lock().expect("fault log poisoned").1.clone()
    }
}

impl Default for FaultLog {
    fn default() -> Self {
        Self::new()
    }
}
