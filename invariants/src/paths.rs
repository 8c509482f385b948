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

use crate::trace::{ClientOp, FaultKind, OpResult, RoomEvent, TraceEvent, TraceKind};
use booking::fake_provider::LedgerStats;
use booking::model::{CompensationStatus, OrderStatus, SeatState};
use booking::problem_kind::ProblemKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use uuid::Uuid;

/// One kind of interesting event. Stable kebab-case names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Path {
    /// Fault: a client paused mid-checkout.
    ClientPaused,
    /// Fault: a client replayed an old or another user's hold token.
    StaleTokenReplayed,
    /// Fault: a service host crashed right after a store commit.
    CrashAfterCommit,
    /// Fault: a crashed host came back.
    HostRestarted,
    /// Fault: a link was cut or held.
    PartitionStarted,
    /// Fault: a cut or held link was healed.
    PartitionHealed,
    /// Fault: a service host's clock was skewed.
    ClockSkewed,
    /// Fault: the hold sweeper stalled.
    SweeperStalled,
    /// A checkout or release with a stale, borrowed or expired hold was refused.
    StaleTokenRefused,
    /// A checkout arrived after its hold's deadline, before any sweep or takeover.
    CheckoutOnExpiredHold,
    /// A new hold took over an expired hold (the sweeper had not reclaimed it).
    ExpiredHoldTakenOver,
    /// The sweeper returned an expired hold.
    HoldSwept,
    /// A hold was refused because a seat was taken (contention).
    HoldRefused,
    /// A multi-seat hold was granted.
    MultiSeatHoldGranted,
    /// A multi-seat hold was refused whole because a seat was taken.
    MultiSeatHoldRefused,
    /// A retried checkout was answered with the order its key committed.
    CheckoutReplayed,
    /// A client got no answer (timeout, reset, crash).
    AnswerLost,
    /// A sale was confirmed.
    SaleConfirmed,
    /// A payment's outcome became unknown (order reconciling).
    PaymentUnknown,
    /// A payment was declined (order failed).
    PaymentDeclined,
    /// An unknown payment's outcome was found before its deadline (a
    /// reconciling order confirmed or failed).
    UnknownResolved,
    /// An unresolved payment's seats were released at its deadline.
    UnresolvedReleased,
    /// A refund (compensation) succeeded.
    RefundSucceeded,
    /// A refund attempt failed and was scheduled again.
    RefundRetried,
    /// A compensation gave up and was flagged for operators.
    CompensationFailed,
    /// Provider: a request failed before processing.
    ProviderError,
    /// Provider: a response was lost after processing.
    ProviderLostAnswer,
    /// Provider: a payment succeeded late.
    ProviderLateSuccess,
    /// Provider: a refund attempt was refused.
    ProviderRefundRefused,
    /// Provider: a webhook was delivered twice.
    WebhookDuplicated,
    /// A hold past the per-user cap was refused (409 hold-limit).
    HoldLimitRefused,
    /// A checkout of a hold already checked out, under a new idempotency key
    /// (a double click), was refused.
    DuplicateCheckoutRefused,
    /// A checkout naming only part of its hold was refused.
    PartialCheckoutRefused,
    /// Fault: the seat-map cache went down.
    CacheDown,
    /// Fault: the seat-map cache lost its invalidations.
    CacheStale,
    /// Fault: the seat-map cache was poisoned.
    CachePoisoned,
    /// A poisoned seat map was served from the cache.
    PoisonedMapServed,
    /// A seat map older than the store's was served from the cache.
    StaleMapServed,
    /// A waiting user was admitted.
    AdmittedFromQueue,
    /// A waiting user was told the event sold out.
    SoldOutTold,
    /// A hold or checkout on a waiting-room event was refused by the admission gate.
    AdmissionRefused,
    /// An admission pass ran at half (or less) the highest rate its room had run at.
    AdmissionSlowed,
    /// After slowing, an admission pass ran again at 90% (or more) of that highest rate.
    AdmissionRecovered,
    /// Fault: the store was unreachable for a while.
    StoreDown,
    /// Fault: the waiting rooms' store lost every room (each rebuilt from the record).
    RoomsLost,
    /// Fault: the waiting rooms' store stopped answering (every room call failed closed until it came back).
    RoomsDown,
    /// A checkout reached the store one tick before its hold's deadline.
    CheckoutBeforeDeadline,
    /// A checkout reached the store at its hold's deadline (it has passed: `deadline <= now`).
    CheckoutAtDeadline,
    /// A checkout reached the store one tick after its hold's deadline.
    CheckoutAfterDeadline,
    /// A hold asked for a seat held by another hold one tick before that hold's deadline.
    TakeoverBeforeDeadline,
    /// A hold asked for a seat held by another hold at that hold's deadline.
    TakeoverAtDeadline,
    /// A hold asked for a seat held by another hold one tick after that hold's deadline.
    TakeoverAfterDeadline,
    /// A hold was refused for passing the per-user cap by exactly one seat.
    CapPassedByOne,
}

