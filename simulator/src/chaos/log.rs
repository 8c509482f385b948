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
    /// A bookingd's link to PostgreSQL slowed ([`super::link_latency`]).
    DbLatency,
    /// A bookingd's link to the provider slowed ([`super::link_latency`]).
    ProviderLatency,
    /// A slowed link answers at once again.
    LatencyEnd,
    /// Segments between a bookingd and its links dropped ([`super::packet_loss`]).
    PacketLoss,
    /// The links of a lossy bookingd lose nothing again.
    PacketLossEnd,
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
    /// Something about the run worth knowing (kept database, ...); stays last.
    Note,
}

impl ChaosFault {
    /// Every kind, in declaration order.
    pub const ALL: &'static [ChaosFault] = &[
        ChaosFault::CrashAfterCommit,
        ChaosFault::Kill9,
        ChaosFault::Restart,
        ChaosFault::Disconnect,
        ChaosFault::PgTerminateBackends,
        ChaosFault::RedisPoison,
        ChaosFault::RedisStop,
        ChaosFault::RedisRestartEmpty,
        ChaosFault::RedisRestartKept,
        ChaosFault::RedisStall,
        ChaosFault::DbPartition,
        ChaosFault::DbHeal,
        ChaosFault::DbLatency,
        ChaosFault::ProviderLatency,
        ChaosFault::LatencyEnd,
        ChaosFault::PacketLoss,
        ChaosFault::PacketLossEnd,
        ChaosFault::PgStop,
        ChaosFault::PgStart,
        ChaosFault::ProviderCut,
        ChaosFault::ProviderOneWay,
        ChaosFault::WebhookAnswersLost,
        ChaosFault::LinkHeal,
        ChaosFault::PgFailover,
        ChaosFault::PgPromoted,
        ChaosFault::ClockSkew,
        ChaosFault::ClientPause,
        ChaosFault::StaleReplay,
        ChaosFault::Note,
    ];

    /// Its place in [`ChaosFault::ALL`]: a new kind fails to compile here
    /// until it is listed (the test checks the list against it).
    #[cfg(test)]
    fn position(self) -> usize {
        match self {
            ChaosFault::CrashAfterCommit => 0,
            ChaosFault::Kill9 => 1,
            ChaosFault::Restart => 2,
            ChaosFault::Disconnect => 3,
            ChaosFault::PgTerminateBackends => 4,
            ChaosFault::RedisPoison => 5,
            ChaosFault::RedisStop => 6,
            ChaosFault::RedisRestartEmpty => 7,
            ChaosFault::RedisRestartKept => 8,
            ChaosFault::RedisStall => 9,
            ChaosFault::DbPartition => 10,
            ChaosFault::DbHeal => 11,
            ChaosFault::DbLatency => 12,
            ChaosFault::ProviderLatency => 13,
            ChaosFault::LatencyEnd => 14,
            ChaosFault::PacketLoss => 15,
            ChaosFault::PacketLossEnd => 16,
            ChaosFault::PgStop => 17,
            ChaosFault::PgStart => 18,
            ChaosFault::ProviderCut => 19,
            ChaosFault::ProviderOneWay => 20,
            ChaosFault::WebhookAnswersLost => 21,
            ChaosFault::LinkHeal => 22,
            ChaosFault::PgFailover => 23,
            ChaosFault::PgPromoted => 24,
            ChaosFault::ClockSkew => 25,
            ChaosFault::ClientPause => 26,
            ChaosFault::StaleReplay => 27,
            ChaosFault::Note => 28,
        }
    }

    /// Whether CI's chaos step must see it fire: every kind but notes.
    pub fn must_fire(self) -> bool {
        self != ChaosFault::Note
    }
}

/// `fault`'s kebab-case name, as the log, the summary and `--without` write it.
pub fn name(fault: ChaosFault) -> String {
    serde_json::to_value(fault).ok().and_then(|s| s.as_str().map(str::to_string)).unwrap_or_default()
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

#[cfg(test)]
mod tests {
    use super::ChaosFault;

    #[test]
    fn all_lists_every_kind_once_in_order() {
        for (i, k) in ChaosFault::ALL.iter().enumerate() {
            assert_eq!(k.position(), i, "{k:?}");
        }
        // Notes stay last, so a kind left off the end is caught too.
        assert_eq!(ChaosFault::ALL.last(), Some(&ChaosFault::Note));
    }
}
