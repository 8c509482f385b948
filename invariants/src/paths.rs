//! The interesting things that happened in a run: every injected fault and
//! every path through the booking core that a scenario exists to exercise
//! (a stale token refused, an expired hold taken over, a checkout answered
//! by replay after a crash, a late success refunded, ...). A scenario
//! declares which must happen at least once across its default seeds
//! (`expect.must_happen`), so a fault that silently stops firing turns CI
//! red; run summaries show how often each happened.
//!
//! Counted from the trace ([`count`]) and from the fake provider's own
//! counters ([`count_provider`]), which the trace does not carry.

pub use crate::path::Path;
use crate::trace::{ClientOp, OpResult, RoomEvent, TraceEvent, TraceKind};
use booking::fake_provider::LedgerStats;
use booking::model::{CompensationStatus, HoldToken, OrderStatus, SeatId, SeatState};
use booking::problem_kind::ProblemKind;
use std::collections::{BTreeMap, BTreeSet};

/// How often each path happened (paths that never happened are absent).
pub type PathCounts = BTreeMap<Path, u64>;

/// Counts the boundaries the trace's store calls met: checkouts and holds
/// of held seats one tick (`tick_ms`, the simulation's step) before, at and
/// one tick after the hold's deadline (the store's clock), and holds refused
/// for passing the cap by one seat. The seats' deadlines come from the
/// store's writes (a call's writes precede its record in the trace: they
/// are applied after the call is judged, as the state it met).
pub fn count_boundaries(trace: &[TraceEvent], tick_ms: i64) -> PathCounts {
    use crate::store_call::StoreCall;
    let mut out = PathCounts::new();
    let mut deadline: BTreeMap<(&str, &str), (Option<HoldToken>, i64)> = BTreeMap::new();
    let mut pending: Vec<&crate::trace::SeatChange> = Vec::new();
    let offset = |d: i64| match d {
        d if d == -tick_ms => Some(0usize),
        0 => Some(1),
        d if d == tick_ms => Some(2),
        _ => None,
    };
    for e in trace {
        let (store_now_ms, call) = match &e.kind {
            TraceKind::SeatChange(c) => {
                pending.push(c);
                continue;
            }
            TraceKind::Store { store_now_ms, call, .. } => (store_now_ms, &**call),
            _ => continue,
        };
        match call {
            StoreCall::BeginPayment { req, .. } => {
                let held = req.seat_ids.iter().filter_map(|s| deadline.get(&(req.event_id.as_str(), s.as_str())));
                let own = held.filter(|(t, _)| *t == Some(req.hold_token)).map(|(_, d)| store_now_ms - d).min();
                if let Some(i) = own.and_then(offset) {
                    let p = [Path::CheckoutBeforeDeadline, Path::CheckoutAtDeadline, Path::CheckoutAfterDeadline][i];
                    *out.entry(p).or_insert(0) += 1;
                }
            }
            StoreCall::AcquireHold { req, answer } => {
                for s in &req.seat_ids {
                    let d = deadline.get(&(req.event_id.as_str(), s.as_str())).map(|(_, d)| store_now_ms - d);
                    if let Some(i) = d.and_then(offset) {
                        let p =
                            [Path::TakeoverBeforeDeadline, Path::TakeoverAtDeadline, Path::TakeoverAfterDeadline][i];
                        *out.entry(p).or_insert(0) += 1;
                    }
                }
                if let Err(r) = answer
                    && r.kind == ProblemKind::HoldLimit
                    && passed_by_one(&r.message)
                {
                    *out.entry(Path::CapPassedByOne).or_insert(0) += 1;
                }
            }
            _ => {}
        }
        for c in pending.drain(..) {
            let key = (c.event_id.as_str(), c.seat_id.as_str());
            match (c.after.state, c.after.hold_expires_at_ms) {
                (SeatState::Held, Some(d)) => deadline.insert(key, (c.after.hold_token, d)),
                _ => deadline.remove(&key),
            };
        }
    }
    out
}

