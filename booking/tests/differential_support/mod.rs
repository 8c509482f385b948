//! What the differential tests share: the operation generator ([`op`]),
//! [`apply`] (one operation on any store, its outcome comparable across
//! stores), [`Known`] (what the sequence has produced so far) and the
//! seat-map version check ([`check_versions`]). Included
//! with `mod differential_support;` by `differential.rs` (sound stores) and
//! `differential_plants.rs` (both stores with one planted bug).

use booking::clock::{Clock, ManualClock};
use booking::model::{
    CompensationId, CompensationStatus, EventId, HoldToken, Order, OrderId, OutboxId, PaymentOpId, Seat, SeatId,
    SeatState, Snapshot,
};
use booking::store::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Where every store's clock starts.
pub const START_MS: i64 = 1_700_000_000_000;
/// Every store's id seed, so tokens and ids match across stores.
pub const ID_SEED: u64 = 0x5eed;
/// Two real events and one that never exists.
pub const EVENTS: [&str; 3] = ["ev-a", "ev-b", "ev-zzz"];
/// Mixed case and digits so byte order ("10A" < "1A" < "B" < "a") matters; the last never exists.
pub const SEATS: [&str; 7] = ["1A", "1B", "2A", "10A", "B", "a", "nope"];
pub const HOLDERS: [&str; 3] = ["alice", "bob", "carol"];
pub const KEYS: [&str; 4] = ["k1", "k2", "k3", "bad key"];
pub const REASONS: [&str; 3] = ["timeout", "nul\0inside", "declined"];
/// An id no store ever issues.
pub const UNKNOWN: Uuid = Uuid::from_u128(0xdead_beef);
/// Reconcile backoffs: the default, the smallest, a flat one, and two invalid.
pub const BACKOFFS: [(i64, i64); 5] = [(1_000, 8_000), (1, 1), (2_000, 2_000), (0, 8_000), (4_000, 1_000)];
/// Waits between the claims of [`Op::UnknownThenClaims`]: around the first steps and the cap.
pub const CLAIM_WAITS: [i64; 5] = [999, 1_000, 2_000, 4_000, 8_000];

#[derive(Debug, Clone)]
pub enum TokenPick {
    Own,
    OtherGrant(usize),
    Unknown,
}

#[derive(Debug, Clone)]
pub enum SeatPick {
    Exact,
    FirstOnly,
    Extra(usize),
}

/// What a compensation attempt reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishPick {
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Debug, Clone)]
pub enum Op {
    CreateEvent {
        ev: usize,
        seats: Vec<usize>,
        price_cents: i64,
    },
    Hold {
        ev: usize,
        seats: Vec<usize>,
        holder: usize,
        ttl_ms: i64,
        /// The holder's cap on seats at once (`AcquireHold::max_held_seats`).
        cap: Option<u32>,
    },
    Release {
        grant: usize,
        holder: Option<usize>,
        token: TokenPick,
    },
    Sweep {
        limit: u32,
    },
    Begin {
        grant: usize,
        holder: Option<usize>,
        token: TokenPick,
        seats: SeatPick,
        key: usize,
        ttl_ms: i64,
    },
    Success {
        order: usize,
        bad_provider_id: bool,
    },
    Failure {
        order: usize,
        reason: usize,
    },
    Unknown {
        order: usize,
        reason: usize,
    },
    ReleaseUnresolved {
        order: usize,
        long_reason: bool,
    },
    Claim {
        limit: u32,
        lease_ms: i64,
    },
    /// A reconciler claims due payments, with `BACKOFFS[backoff]`.
    ReconcileClaim {
        limit: u32,
        backoff: usize,
    },
    /// The outcomes of `count` (1 or 2) orders from the `order`th latest on
    /// become unknown, then reconcilers claim (limit 2, the default backoff)
    /// after each of `waits` (indices into [`CLAIM_WAITS`]): due and not-due
    /// instants, doubling, cap, deadline, several at once. With `fresh`, the
    /// first of them is a new checkout of those seats (payment TTL 5 s), so
    /// the backoff meets its deadline.
    UnknownThenClaims {
        fresh: Option<Vec<usize>>,
        order: usize,
        count: usize,
        waits: Vec<usize>,
    },
    Complete {
        outbox: usize,
    },
    Retry {
        outbox: usize,
        after_ms: i64,
    },
    StartComp {
        comp: usize,
        lease_ms: i64,
    },
    FinishComp {
        comp: usize,
        outcome: FinishPick,
        /// Report on the current attempt, or on the one before (stale).
        stale: bool,
        max_attempts: i32,
        retry_after_ms: i64,
    },
    /// A dispatcher starts a refund attempt and dies; `wait_ms` later (past
    /// the lease or not) another starts one: a takeover, or not due.
    AbandonedAttempt {
        comp: usize,
        lease_ms: i64,
        wait_ms: i64,
    },
    /// A dispatcher's refund attempt: started, then its result reported.
    RefundAttempt {
        comp: usize,
        outcome: FinishPick,
        max_attempts: i32,
    },
    /// An order's deadline passes, its seats are released with the payment
    /// outcome still open, and operators list what needs resolution.
    ReleaseThenList {
        order: usize,
    },
    Advance {
        ms: i64,
    },
    /// Time passes until an order's payment deadline (if not already past).
    AdvanceToDeadline {
        order: usize,
    },
    /// The late-success story: an order's deadline passes, its seats are
    /// released, then the provider says it charged.
    LateSuccess {
        order: usize,
    },
    Read {
        which: u8,
        idx: usize,
    },
    /// A hold on ev-a and its checkout with its own token, a fresh key: the
    /// common path, so payment outcomes have orders to act on.
    /// `retry` 1: the client retries the same checkout (a replay); 2: it
    /// reuses the key for a different request.
    HoldThenCheckout {
        seats: Vec<usize>,
        holder: usize,
        ttl_ms: i64,
        payment_ttl_ms: i64,
        retry: u8,
    },
    /// The brief's race: `first` holds, the hold expires, (the sweeper may
    /// run,) (`first`'s late checkout is refused,) `second` takes the seats.
    ExpireThenTakeOver {
        seats: Vec<usize>,
        first: usize,
        second: usize,
        sweep: bool,
        late_checkout: bool,
    },
    /// A late success, carried through refund attempts: a hold and its
    /// checkout, the payment deadline passes, the seats are released with the
    /// outcome open (operators list it), the provider then says it charged
    /// (a compensation opens), and `steps` refund attempts follow.
    ChargedAfterRelease {
        seats: Vec<usize>,
        holder: usize,
        steps: Vec<RefundStep>,
    },
}

