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

use crate::trace::{ClientOp, FaultEvent, OpResult, RoomEvent, TraceEvent, TraceKind};
use booking::fake_provider::LedgerStats;
use booking::model::{CompensationStatus, HoldToken, OrderStatus, SeatId, SeatState};
use booking::problem_kind::ProblemKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

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
    /// A user whose session was over joined the queue again (a new arrival).
    Rejoined,
    /// A purchase's checkout, sent again after its admission expired, was
    /// answered with its order (the purchase's retry passes the gate late).
    PurchaseRetriedLate,
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
    /// A multi-seat hold sent in click order (not the seats' own) was granted.
    UnsortedHoldGranted,
    /// A checkout was accepted under a key another user's accepted checkout used before.
    IdempotencyKeyShared,
    /// A hold was granted while its holder's live seats over every event passed the cap.
    CapPerEvent,
    /// A member was admitted ahead of a public user who joined the room earlier.
    MemberOvertook,
    /// A room buyer told its order failed was told by the queue its session is open again.
    SessionReopened,
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
        Path::Rejoined,
        Path::PurchaseRetriedLate,
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
        Path::UnsortedHoldGranted,
        Path::IdempotencyKeyShared,
        Path::CapPerEvent,
        Path::MemberOvertook,
        Path::SessionReopened,
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
            Path::Rejoined => "rejoined",
            Path::PurchaseRetriedLate => "purchase-retried-late",
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
            Path::UnsortedHoldGranted => "unsorted-hold-granted",
            Path::IdempotencyKeyShared => "idempotency-key-shared",
            Path::CapPerEvent => "cap-per-event",
            Path::MemberOvertook => "member-overtook",
            Path::SessionReopened => "session-reopened",
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
                if let Some(p) = fault_path(*kind) {
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

/// The path a fault of `kind` counts as, if any.
fn fault_path(kind: FaultEvent) -> Option<Path> {
    Some(match kind {
        FaultEvent::ClientPaused => Path::ClientPaused,
        FaultEvent::StaleTokenReplay => Path::StaleTokenReplayed,
        FaultEvent::CrashAfterCommit => Path::CrashAfterCommit,
        FaultEvent::HostRestarted => Path::HostRestarted,
        FaultEvent::PartitionStarted => Path::PartitionStarted,
        FaultEvent::PartitionRepaired => Path::PartitionHealed,
        FaultEvent::ClockSkewed => Path::ClockSkewed,
        FaultEvent::SweeperStalled => Path::SweeperStalled,
        FaultEvent::CacheDown => Path::CacheDown,
        FaultEvent::CacheStale => Path::CacheStale,
        FaultEvent::CachePoisoned => Path::CachePoisoned,
        FaultEvent::StoreDown => Path::StoreDown,
        FaultEvent::RoomsLost => Path::RoomsLost,
        FaultEvent::RoomsDown => Path::RoomsDown,
        // Counted where they act (the provider's calls, the callbacks' deliveries), or an end.
        FaultEvent::ClientResumed
        | FaultEvent::CallbackDelayed
        | FaultEvent::CallbackDuplicated
        | FaultEvent::CallbackReordered
        | FaultEvent::ProviderUnknown
        | FaultEvent::ProviderError
        | FaultEvent::ProviderLateSuccess
        | FaultEvent::RefundFailure
        | FaultEvent::LinkLatency
        | FaultEvent::SweeperResumed
        | FaultEvent::CacheHealed
        | FaultEvent::StoreRestored => return None,
    })
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
