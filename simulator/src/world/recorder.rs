//! The run's recorder: one shared trace that virtual users, fault injection
//! and the store (as a [`StoreObserver`]) append to, in the order things
//! happen in the single-threaded simulation.

use booking::model::{Compensation, CompensationId, EventId, Order, OrderId, Seat, UserId};
use booking::store::{Presented, SeatWriteCause, StoreObserver};
use invariants::trace::{
    Authority, ClientOp, CompensationChange, FaultEvent, OpId, OpResult, OrderChange, PaymentEvent, PhaseMark,
    SeatChange, Trace, TraceEvent, TraceKind,
};
use std::sync::{Arc, Mutex};

/// Bound on one run's trace length: the brief's 100,000-user on-sale
/// (`scenarios/bench/onsale-rush-full.toml`) records about 3.5 million
/// events, most of them its queue polls (each judged by the auditor).
pub const TRACE_LIMIT_EVENTS: usize = 8_000_000;

#[derive(Debug)]
struct Inner {
    trace: Trace,
    next_op_id: OpId,
    overflowed: bool,
    /// The events were taken ([`Recorder::take_events`]): recording is over.
    taken: bool,
}

/// A shared, cloneable handle on the run's trace. `at_ms` arguments are the
/// simulated time in ms since the simulation's epoch.
#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    epoch_ms: i64,
}