/// One step of a compensation's life in [`Op::ChargedAfterRelease`].
#[derive(Debug, Clone)]
pub enum RefundStep {
    /// An attempt is started and its result reported.
    Attempt { outcome: FinishPick, max_attempts: i32 },
    /// An attempt is started (lease 1 s) and its dispatcher dies; `wait_ms` pass.
    Abandon { wait_ms: i64 },
    /// The backoff: time passes.
    Wait { ms: i64 },
}

pub fn refund_step() -> impl Strategy<Value = RefundStep> {
    let outcome =
        prop_oneof![1 => Just(FinishPick::Succeeded), 2 => Just(FinishPick::Failed), 2 => Just(FinishPick::Unknown)];
    prop_oneof![
        4 => (outcome, 1i32..4).prop_map(|(outcome, max_attempts)| RefundStep::Attempt { outcome, max_attempts }),
        2 => prop_oneof![Just(999i64), Just(1_000)].prop_map(|wait_ms| RefundStep::Abandon { wait_ms }),
        2 => prop_oneof![Just(999i64), Just(1_000)].prop_map(|ms| RefundStep::Wait { ms }),
    ]
}

pub fn token_pick() -> impl Strategy<Value = TokenPick> {
    prop_oneof![12 => Just(TokenPick::Own), 2 => (0usize..4).prop_map(TokenPick::OtherGrant), 1 => Just(TokenPick::Unknown)]
}

/// Mostly a real event (0, 1), sometimes the unknown or invalid one (2).
pub fn event() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..2, 1 => Just(2usize)]
}

/// Mostly 1..=3 distinct real seats in any order; sometimes anything
/// (empty, duplicates, an unknown seat).
pub fn seat_selection() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        8 => prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=3).prop_shuffle(),
        1 => prop::collection::vec(0usize..7, 0..4),
    ]
}