/// Whether a hold-limit refusal's message says the hold passes the cap by one
/// seat (`holder already has H seats ...; at most L at once (this hold asks for R)`).
fn passed_by_one(message: &str) -> bool {
    let after = |marker: &str| -> Option<i64> {
        let rest = &message[message.find(marker)? + marker.len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
    };
    match (after("already has "), after("at most "), after("asks for ")) {
        (Some(held), Some(limit), Some(requested)) => held + requested == limit + 1,
        _ => false,
    }
}

/// Counts the paths the trace shows (the simulation stepping `tick_ms`).
pub fn count(trace: &[TraceEvent], tick_ms: i64) -> PathCounts {
    let mut out = count_boundaries(trace, tick_ms);
    crate::rare_paths::count_rare(trace, &mut out);
    let mut w = PathWalk { out, ..PathWalk::default() };
    for e in trace {
        match &e.kind {
            TraceKind::Room(RoomEvent::Told { admitted, .. }) => {
                w.bump(if *admitted { Path::AdmittedFromQueue } else { Path::SoldOutTold })
            }
            TraceKind::Room(RoomEvent::Pass { event_id, rate_per_ks, .. }) => w.pass(event_id, *rate_per_ks),
            TraceKind::Room(RoomEvent::Joined { event_id, user, .. }) => w.joined(event_id, user),
            TraceKind::Fault { kind, .. } => {
                if let Some(p) = kind.path() {
                    w.bump(p)
                }
            }
            TraceKind::SeatMapCached { event_id, version_sum } => match version_sum {
                None => w.bump(Path::PoisonedMapServed),
                Some(v) if *v < w.versions.get(event_id.as_str()).copied().unwrap_or(0) => w.bump(Path::StaleMapServed),
                Some(_) => {}
            },
            TraceKind::Invoke { op_id, client, op, .. }
                if !matches!(
                    op,
                    ClientOp::OrderStatus { .. } | ClientOp::SeatMap { .. } | ClientOp::Request { .. }
                ) =>
            {
                w.invoked(*op_id, client, op);
            }
            TraceKind::Room(RoomEvent::Admitted { event_id, user, expires_at_ms, .. }) => {
                w.expiries.insert((event_id, user), *expires_at_ms);
                w.admitted.insert((event_id, user));
            }
            TraceKind::Store { store_now_ms, .. } => w.now_ms = w.now_ms.max(*store_now_ms),
            TraceKind::Ok { op_id, result, .. } => w.ok(*op_id, result),
            TraceKind::Fail { op_id, error_kind, .. } => w.fail(*op_id, *error_kind),
            TraceKind::Unknown { op_id, .. } if w.open.remove(op_id).is_some() => w.bump(Path::AnswerLost),
            TraceKind::SeatChange(c) => {
                *w.versions.entry(c.event_id.as_str()).or_insert(0) += 1;
                match c.cause {
                    crate::trace::ChangeCause::Hold if c.before.state == SeatState::Held => {
                        w.bump(Path::ExpiredHoldTakenOver)
                    }
                    crate::trace::ChangeCause::Sweep => w.bump(Path::HoldSwept),
                    _ => {}
                }
            }
            TraceKind::OrderChange(o) if o.from.is_some() => {
                for p in order_paths(o.from, o.to) {
                    w.bump(p);
                }
            }
            TraceKind::CompensationChange(c) => {
                if let Some(p) = compensation_path(c.from, c.to) {
                    w.bump(p)
                }
            }
            _ => {}
        }
    }
    w.out
}

/// What [`count`] keeps while it walks a trace.
#[derive(Default)]
struct PathWalk<'a> {
    out: PathCounts,
    /// Open client operations: op id -> the op (holds, checkouts and releases only).
    open: BTreeMap<u64, &'a ClientOp>,
    /// Each granted hold's seats.
    granted: BTreeMap<HoldToken, Vec<&'a str>>,
    /// The idempotency key that checked each hold out.
    checked_out: BTreeMap<HoldToken, &'a str>,
    /// Each event's seat changes so far: its store seat-map version.
    versions: BTreeMap<&'a str, i64>,
    /// Each room's highest admission rate so far, and whether it is slowed now.
    rates: BTreeMap<&'a str, (i64, bool)>,
    /// Users admitted on an event, not joined since: (event, user).
    admitted: BTreeSet<(&'a str, &'a str)>,
    /// Each user's latest admission on an event: when it expires (store clock).
    expiries: BTreeMap<(&'a str, &'a str), i64>,
    /// The store's clock at the latest store call.
    now_ms: i64,
    /// Open checkouts sent after their sender's admission expired.
    late_checkouts: BTreeSet<u64>,
}