impl Recorder {
    /// An empty recorder; store times are converted to trace times by subtracting `epoch_ms`.
    pub fn new(epoch_ms: i64) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                trace: Trace::new(TRACE_LIMIT_EVENTS),
                next_op_id: 0,
                overflowed: false,
                taken: false,
            })),
            epoch_ms,
        }
    }

    fn push(&self, at_ms: i64, kind: TraceKind) -> Option<u64> {
        let mut g = self.inner.lock().expect("recorder poisoned");
        assert!(!g.taken, "recorded after the trace was taken: {kind:?}");
        match g.trace.record(at_ms, kind) {
            Ok(seq) => Some(seq),
            Err(_) => {
                g.overflowed = true;
                None
            }
        }
    }

    /// Simulated time now, ms since the epoch (0 outside a host).
    pub fn now_ms() -> i64 {
        turmoil::sim_elapsed().map(|d| i64::try_from(d.as_millis()).expect("fits")).unwrap_or(0)
    }

    /// Records a client's request to service host `host` (`svc<host>`); returns its op id.
    pub fn invoke(&self, client: &str, op: ClientOp, host: Option<u32>) -> OpId {
        let op_id = {
            let mut g = self.inner.lock().expect("recorder poisoned");
            g.next_op_id += 1;
            g.next_op_id
        };
        self.push(Self::now_ms(), TraceKind::Invoke { op_id, client: UserId::from(client), op, host });
        op_id
    }

    /// Records a successful answer with its HTTP status.
    pub fn ok(&self, op_id: OpId, result: OpResult, status: u16) {
        self.push(Self::now_ms(), TraceKind::Ok { op_id, result, status });
    }

    /// Records a refusal with its stable error kind and HTTP status.
    pub fn fail(
        &self,
        op_id: OpId,
        error_kind: booking::problem_kind::ProblemKind,
        status: u16,
        body: &serde_json::Value,
    ) {
        let retry_after_s = body["retry_after_s"].as_u64();
        self.push(Self::now_ms(), TraceKind::Fail { op_id, error_kind, status, retry_after_s });
    }

    /// Records a store call made at store time `store_now_ms` for request `op_id` (if any).
    pub fn store(&self, op_id: Option<OpId>, store_now_ms: i64, call: invariants::store_call::StoreCall) {
        self.push(self.store_at(store_now_ms), TraceKind::Store { op_id, store_now_ms, call: Box::new(call) });
    }

    /// Records a request whose outcome is unknown.
    pub fn unknown(&self, op_id: OpId, reason: &str) {
        self.push(Self::now_ms(), TraceKind::Unknown { op_id, reason: reason.to_string() });
    }

    /// Records a fault at `at_ms`.
    pub fn fault_at(&self, at_ms: i64, kind: FaultEvent, detail: String) {
        self.push(at_ms, TraceKind::Fault { kind, detail });
    }

    /// Records a fault now.
    pub fn fault(&self, kind: FaultEvent, detail: String) {
        self.fault_at(Self::now_ms(), kind, detail);
    }

    /// Records a provider-side money event.
    pub fn payment(&self, event: PaymentEvent) {
        self.push(Self::now_ms(), TraceKind::Payment(event));
    }

    /// Records a phase marker.
    pub fn phase(&self, at_ms: i64, phase: PhaseMark, store_now_ms: i64) {
        self.push(at_ms, TraceKind::Phase { phase, store_now_ms });
    }

    /// Records what the waiting room did, or what a waiting user learnt, now.
    pub fn room(&self, event: invariants::trace::RoomEvent) {
        self.push(Self::now_ms(), TraceKind::Room(event));
    }

    /// Records a fact the world made itself, now.
    pub fn world(&self, fact: invariants::trace::WorldFact) {
        self.push(Self::now_ms(), TraceKind::World(fact));
    }

    /// Records a seat map served from the cache now: the store version it
    /// shows, or `None` for a poisoned entry.
    pub fn seat_map_cached(&self, event_id: &EventId, version_sum: Option<i64>) {
        self.push(Self::now_ms(), TraceKind::SeatMapCached { event_id: EventId::from(event_id), version_sum });
    }

    /// Records the operators' list as read at the end of the run.
    pub fn operator_list(&self, order_ids: Vec<OrderId>, compensation_ids: Vec<CompensationId>) {
        self.push(Self::now_ms(), TraceKind::OperatorList { order_ids, compensation_ids });
    }

    /// Records the service's counters, summed over every service life, now.
    pub fn service_counters(&self, counters: invariants::service_counters::ServiceCounters) {
        self.push(Self::now_ms(), TraceKind::ServiceCounters(Box::new(counters)));
    }

    /// Whether the trace hit its length bound (the run is then inconclusive).
    pub fn overflowed(&self) -> bool {
        self.inner.lock().expect("recorder poisoned").overflowed
    }

    /// The run's events, moved out (not copied: a large on-sale's trace is
    /// gigabytes). The recording is over: any later record is a bug of the
    /// caller and panics.
    pub fn take_events(&self) -> Vec<TraceEvent> {
        let mut g = self.inner.lock().expect("recorder poisoned");
        assert!(!g.taken, "the trace was taken twice");
        g.taken = true;
        std::mem::take(&mut g.trace).into_events()
    }

    fn store_at(&self, store_now_ms: i64) -> i64 {
        store_now_ms - self.epoch_ms
    }
}

impl StoreObserver for Recorder {
    fn seat_written(&self, c: SeatWriteCause, now_ms: i64, presented: &Presented, before: &Seat, after: &Seat) {
        let authority = match (&presented.order, presented.token, &presented.holder) {
            (Some(order), _, _) => Authority::order(order),
            (None, Some(token), Some(holder)) => Authority::token(token, holder),
            (None, None, Some(holder)) => Authority::new_hold(holder),
            _ => Authority::none(),
        };
        let change = SeatChange::new(c, now_ms, authority, before, after);
        self.push(self.store_at(now_ms), TraceKind::SeatChange(Box::new(change)));
    }

    fn order_written(&self, before: Option<&Order>, after: &Order, now_ms: i64) {
        self.push(self.store_at(now_ms), TraceKind::OrderChange(OrderChange::new(before, after, now_ms)));
    }

    fn compensation_written(&self, before: Option<&Compensation>, after: &Compensation, now_ms: i64) {
        self.push(self.store_at(now_ms), TraceKind::CompensationChange(CompensationChange::new(before, after, now_ms)));
    }
}