pub fn op() -> impl Strategy<Value = Op> {
    // Mostly the latest or the one before; sometimes older or unknown.
    let idx = || prop_oneof![10 => Just(0usize), 3 => 1usize..3, 1 => 3usize..6];
    prop_oneof![
        2 => (event(), prop_oneof![
                    4 => prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=6).prop_shuffle(),
                    1 => prop::collection::vec(0usize..6, 0..4),
                ], prop_oneof![1 => Just(-1i64), 2 => Just(0), 6 => Just(1_500)])
            .prop_map(|(ev, seats, price_cents)| Op::CreateEvent { ev, seats, price_cents }),
        10 => (event(), seat_selection(), 0usize..3, prop_oneof![1 => Just(0i64), 4 => Just(1_000), 4 => Just(30_000), 2 => Just(300_000)],
               prop::option::weighted(0.3, 0u32..5))
            .prop_map(|(ev, seats, holder, ttl_ms, cap)| Op::Hold { ev, seats, holder, ttl_ms, cap }),
        2 => (idx(), prop::option::weighted(0.2, 0usize..3), token_pick())
            .prop_map(|(grant, holder, token)| Op::Release { grant, holder, token }),
        3 => (0u32..4).prop_map(|limit| Op::Sweep { limit }),
        12 => (idx(), prop::option::weighted(0.15, 0usize..3), token_pick(),
              prop_oneof![12 => Just(SeatPick::Exact), 1 => Just(SeatPick::FirstOnly), 1 => (0usize..7).prop_map(SeatPick::Extra)],
              prop_oneof![6 => 0usize..3, 1 => Just(3usize)], prop_oneof![1 => Just(0i64), 4 => Just(5_000), 4 => Just(60_000)])
            .prop_map(|(grant, holder, token, seats, key, ttl_ms)| Op::Begin { grant, holder, token, seats, key, ttl_ms }),
        4 => (idx(), prop::bool::weighted(0.1)).prop_map(|(order, bad_provider_id)| Op::Success { order, bad_provider_id }),
        2 => (idx(), 0usize..3).prop_map(|(order, reason)| Op::Failure { order, reason }),
        3 => (idx(), 0usize..3).prop_map(|(order, reason)| Op::Unknown { order, reason }),
        3 => (idx(), any::<bool>()).prop_map(|(order, long_reason)| Op::ReleaseUnresolved { order, long_reason }),
        2 => (0u32..3, prop_oneof![Just(0i64), Just(1_000), Just(10_000)]).prop_map(|(limit, lease_ms)| Op::Claim { limit, lease_ms }),
        3 => (0u32..4, prop_oneof![6 => Just(0usize), 1 => 1usize..3, 1 => 3usize..5])
            .prop_map(|(limit, backoff)| Op::ReconcileClaim { limit, backoff }),
        4 => (prop::option::weighted(0.5, prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=2)),
              idx(), 1usize..=2, prop::collection::vec(0usize..5, 1..=8))
            .prop_map(|(fresh, order, count, waits)| Op::UnknownThenClaims { fresh, order, count, waits }),
        1 => idx().prop_map(|outbox| Op::Complete { outbox }),
        1 => (idx(), prop_oneof![Just(-1i64), Just(0), Just(5_000)]).prop_map(|(outbox, after_ms)| Op::Retry { outbox, after_ms }),
        4 => (idx(), prop_oneof![1 => Just(0i64), 6 => Just(1_000), 2 => Just(10_000)])
            .prop_map(|(comp, lease_ms)| Op::StartComp { comp, lease_ms }),
        4 => (idx(), prop_oneof![Just(FinishPick::Succeeded), Just(FinishPick::Failed), Just(FinishPick::Unknown)],
              prop::bool::weighted(0.2), prop_oneof![1 => Just(0i32), 4 => 1i32..4], prop_oneof![Just(0i64), Just(2_000)])
            .prop_map(|(comp, outcome, stale, max_attempts, retry_after_ms)| Op::FinishComp { comp, outcome, stale, max_attempts, retry_after_ms }),
        2 => (idx(), prop_oneof![Just(1_000i64), Just(10_000)], prop_oneof![Just(999i64), Just(1_000), Just(10_000)])
            .prop_map(|(comp, lease_ms, wait_ms)| Op::AbandonedAttempt { comp, lease_ms, wait_ms }),
        2 => idx().prop_map(|order| Op::ReleaseThenList { order }),
        4 => prop_oneof![1 => Just(1i64), 1 => Just(999), 2 => Just(1_000), 2 => Just(5_000), 2 => Just(30_000), 1 => Just(300_000)]
            .prop_map(|ms| Op::Advance { ms }),
        2 => (0u8..7, idx()).prop_map(|(which, idx)| Op::Read { which, idx }),
        2 => idx().prop_map(|order| Op::AdvanceToDeadline { order }),
        3 => idx().prop_map(|order| Op::LateSuccess { order }),
        4 => (idx(), prop_oneof![1 => Just(FinishPick::Succeeded), 2 => Just(FinishPick::Failed), 2 => Just(FinishPick::Unknown)], 1i32..4)
            .prop_map(|(comp, outcome, max_attempts)| Op::RefundAttempt { comp, outcome, max_attempts }),
        8 => (prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=3), 0usize..3,
              prop_oneof![Just(1_000i64), Just(30_000)], prop_oneof![Just(5_000i64), Just(60_000)], prop_oneof![4 => Just(0u8), 1 => 1u8..3])
            .prop_map(|(seats, holder, ttl_ms, payment_ttl_ms, retry)| Op::HoldThenCheckout { seats, holder, ttl_ms, payment_ttl_ms, retry }),
        2 => (prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=2), 0usize..3, 0usize..3, any::<bool>(), any::<bool>())
            .prop_map(|(seats, first, second, sweep, late_checkout)| Op::ExpireThenTakeOver { seats, first, second, sweep, late_checkout }),
        3 => (prop::sample::subsequence((0usize..6).collect::<Vec<_>>(), 1..=2), 0usize..3, prop::collection::vec(refund_step(), 1..=5))
            .prop_map(|(seats, holder, steps)| Op::ChargedAfterRelease { seats, holder, steps }),
    ]
}