impl<'a> PathWalk<'a> {
    /// `user` joined `event_id`'s queue: a rejoin when they were admitted since their last join.
    fn joined(&mut self, event_id: &'a str, user: &'a str) {
        if self.admitted.remove(&(event_id, user)) {
            self.bump(Path::Rejoined)
        }
    }

    /// `client` sent `op` (a hold, checkout or release): open until answered;
    /// a checkout on an event where `client`'s admission has expired is late.
    fn invoked(&mut self, op_id: u64, client: &'a str, op: &'a ClientOp) {
        self.open.insert(op_id, op);
        if let ClientOp::Checkout { event_id, .. } = op
            && self.expiries.get(&(event_id.as_str(), client)).is_some_and(|&at| at <= self.now_ms)
        {
            self.late_checkouts.insert(op_id);
        }
    }

    fn bump(&mut self, p: Path) {
        *self.out.entry(p).or_insert(0) += 1;
    }

    /// An admission pass at `rate_per_ks`: slowed at half the room's best rate, recovered at 90% of it.
    fn pass(&mut self, event_id: &'a str, rate_per_ks: i64) {
        let (top, slowed) = self.rates.entry(event_id).or_insert((0, false));
        *top = (*top).max(rate_per_ks);
        let path = if !*slowed && rate_per_ks * 2 <= *top {
            *slowed = true;
            Path::AdmissionSlowed
        } else if *slowed && rate_per_ks * 10 >= *top * 9 {
            *slowed = false;
            Path::AdmissionRecovered
        } else {
            return;
        };
        self.bump(path);
    }

    fn ok(&mut self, op_id: u64, result: &'a OpResult) {
        let op = self.open.remove(&op_id);
        let late = self.late_checkouts.remove(&op_id);
        match result {
            OpResult::Held { hold_token, seat_ids, .. } => {
                self.granted.insert(*hold_token, sorted(seat_ids));
                if seat_ids.len() > 1 {
                    self.bump(Path::MultiSeatHoldGranted);
                }
            }
            OpResult::CheckedOut { replayed, .. } => {
                if let Some(ClientOp::Checkout { hold_token, idempotency_key, .. }) = op {
                    self.checked_out.entry(*hold_token).or_insert(idempotency_key);
                }
                if *replayed {
                    self.bump(Path::CheckoutReplayed);
                }
                if *replayed && late {
                    self.bump(Path::PurchaseRetriedLate);
                }
            }
            _ => {}
        }
    }