impl Path {
    /// Every path, in declaration order.
    pub const ALL: &'static [Path] = &[
        Path::ClientPaused,
        Path::StaleTokenReplayed,
        Path::CrashAfterCommit,
        Path::HostRestarted,
        Path::PartitionStarted,
        Path::PartitionHealed,
        Path::ClockSkewed,
        Path::SweeperStalled,
        Path::StaleTokenRefused,
        Path::CheckoutOnExpiredHold,
        Path::ExpiredHoldTakenOver,
        Path::HoldSwept,
        Path::HoldRefused,
        Path::MultiSeatHoldGranted,
        Path::MultiSeatHoldRefused,
        Path::CheckoutReplayed,
        Path::AnswerLost,
        Path::SaleConfirmed,
        Path::PaymentUnknown,
        Path::PaymentDeclined,
        Path::UnknownResolved,
        Path::UnresolvedReleased,
        Path::RefundSucceeded,
        Path::RefundRetried,
        Path::CompensationFailed,
        Path::ProviderError,
        Path::ProviderLostAnswer,
        Path::ProviderLateSuccess,
        Path::ProviderRefundRefused,
        Path::WebhookDuplicated,
        Path::HoldLimitRefused,
        Path::DuplicateCheckoutRefused,
        Path::PartialCheckoutRefused,
        Path::CacheDown,
        Path::CacheStale,
        Path::CachePoisoned,
        Path::PoisonedMapServed,
        Path::StaleMapServed,
        Path::AdmittedFromQueue,
        Path::SoldOutTold,
        Path::AdmissionRefused,
        Path::AdmissionSlowed,
        Path::AdmissionRecovered,
        Path::StoreDown,
        Path::RoomsLost,
        Path::RoomsDown,
        Path::CheckoutBeforeDeadline,
        Path::CheckoutAtDeadline,
        Path::CheckoutAfterDeadline,
        Path::TakeoverBeforeDeadline,
        Path::TakeoverAtDeadline,
        Path::TakeoverAfterDeadline,
        Path::CapPassedByOne,
    ];

    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Path::ClientPaused => "client-paused",
            Path::StaleTokenReplayed => "stale-token-replayed",
            Path::CrashAfterCommit => "crash-after-commit",
            Path::HostRestarted => "host-restarted",
            Path::PartitionStarted => "partition-started",
            Path::PartitionHealed => "partition-healed",
            Path::ClockSkewed => "clock-skewed",
            Path::SweeperStalled => "sweeper-stalled",
            Path::StaleTokenRefused => "stale-token-refused",
            Path::CheckoutOnExpiredHold => "checkout-on-expired-hold",
            Path::ExpiredHoldTakenOver => "expired-hold-taken-over",
            Path::HoldSwept => "hold-swept",
            Path::HoldRefused => "hold-refused",
            Path::MultiSeatHoldGranted => "multi-seat-hold-granted",
            Path::MultiSeatHoldRefused => "multi-seat-hold-refused",
            Path::CheckoutReplayed => "checkout-replayed",
            Path::AnswerLost => "answer-lost",
            Path::SaleConfirmed => "sale-confirmed",
            Path::PaymentUnknown => "payment-unknown",
            Path::PaymentDeclined => "payment-declined",
            Path::UnknownResolved => "unknown-resolved",
            Path::UnresolvedReleased => "unresolved-released",
            Path::RefundSucceeded => "refund-succeeded",
            Path::RefundRetried => "refund-retried",
            Path::CompensationFailed => "compensation-failed",
            Path::ProviderError => "provider-error",
            Path::ProviderLostAnswer => "provider-lost-answer",
            Path::ProviderLateSuccess => "provider-late-success",
            Path::ProviderRefundRefused => "provider-refund-refused",
            Path::WebhookDuplicated => "webhook-duplicated",
            Path::HoldLimitRefused => "hold-limit-refused",
            Path::DuplicateCheckoutRefused => "duplicate-checkout-refused",
            Path::PartialCheckoutRefused => "partial-checkout-refused",
            Path::CacheDown => "cache-down",
            Path::CacheStale => "cache-stale",
            Path::CachePoisoned => "cache-poisoned",
            Path::PoisonedMapServed => "poisoned-map-served",
            Path::StaleMapServed => "stale-map-served",
            Path::AdmittedFromQueue => "admitted-from-queue",
            Path::SoldOutTold => "sold-out-told",
            Path::AdmissionRefused => "admission-refused",
            Path::AdmissionSlowed => "admission-slowed",
            Path::AdmissionRecovered => "admission-recovered",
            Path::StoreDown => "store-down",
            Path::RoomsLost => "rooms-lost",
            Path::RoomsDown => "rooms-down",
            Path::CheckoutBeforeDeadline => "checkout-before-deadline",
            Path::CheckoutAtDeadline => "checkout-at-deadline",
            Path::CheckoutAfterDeadline => "checkout-after-deadline",
            Path::TakeoverBeforeDeadline => "takeover-before-deadline",
            Path::TakeoverAtDeadline => "takeover-at-deadline",
            Path::TakeoverAfterDeadline => "takeover-after-deadline",
            Path::CapPassedByOne => "cap-passed-by-one",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Path> {
        Path::ALL.iter().copied().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    let mut deadline: BTreeMap<(&str, &str), (Option<Uuid>, i64)> = BTreeMap::new();
    let mut pending: Vec<&crate::trace::SeatChange> = Vec::new();
    let offset = |d: i64| match d {
        d if d == -tick_ms => Some(0usize),
        0 => Some(1),
        d if d == tick_ms => Some(2),
        _ => None,
    };
    for e in trace {
        match &e.kind {
            TraceKind::SeatChange(c) => {
                pending.push(c);
                continue;
            }
            TraceKind::Store { .. } => {}
            _ => continue,
        }
        match &e.kind {
            TraceKind::Store { store_now_ms, call: StoreCall::BeginPayment { req, .. }, .. } => {
                let held = req.seat_ids.iter().filter_map(|s| deadline.get(&(req.event_id.as_str(), s.as_str())));
                let own = held.filter(|(t, _)| *t == Some(req.hold_token)).map(|(_, d)| store_now_ms - d).min();
                if let Some(i) = own.and_then(offset) {
                    let p = [Path::CheckoutBeforeDeadline, Path::CheckoutAtDeadline, Path::CheckoutAfterDeadline][i];
                    *out.entry(p).or_insert(0) += 1;
                }
            }
            TraceKind::Store { store_now_ms, call: StoreCall::AcquireHold { req, answer }, .. } => {
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
    let mut bump = |p: Path| *out.entry(p).or_insert(0) += 1;
    // Open client operations: op id -> the op (holds, checkouts and releases only).
    let mut open: BTreeMap<u64, &ClientOp> = BTreeMap::new();
    // Each granted hold's seats, and the idempotency key that checked it out.
    let mut granted: BTreeMap<Uuid, Vec<&str>> = BTreeMap::new();
    let mut checked_out: BTreeMap<Uuid, &str> = BTreeMap::new();
    // Each event's seat changes so far: its store seat-map version.
    let mut versions: BTreeMap<&str, i64> = BTreeMap::new();
    // Each room's highest admission rate so far, and whether it is slowed now.
    let mut rates: BTreeMap<&str, (i64, bool)> = BTreeMap::new();
    for e in trace {
        match &e.kind {
            TraceKind::Room(RoomEvent::Told { admitted, .. }) => {
                bump(if *admitted { Path::AdmittedFromQueue } else { Path::SoldOutTold })
            }
            TraceKind::Room(RoomEvent::Pass { event_id, rate_per_ks, .. }) => {
                let (top, slowed) = rates.entry(event_id.as_str()).or_insert((0, false));
                if *rate_per_ks > *top {
                    *top = *rate_per_ks;
                }
                if !*slowed && *rate_per_ks * 2 <= *top {
                    *slowed = true;
                    bump(Path::AdmissionSlowed);
                } else if *slowed && *rate_per_ks * 10 >= *top * 9 {
                    *slowed = false;
                    bump(Path::AdmissionRecovered);
                }
            }
            TraceKind::Fault { kind, .. } => match kind {
                FaultKind::ClientPaused => bump(Path::ClientPaused),
                FaultKind::StaleTokenReplay => bump(Path::StaleTokenReplayed),
                FaultKind::CrashAfterCommit => bump(Path::CrashAfterCommit),
                FaultKind::HostRestarted => bump(Path::HostRestarted),
                FaultKind::PartitionStarted => bump(Path::PartitionStarted),
                FaultKind::PartitionRepaired => bump(Path::PartitionHealed),
                FaultKind::ClockSkewed => bump(Path::ClockSkewed),
                FaultKind::SweeperStalled => bump(Path::SweeperStalled),
                FaultKind::CacheDown => bump(Path::CacheDown),
                FaultKind::CacheStale => bump(Path::CacheStale),
                FaultKind::CachePoisoned => bump(Path::CachePoisoned),
                FaultKind::StoreDown => bump(Path::StoreDown),
                FaultKind::RoomsLost => bump(Path::RoomsLost),
                FaultKind::RoomsDown => bump(Path::RoomsDown),
                _ => {}
            },
            TraceKind::SeatMapCached { event_id, version_sum } => match version_sum {
                None => bump(Path::PoisonedMapServed),
                Some(v) if *v < versions.get(event_id.as_str()).copied().unwrap_or(0) => bump(Path::StaleMapServed),
                Some(_) => {}
            },
            TraceKind::Invoke { op_id, op, .. }
                if !matches!(
                    op,
                    ClientOp::OrderStatus { .. } | ClientOp::SeatMap { .. } | ClientOp::Request { .. }
                ) =>
            {
                open.insert(*op_id, op);
            }
            TraceKind::Ok { op_id, result, .. } => {
                let op = open.remove(op_id);
                match result {
                    OpResult::Held { hold_token, seat_ids, .. } => {
                        granted.insert(*hold_token, sorted(seat_ids));
                    }
                    OpResult::CheckedOut { .. } => {
                        if let Some(ClientOp::Checkout { hold_token, idempotency_key, .. }) = op {
                            checked_out.entry(*hold_token).or_insert(idempotency_key);
                        }
                    }
                    _ => {}
                }
                match result {
                    OpResult::Held { seat_ids, .. } if seat_ids.len() > 1 => bump(Path::MultiSeatHoldGranted),
                    OpResult::CheckedOut { replayed: true, .. } => bump(Path::CheckoutReplayed),
                    _ => {}
                }
            }
            TraceKind::Fail { op_id, error_kind, .. } if error_kind.is_admission_refusal() => {
                if matches!(open.remove(op_id), Some(ClientOp::Hold { .. } | ClientOp::Checkout { .. })) {
                    bump(Path::AdmissionRefused);
                }
            }
            TraceKind::Fail { op_id, error_kind, .. } => match open.remove(op_id) {
                Some(ClientOp::Hold { seat_ids, .. }) if *error_kind == ProblemKind::SeatUnavailable => {
                    bump(Path::HoldRefused);
                    if seat_ids.len() > 1 {
                        bump(Path::MultiSeatHoldRefused);
                    }
                }
                Some(ClientOp::Hold { .. }) if *error_kind == ProblemKind::HoldLimit => bump(Path::HoldLimitRefused),
                Some(op @ (ClientOp::Checkout { .. } | ClientOp::Release { .. })) => {
                    if error_kind.refuses_stale_hold() {
                        bump(Path::StaleTokenRefused);
                        if *error_kind == ProblemKind::HoldExpired {
                            bump(Path::CheckoutOnExpiredHold);
                        }
                    }
                    if let ClientOp::Checkout { hold_token, seat_ids, idempotency_key, .. } = op {
                        if checked_out.get(hold_token).is_some_and(|k| *k != idempotency_key.as_str()) {
                            bump(Path::DuplicateCheckoutRefused);
                        }
                        if granted.get(hold_token).is_some_and(|g| *g != sorted(seat_ids)) {
                            bump(Path::PartialCheckoutRefused);
                        }
                    }
                }
                _ => {}
            },
            TraceKind::Unknown { op_id, .. } if open.remove(op_id).is_some() => bump(Path::AnswerLost),
            TraceKind::SeatChange(c) => {
                *versions.entry(c.event_id.as_str()).or_insert(0) += 1;
                match c.cause {
                    crate::trace::ChangeCause::Hold if c.before.state == SeatState::Held => {
                        bump(Path::ExpiredHoldTakenOver)
                    }
                    crate::trace::ChangeCause::Sweep => bump(Path::HoldSwept),
                    _ => {}
                }
            }
            TraceKind::OrderChange(o) if o.from.is_some() => match o.to {
                OrderStatus::Confirmed | OrderStatus::Failed if o.from == Some(OrderStatus::Reconciling) => {
                    bump(Path::UnknownResolved);
                    bump(if o.to == OrderStatus::Confirmed { Path::SaleConfirmed } else { Path::PaymentDeclined });
                }
                OrderStatus::Confirmed => bump(Path::SaleConfirmed),
                OrderStatus::Reconciling => bump(Path::PaymentUnknown),
                OrderStatus::Failed => bump(Path::PaymentDeclined),
                OrderStatus::Released => bump(Path::UnresolvedReleased),
                _ => {}
            },
            TraceKind::CompensationChange(c) => match (c.from, c.to) {
                (Some(_), CompensationStatus::Succeeded) => bump(Path::RefundSucceeded),
                (Some(CompensationStatus::InFlight), CompensationStatus::Requested) => bump(Path::RefundRetried),
                (Some(_), CompensationStatus::Failed) => bump(Path::CompensationFailed),
                _ => {}
            },
            _ => {}
        }
    }
    out
}

/// `seats` sorted and deduplicated, borrowed.
fn sorted(seats: &[String]) -> Vec<&str> {
    let mut v: Vec<&str> = seats.iter().map(String::as_str).collect();
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