/// What one operation returned, comparable across stores.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Unit(Result<(), StoreError>),
    Grant(Result<HoldGrant, StoreError>),
    Released(Result<Vec<SeatId>, StoreError>),
    Expired(Result<Vec<ExpiredHold>, StoreError>),
    Begun(Result<BeginPaymentOutcome, StoreError>),
    /// A recorded success, with whether this call decided it (compared too).
    Sale(Result<Recorded<SaleOutcome>, StoreError>),
    /// A recorded decline, with whether this call decided it (compared too).
    Declined(Result<Recorded<Order>, StoreError>),
    Order(Result<Order, StoreError>),
    Outbox(Result<Vec<booking::model::OutboxEvent>, StoreError>),
    Reconcile(Result<Vec<(Order, booking::model::PaymentOp)>, StoreError>),
    Attempt(Result<CompensationAttempt, StoreError>),
    /// A compensation result, with what was reported and whether it was for
    /// the current `in_flight` attempt (by MemStore's state before the op).
    Finish {
        outcome: FinishPick,
        current: bool,
        result: Result<booking::model::Compensation, StoreError>,
    },
    Resolution(Result<Resolution, StoreError>),
    Debug(String),
    Advanced,
    /// The outcomes of a composite operation, in order.
    Seq(Vec<Outcome>),
}

/// What the sequence has produced so far (read from MemStore's results), so
/// later operations can refer to real tokens, orders, dispatch events.
#[derive(Default)]
pub struct Known {
    /// Granted holds, oldest first.
    pub grants: Vec<HoldGrant>,
    /// Orders created by checkouts, oldest first.
    pub orders: Vec<Order>,
    /// Compensations opened by late successes, oldest first.
    pub compensations: Vec<CompensationId>,
    /// MemStore's state after the last operation.
    pub snap: Snapshot,
}

impl Known {
    /// Takes note of what one (non-composite) outcome produced: a grant, a
    /// new order, a compensation opened.
    pub fn record(&mut self, o: Outcome) {
        match o {
            Outcome::Grant(Ok(g)) => self.grants.push(g),
            Outcome::Begun(Ok(b)) if !b.replayed => self.orders.push(b.order),
            Outcome::Sale(Ok(Recorded { outcome: SaleOutcome::Compensating { compensation, .. }, .. })) => {
                self.compensations.push(compensation.compensation_id)
            }
            _ => {}
        }
    }
}

/// The outcomes of one operation, a composite's flattened into its steps.
pub fn steps(o: Outcome) -> Vec<Outcome> {
    match o {
        Outcome::Seq(v) => v,
        o => vec![o],
    }
}

/// The `i`th most recent of `items` (0 = the latest), or `None` past the
/// oldest (the request then carries an unknown id).
pub fn pick<T>(items: &[T], i: usize) -> Option<&T> {
    items.len().checked_sub(i + 1).map(|j| &items[j])
}

pub fn order_op_id(k: &Known, i: usize) -> PaymentOpId {
    pick(&k.orders, i).map_or(PaymentOpId::from(UNKNOWN), |o| o.payment_op_id)
}