    fn fail(&mut self, op_id: u64, error_kind: ProblemKind) {
        let op = self.open.remove(&op_id);
        self.late_checkouts.remove(&op_id);
        if error_kind.is_admission_refusal() {
            if matches!(op, Some(ClientOp::Hold { .. } | ClientOp::Checkout { .. })) {
                self.bump(Path::AdmissionRefused);
            }
            return;
        }
        match op {
            Some(ClientOp::Hold { seat_ids, .. }) if error_kind == ProblemKind::SeatUnavailable => {
                self.bump(Path::HoldRefused);
                if seat_ids.len() > 1 {
                    self.bump(Path::MultiSeatHoldRefused);
                }
            }
            Some(ClientOp::Hold { .. }) if error_kind == ProblemKind::HoldLimit => self.bump(Path::HoldLimitRefused),
            Some(op @ (ClientOp::Checkout { .. } | ClientOp::Release { .. })) => {
                if error_kind.refuses_stale_hold() {
                    self.bump(Path::StaleTokenRefused);
                    if error_kind == ProblemKind::HoldExpired {
                        self.bump(Path::CheckoutOnExpiredHold);
                    }
                }
                if let ClientOp::Checkout { hold_token, seat_ids, idempotency_key, .. } = op {
                    if self.checked_out.get(hold_token).is_some_and(|k| *k != idempotency_key.as_str()) {
                        self.bump(Path::DuplicateCheckoutRefused);
                    }
                    if self.granted.get(hold_token).is_some_and(|g| *g != sorted(seat_ids)) {
                        self.bump(Path::PartialCheckoutRefused);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The paths an order's move from `from` to `to` counts as.
fn order_paths(from: Option<OrderStatus>, to: OrderStatus) -> Vec<Path> {
    match to {
        OrderStatus::Confirmed | OrderStatus::Failed if from == Some(OrderStatus::Reconciling) => {
            let outcome = if to == OrderStatus::Confirmed { Path::SaleConfirmed } else { Path::PaymentDeclined };
            vec![Path::UnknownResolved, outcome]
        }
        OrderStatus::Confirmed => vec![Path::SaleConfirmed],
        OrderStatus::Reconciling => vec![Path::PaymentUnknown],
        OrderStatus::Failed => vec![Path::PaymentDeclined],
        OrderStatus::Released => vec![Path::UnresolvedReleased],
        _ => Vec::new(),
    }
}

/// The path a compensation's move from `from` to `to` counts as, if any.
fn compensation_path(from: Option<CompensationStatus>, to: CompensationStatus) -> Option<Path> {
    match (from, to) {
        (Some(_), CompensationStatus::Succeeded) => Some(Path::RefundSucceeded),
        (Some(CompensationStatus::InFlight), CompensationStatus::Requested) => Some(Path::RefundRetried),
        (Some(_), CompensationStatus::Failed) => Some(Path::CompensationFailed),
        _ => None,
    }
}

/// `seats` sorted and deduplicated, borrowed.
fn sorted(seats: &[SeatId]) -> Vec<&str> {
    let mut v: Vec<&str> = seats.iter().map(SeatId::as_str).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Adds the paths the fake provider's counters show to `counts`.
pub fn count_provider(counts: &mut PathCounts, stats: &LedgerStats) {
    for (path, n) in [
        (Path::ProviderError, stats.injected_errors),
        (Path::ProviderLostAnswer, stats.lost_responses),
        (Path::ProviderLateSuccess, stats.late_successes),
        (Path::ProviderRefundRefused, stats.refund_failures),
        (Path::WebhookDuplicated, stats.webhooks_duplicated),
    ] {
        if n > 0 {
            *counts.entry(path).or_insert(0) += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    #[test]
    fn names_round_trip() {
        for p in Path::ALL {
            assert_eq!(Path::parse(p.as_str()), Some(*p));
        }
    }

    #[test]
    fn counts_refusals_takeovers_sweeps_and_outcomes() {
        let mut w = World::new(&["A", "B"]);
        let alice = w.hold("alice", &["A"], 5_000);
        w.advance(6_000);
        let _bob = w.hold("bob", &["A"], 5_000); // takes over Alice's expired hold
        let old = ClientOp::Checkout {
            event_id: "ev".into(),
            hold_token: alice,
            seat_ids: vec!["A".into()],
            idempotency_key: "ka".into(),
            admission: None,
        };
        w.client("alice", old, Err("stale-token"));
        let carol = w.hold("carol", &["B"], 1_000);
        w.advance(2_000);
        w.sweep();
        let _ = carol;
        let c = count(w.trace.events(), 20);
        assert_eq!(c.get(&Path::ExpiredHoldTakenOver), Some(&1));
        assert_eq!(c.get(&Path::StaleTokenRefused), Some(&1));
        assert_eq!(c.get(&Path::HoldSwept), Some(&1));
        assert_eq!(c.get(&Path::CheckoutOnExpiredHold), None);
    }
}