pub async fn apply(store: &dyn Store, clock: &ManualClock, op: &Op, k: &Known) -> Outcome {
    match op {
        Op::ExpireThenTakeOver { seats, first, second, sweep, late_checkout } => {
            let hold = |holder: usize| AcquireHold {
                event_id: "ev-a".into(),
                seat_ids: seats.iter().map(|&s| SeatId::from(SEATS[s])).collect(),
                holder_id: HOLDERS[holder].into(),
                ttl_ms: 1_000,
                max_held_seats: None,
            };
            let mut out = vec![Outcome::Grant(store.acquire_hold(&hold(*first)).await)];
            clock.advance_ms(1_000);
            if *sweep {
                out.push(Outcome::Expired(store.sweep_expired_holds(1).await));
            }
            if let (true, Outcome::Grant(Ok(g))) = (*late_checkout, &out[0]) {
                let late = BeginPayment {
                    event_id: "ev-a".into(),
                    holder_id: g.holder_id.clone(),
                    hold_token: g.hold_token,
                    seat_ids: g.seats.iter().map(|s| s.seat_id.clone()).collect(),
                    idempotency_key: format!("late-{}", k.grants.len()),
                    payment_ttl_ms: 5_000,
                };
                out.push(Outcome::Begun(store.begin_payment(&late).await));
            }
            out.push(Outcome::Grant(store.acquire_hold(&hold(*second)).await));
            Outcome::Seq(out)
        }
        Op::HoldThenCheckout { seats, holder, ttl_ms, payment_ttl_ms, retry } => {
            let seat_ids: Vec<SeatId> = seats.iter().map(|&s| SeatId::from(SEATS[s])).collect();
            let hold = AcquireHold {
                event_id: "ev-a".into(),
                seat_ids: seat_ids.clone(),
                holder_id: HOLDERS[*holder].into(),
                ttl_ms: *ttl_ms,
                max_held_seats: None,
            };
            let grant = store.acquire_hold(&hold).await;
            let mut out = vec![];
            if let Ok(g) = &grant {
                let mut req = BeginPayment {
                    event_id: "ev-a".into(),
                    holder_id: HOLDERS[*holder].into(),
                    hold_token: g.hold_token,
                    seat_ids,
                    idempotency_key: format!("flow-{}", k.orders.len()),
                    payment_ttl_ms: *payment_ttl_ms,
                };
                let checkout = store.begin_payment(&req).await;
                out.push(Outcome::Grant(grant));
                out.push(Outcome::Begun(checkout));
                if *retry == 2 {
                    req.hold_token = HoldToken::from(UNKNOWN);
                }
                if *retry > 0 {
                    out.push(Outcome::Begun(store.begin_payment(&req).await));
                }
            } else {
                out.push(Outcome::Grant(grant));
            }
            Outcome::Seq(out)
        }
        Op::CreateEvent { ev, seats, price_cents } => Outcome::Unit(
            store
                .create_event(&CreateEvent {
                    event_id: if *ev == 2 { "bad id!".into() } else { EVENTS[*ev].into() },
                    seat_ids: seats.iter().map(|&s| SeatId::from(SEATS[s])).collect(),
                    price_cents: *price_cents,
                })
                .await,
        ),
        Op::Hold { ev, seats, holder, ttl_ms, cap } => Outcome::Grant(
            store
                .acquire_hold(&AcquireHold {
                    event_id: EVENTS[*ev].into(),
                    seat_ids: seats.iter().map(|&s| SeatId::from(SEATS[s])).collect(),
                    holder_id: HOLDERS[*holder].into(),
                    ttl_ms: *ttl_ms,
                    max_held_seats: *cap,
                })
                .await,
        ),
        Op::Release { grant, holder, token } => {
            let g = pick(&k.grants, *grant);
            Outcome::Released(
                store
                    .release_hold(&ReleaseHold {
                        event_id: g.map_or("ev-a".into(), |g| g.event_id.clone()),
                        holder_id: holder
                            .map_or_else(|| g.map_or("alice".into(), |g| g.holder_id.clone()), |h| HOLDERS[h].into()),
                        hold_token: resolve_token(k, g, token),
                    })
                    .await,
            )
        }
        Op::Sweep { limit } => Outcome::Expired(store.sweep_expired_holds(*limit).await),
        Op::Begin { grant, holder, token, seats, key, ttl_ms } => {
            let g = pick(&k.grants, *grant);
            let mut seat_ids: Vec<SeatId> =
                g.map_or(vec!["1A".into()], |g| g.seats.iter().map(|s| s.seat_id.clone()).collect());
            match seats {
                SeatPick::Exact => {}
                SeatPick::FirstOnly => seat_ids.truncate(1),
                SeatPick::Extra(s) => seat_ids.push(SEATS[*s].into()),
            }
            Outcome::Begun(
                store
                    .begin_payment(&BeginPayment {
                        event_id: g.map_or("ev-a".into(), |g| g.event_id.clone()),
                        holder_id: holder
                            .map_or_else(|| g.map_or("alice".into(), |g| g.holder_id.clone()), |h| HOLDERS[h].into()),
                        hold_token: resolve_token(k, g, token),
                        seat_ids,
                        idempotency_key: KEYS[*key].into(),
                        payment_ttl_ms: *ttl_ms,
                    })
                    .await,
            )
        }
        Op::Success { order, bad_provider_id } => Outcome::Sale(
            store
                .record_payment_success(&PaymentSuccess {
                    payment_op_id: order_op_id(k, *order),
                    provider_payment_id: if *bad_provider_id { String::new() } else { format!("pay-{order}") },
                })
                .await,
        ),
        Op::Failure { order, reason } => {
            Outcome::Declined(store.record_payment_failure(order_op_id(k, *order), REASONS[*reason]).await)
        }
        Op::Unknown { order, reason } => {
            Outcome::Order(store.record_payment_unknown(order_op_id(k, *order), REASONS[*reason]).await)
        }
        Op::ReleaseUnresolved { order, long_reason } => {
            let reason = if *long_reason { "x".repeat(600) } else { "deadline passed".into() };
            Outcome::Order(store.release_unresolved_payment(order_op_id(k, *order), &reason).await)
        }
        Op::Claim { limit, lease_ms } => Outcome::Outbox(store.claim_outbox(*limit, *lease_ms).await),
        Op::ReconcileClaim { limit, backoff } => {
            let (base_ms, cap_ms) = BACKOFFS[*backoff];
            Outcome::Reconcile(store.claim_reconcile(*limit, ReconcileBackoff { base_ms, cap_ms }).await)
        }
        Op::UnknownThenClaims { fresh, order, count, waits } => {
            let (base_ms, cap_ms) = BACKOFFS[0];
            let backoff = ReconcileBackoff { base_ms, cap_ms };
            let mut ops: Vec<PaymentOpId> = (*order..order + count).map(|i| order_op_id(k, i)).collect();
            let mut out = vec![];
            if let Some(seats) = fresh {
                let flow = Op::HoldThenCheckout {
                    seats: seats.clone(),
                    holder: 0,
                    ttl_ms: 30_000,
                    payment_ttl_ms: 5_000,
                    retry: 0,
                };
                let Outcome::Seq(checkout) = Box::pin(apply(store, clock, &flow, k)).await else {
                    unreachable!("a composite")
                };
                if let Some(b) = checkout.iter().find_map(|o| match o {
                    Outcome::Begun(Ok(b)) => Some(b),
                    _ => None,
                }) {
                    ops[0] = b.order.payment_op_id;
                }
                out.extend(checkout);
            }
            for op in ops {
                out.push(Outcome::Order(store.record_payment_unknown(op, "timeout").await));
            }
            for &w in waits {
                out.push(Outcome::Reconcile(store.claim_reconcile(2, backoff).await));
                clock.advance_ms(CLAIM_WAITS[w]);
            }
            Outcome::Seq(out)
        }
        Op::Complete { outbox } => {
            let (ev, id) = pick(&k.snap.outbox, *outbox)
                .map_or((EventId::from("ev-a"), OutboxId::from(UNKNOWN)), |o| (o.event_id.clone(), o.outbox_id));
            Outcome::Unit(store.complete_outbox(&ev, id).await)
        }
        Op::Retry { outbox, after_ms } => {
            let (ev, id) = pick(&k.snap.outbox, *outbox)
                .map_or((EventId::from("bad\0id"), OutboxId::from(UNKNOWN)), |o| (o.event_id.clone(), o.outbox_id));
            Outcome::Unit(store.retry_outbox(&ev, id, "provider 503", *after_ms).await)
        }
        Op::StartComp { comp, lease_ms } => {
            let id = pick(&k.compensations, *comp).copied().unwrap_or(CompensationId::from(UNKNOWN));
            Outcome::Attempt(store.start_compensation_attempt(id, *lease_ms).await)
        }
        Op::AbandonedAttempt { comp, lease_ms, wait_ms } => {
            let id = pick(&k.compensations, *comp).copied().unwrap_or(CompensationId::from(UNKNOWN));
            let first = Outcome::Attempt(store.start_compensation_attempt(id, *lease_ms).await);
            clock.advance_ms(*wait_ms);
            Outcome::Seq(vec![first, Outcome::Attempt(store.start_compensation_attempt(id, *lease_ms).await)])
        }
        Op::FinishComp { comp, outcome, stale, max_attempts, retry_after_ms } => {
            let id = pick(&k.compensations, *comp).copied().unwrap_or(CompensationId::from(UNKNOWN));
            let now = k.snap.compensations.iter().find(|c| c.compensation_id == id);
            let attempt = now.map_or(0, |c| c.attempts) - i32::from(*stale);
            let current = now.is_some_and(|c| c.status == CompensationStatus::InFlight && c.attempts == attempt);
            let reported = match outcome {
                FinishPick::Succeeded => CompensationOutcome::Succeeded,
                FinishPick::Failed => CompensationOutcome::Failed { attempt, error: "refund refused".into() },
                FinishPick::Unknown => CompensationOutcome::Unknown { attempt, error: "timed out\0".into() },
            };
            let req = CompensationResult {
                compensation_id: id,
                outcome: reported,
                retry_after_ms: *retry_after_ms,
                max_attempts: *max_attempts,
            };
            Outcome::Finish { outcome: *outcome, current, result: store.finish_compensation_attempt(&req).await }
        }
        Op::RefundAttempt { comp, outcome, max_attempts } => {
            let id = pick(&k.compensations, *comp).copied().unwrap_or(CompensationId::from(UNKNOWN));
            Outcome::Seq(refund_attempt(store, id, *outcome, *max_attempts).await)
        }
        Op::ChargedAfterRelease { seats, holder, steps } => {
            let flow = Op::HoldThenCheckout {
                seats: seats.clone(),
                holder: *holder,
                ttl_ms: 30_000,
                payment_ttl_ms: 5_000,
                retry: 0,
            };
            let Outcome::Seq(mut out) = Box::pin(apply(store, clock, &flow, k)).await else {
                unreachable!("a composite")
            };
            let Some(order) = out.iter().find_map(|o| match o {
                Outcome::Begun(Ok(b)) => Some(b.order.clone()),
                _ => None,
            }) else {
                return Outcome::Seq(out);
            };
            clock.set_ms(clock.now_ms().max(order.payment_deadline_at_ms));
            out.push(Outcome::Order(store.release_unresolved_payment(order.payment_op_id, "deadline passed").await));
            out.push(Outcome::Resolution(store.needs_resolution().await));
            let late = PaymentSuccess { payment_op_id: order.payment_op_id, provider_payment_id: "late".into() };
            let sale = store.record_payment_success(&late).await;
            let compensation_id = match &sale {
                Ok(Recorded { outcome: SaleOutcome::Compensating { compensation, .. }, .. }) => {
                    compensation.compensation_id
                }
                _ => CompensationId::from(UNKNOWN),
            };
            out.push(Outcome::Sale(sale));
            for step in steps {
                match step {
                    RefundStep::Attempt { outcome, max_attempts } => {
                        out.extend(refund_attempt(store, compensation_id, *outcome, *max_attempts).await)
                    }
                    RefundStep::Abandon { wait_ms } => {
                        out.push(Outcome::Attempt(store.start_compensation_attempt(compensation_id, 1_000).await));
                        clock.advance_ms(*wait_ms);
                    }
                    RefundStep::Wait { ms } => clock.advance_ms(*ms),
                }
            }
            Outcome::Seq(out)
        }
        Op::ReleaseThenList { order } => {
            let mut out = vec![Box::pin(apply(store, clock, &Op::AdvanceToDeadline { order: *order }, k)).await];
            out.push(
                Box::pin(apply(store, clock, &Op::ReleaseUnresolved { order: *order, long_reason: false }, k)).await,
            );
            out.push(Outcome::Resolution(store.needs_resolution().await));
            Outcome::Seq(out)
        }
        Op::Advance { ms } => {
            clock.advance_ms(*ms);
            Outcome::Advanced
        }
        Op::LateSuccess { order } => {
            let mut out = vec![Box::pin(apply(store, clock, &Op::AdvanceToDeadline { order: *order }, k)).await];
            out.push(
                Box::pin(apply(store, clock, &Op::ReleaseUnresolved { order: *order, long_reason: false }, k)).await,
            );
            out.push(Box::pin(apply(store, clock, &Op::Success { order: *order, bad_provider_id: false }, k)).await);
            Outcome::Seq(out)
        }
        Op::AdvanceToDeadline { order } => {
            if let Some(o) = pick(&k.orders, *order) {
                clock.set_ms(clock.now_ms().max(o.payment_deadline_at_ms));
            }
            Outcome::Advanced
        }
        Op::Read { which, idx } => {
            let order_id = pick(&k.orders, *idx).map_or(OrderId::from(UNKNOWN), |o| o.order_id);
            let ev = EventId::from(EVENTS[idx % 3]);
            Outcome::Debug(match which {
                0 => {
                    let (map, version) = (store.seat_map(&ev).await, store.seat_map_version(&ev).await);
                    let state = [SeatState::Available, SeatState::Held, SeatState::PaymentPending, SeatState::Sold]
                        [(idx / 3) % 4];
                    let filtered = store.seats_in_state(&ev, state).await;
                    match (&map, &version, &filtered) {
                        (Ok(seats), Ok(v), Ok((fv, fseats))) => {
                            assert_eq!(*v, SeatMapVersion::of_seats(seats), "{ev}: {seats:?}");
                            assert_eq!(fv, v, "{ev}: a filtered read carries the whole map's version");
                            let want: Vec<&Seat> = seats.iter().filter(|s| s.state == state).collect();
                            assert_eq!(fseats.iter().collect::<Vec<_>>(), want, "{ev} in {state:?}");
                        }
                        (Err(a), Err(b), Err(c)) => {
                            assert_eq!(a, b, "seat_map and seat_map_version refuse alike");
                            assert_eq!(a, c, "seat_map and seats_in_state refuse alike");
                        }
                        _ => panic!("{ev}: seat map {map:?} but version {version:?}, filtered {filtered:?}"),
                    }
                    format!("{map:?} {version:?} {filtered:?}")
                }
                1 => format!("{:?} {:?}", store.order(order_id).await, store.order_details(order_id).await),
                2 => format!("{:?}", store.payment_op(order_op_id(k, *idx)).await),
                3 => format!("{:?}", store.compensations_for_order(order_id).await),
                4 => format!("{:?}", store.bookings(&ev).await),
                5 => return Outcome::Resolution(store.needs_resolution().await),
                _ => {
                    format!(
                        "{:?}",
                        store
                            .compensation(
                                pick(&k.compensations, *idx).copied().unwrap_or(CompensationId::from(UNKNOWN))
                            )
                            .await
                    )
                }
            })
        }
    }
}

/// A dispatcher's refund attempt on compensation `id`: started (lease 1 s),
/// then `outcome` reported for the attempt the store started.
pub async fn refund_attempt(
    store: &dyn Store,
    id: CompensationId,
    outcome: FinishPick,
    max_attempts: i32,
) -> Vec<Outcome> {
    let started = store.start_compensation_attempt(id, 1_000).await;
    let Ok(a) = &started else { return vec![Outcome::Attempt(started)] };
    let attempt = a.compensation.attempts;
    let reported = match outcome {
        FinishPick::Succeeded => CompensationOutcome::Succeeded,
        FinishPick::Failed => CompensationOutcome::Failed { attempt, error: "insufficient funds".into() },
        FinishPick::Unknown => CompensationOutcome::Unknown { attempt, error: "x".repeat(600) },
    };
    let req = CompensationResult { compensation_id: id, outcome: reported, retry_after_ms: 1_000, max_attempts };
    let finished = store.finish_compensation_attempt(&req).await;
    vec![Outcome::Attempt(started), Outcome::Finish { outcome, current: true, result: finished }]
}

pub fn resolve_token(k: &Known, g: Option<&HoldGrant>, token: &TokenPick) -> HoldToken {
    match token {
        TokenPick::Own => g.map_or(HoldToken::from(UNKNOWN), |g| g.hold_token),
        TokenPick::OtherGrant(i) => pick(&k.grants, *i).map_or(HoldToken::from(UNKNOWN), |g| g.hold_token),
        TokenPick::Unknown => HoldToken::from(UNKNOWN),
    }
}

/// Every event's seat-map version (and a never-created event's refusal) is
/// the same in both stores and is [`SeatMapVersion::of_seats`] of the
/// snapshot's seats; since the previous operation it grew if and only if a
/// seat of the event changed. `versions` holds each event's seats and version
/// after the previous operation.
pub async fn check_versions(
    mem: &MemStore,
    pg: &PgStore,
    snap: &Snapshot,
    versions: &mut BTreeMap<&'static str, (Vec<Seat>, SeatMapVersion)>,
    i: usize,
    op: &Op,
) -> Result<(), TestCaseError> {
    for ev in EVENTS {
        let want = mem.seat_map_version(&EventId::from(ev)).await;
        let got = pg.seat_map_version(&EventId::from(ev)).await;
        prop_assert_eq!(&got, &want, "op #{} {:?}: seat-map versions of {} differ (left PgStore)", i, op, ev);
        let seats: Vec<Seat> = snap.seats.iter().filter(|s| s.event_id == ev).cloned().collect();
        let v = match want {
            Ok(v) => v,
            Err(e) => {
                prop_assert_eq!(e, StoreError::UnknownEvent(ev.into()));
                prop_assert!(seats.is_empty() && !snap.events.iter().any(|e| e.event_id == ev));
                continue;
            }
        };
        prop_assert_eq!(v, SeatMapVersion::of_seats(&seats), "op #{} {:?}: version of {}", i, op, ev);
        if let Some((before, before_v)) = versions.get(ev) {
            if *before == seats {
                prop_assert_eq!(v, *before_v, "op #{} {:?}: {} unchanged, version moved", i, op, ev);
            } else {
                prop_assert!(
                    v.seats == before_v.seats && v.version_sum > before_v.version_sum,
                    "op #{} {:?}: {} changed but its version went {:?} -> {:?}",
                    i,
                    op,
                    ev,
                    before_v,
                    v
                );
            }
        }
        versions.insert(ev, (seats, v));
    }
    Ok(())
}
