//! The differential test: random sequences of operations (bad input, stale
//! tokens, other holders, reused idempotency keys, payment outcomes in any
//! order, late successes, outbox work, compensation attempts (leases taken
//! over, stale and unknown results), reconcile claims on their backoff,
//! operators' lists, clock advances)
//! applied to MemStore and PgStore give identical results after every
//! operation and identical snapshots. After every operation both stores also
//! give every event the same seat-map version, that of its seats, grown
//! exactly when a seat changed. Failures shrink to a minimal sequence.
//!
//! Both stores get their own ManualClock (advanced together) and SeededIds of
//! the same seed, so tokens and order ids must match exactly: PgStore must
//! consume ids in MemStore's order and only in MemStore's cases.

//!
//! The generator, `apply` and `Known` live in `differential_support`, shared
//! with `differential_plants.rs` (the same differential under each planted bug).

use crate::common;
use crate::differential_support;

use booking::clock::ManualClock;
use booking::model::OrderStatus;
use booking::store::*;
use common::TestDb;
use differential_support::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The generator's seed unless `PROPTEST_RNG_SEED` is set.
const DEFAULT_RNG_SEED: u64 = 0x401d_fa57;

/// A name for what an outcome exercised (MemStore's side), to check the
/// generator reaches the deep paths.
fn label(o: &Outcome) -> String {
    fn err(e: &StoreError) -> String {
        format!("error {}", e.kind())
    }
    match o {
        Outcome::Grant(Ok(g)) if !g.reclaimed.is_empty() => "hold taking over an expired hold".into(),
        Outcome::Grant(Ok(g)) if g.seats.len() > 1 => "multi-seat hold".into(),
        Outcome::Begun(Ok(b)) if b.replayed => "checkout replayed".into(),
        Outcome::Begun(Ok(_)) => "checkout".into(),
        Outcome::Sale(Ok(Recorded { decided_now: false, .. })) => "sale repeated".into(),
        Outcome::Sale(Ok(Recorded { outcome: SaleOutcome::Confirmed { .. }, .. })) => "sale confirmed".into(),
        Outcome::Sale(Ok(Recorded { outcome: SaleOutcome::Compensating { .. }, .. })) => {
            "late success compensated".into()
        }
        Outcome::Declined(Ok(Recorded { decided_now: false, .. })) => "decline repeated".into(),
        Outcome::Declined(Ok(Recorded { outcome: o, .. })) => format!("order {}", o.status),
        Outcome::Expired(Ok(v)) if !v.is_empty() => "sweep reclaimed".into(),
        Outcome::Outbox(Ok(v)) if !v.is_empty() => "outbox claimed".into(),
        Outcome::Attempt(Ok(a)) if a.took_over.is_some() => "compensation attempt taken over".into(),
        Outcome::Attempt(Ok(a)) => format!("compensation {}", a.compensation.status),
        Outcome::Finish { outcome, current: false, result: Ok(_) } if *outcome != FinishPick::Succeeded => {
            "compensation stale result ignored".into()
        }
        Outcome::Finish { outcome: FinishPick::Unknown, current: true, result: Ok(c) } => {
            format!("compensation {} after an unknown outcome", c.status)
        }
        Outcome::Finish { result: Ok(c), .. } => format!("compensation {}", c.status),
        Outcome::Resolution(Ok(r)) if r.orders.iter().any(|o| o.status == OrderStatus::Released) => {
            "operators see a released order still possibly charged".into()
        }
        Outcome::Order(Ok(o)) => format!("order {}", o.status),
        Outcome::Unit(Err(e))
        | Outcome::Grant(Err(e))
        | Outcome::Released(Err(e))
        | Outcome::Begun(Err(e))
        | Outcome::Sale(Err(e))
        | Outcome::Declined(Err(e))
        | Outcome::Order(Err(e))
        | Outcome::Attempt(Err(e))
        | Outcome::Finish { result: Err(e), .. }
        | Outcome::Resolution(Err(e))
        | Outcome::Outbox(Err(e)) => err(e),
        Outcome::Reconcile(Err(e)) => format!("reconcile {}", err(e)),
        _ => "other".into(),
    }
}

/// Every name for what an outcome exercised: [`label`]'s, or each of a
/// reconcile claim's.
fn labels(o: &Outcome) -> Vec<String> {
    use booking::model::PaymentStatus;
    let Outcome::Reconcile(Ok(claimed)) = o else { return vec![label(o)] };
    let tags: [(&str, bool); 6] = [
        ("reconcile claimed nothing", claimed.is_empty()),
        ("reconcile claimed several", claimed.len() >= 2),
        ("reconcile claimed an unknown payment", claimed.iter().any(|(_, p)| p.status == PaymentStatus::Unknown)),
        (
            "reconcile claimed a pending payment at its deadline",
            claimed.iter().any(|(_, p)| p.status == PaymentStatus::Pending),
        ),
        ("reconcile claimed a fifth time", claimed.iter().any(|(_, p)| p.checks >= 5)),
        (
            "reconcile backoff cut to the deadline",
            claimed
                .iter()
                .any(|(o, p)| p.status == PaymentStatus::Unknown && p.next_check_at_ms == o.payment_deadline_at_ms),
        ),
    ];
    tags.iter().filter(|(_, hit)| *hit).map(|(name, _)| name.to_string()).collect()
}

/// The paths the generator must reach across the run (else it has gone blind).
const MUST_REACH: &[&str] = &[
    "multi-seat hold",
    "hold taking over an expired hold",
    "checkout",
    "checkout replayed",
    "sale confirmed",
    "sale repeated",
    "late success compensated",
    "sweep reclaimed",
    "outbox claimed",
    "reconcile claimed an unknown payment",
    "reconcile claimed several",
    "reconcile claimed a pending payment at its deadline",
    "reconcile claimed a fifth time",
    "reconcile backoff cut to the deadline",
    "reconcile claimed nothing",
    "reconcile error invalid-input",
    "compensation in_flight",
    "compensation succeeded",
    "compensation failed",
    "compensation attempt taken over",
    "compensation stale result ignored",
    "compensation requested after an unknown outcome",
    "compensation failed after an unknown outcome",
    "operators see a released order still possibly charged",
    "order reconciling",
    "order failed",
    "order released",
    "error invalid-input",
    "error unknown-event",
    "error event-exists",
    "error unknown-seat",
    "error seat-unavailable",
    "error hold-not-found",
    "error stale-token",
    "error not-holder",
    "error hold-expired",
    "error idempotency-key-reused",
    "error payment-conflict",
    "error deadline-not-passed",
    "error order-not-open",
    "error compensation-not-due",
];

async fn run_case(db: &TestDb, ops: &[Op], seen: &mut BTreeMap<String, u32>) -> Result<(), TestCaseError> {
    db.truncate().await;
    let (mem, mem_clock) = common::mem_store(START_MS, ID_SEED);
    let pg_clock = ManualClock::new(START_MS);
    let pg = PgStore::new(
        db.pool.clone(),
        PgClock::Manual(pg_clock.clone()),
        Arc::new(booking::ids::SeededIds::new(ID_SEED)),
    );
    let mut known = Known::default();
    let mut versions = BTreeMap::new();
    // Every case starts with one event of every seat (given unsorted), so holds have somewhere to land.
    let setup = Op::CreateEvent { ev: 0, seats: vec![5, 4, 3, 2, 1, 0], price_cents: 1_500 };
    for (i, op) in std::iter::once(&setup).chain(ops).enumerate() {
        let want = apply(&mem, &mem_clock, op, &known).await;
        let got = apply(&pg, &pg_clock, op, &known).await;
        prop_assert_eq!(&got, &want, "op #{} {:?}: PgStore (left) and MemStore (right) differ", i, op);
        for o in steps(want) {
            for l in labels(&o) {
                *seen.entry(l).or_default() += 1;
            }
            known.record(o);
        }
        known.snap = mem.snapshot().await.map_err(|e| TestCaseError::fail(e.to_string()))?;
        let pg_snap = pg.snapshot().await.map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&pg_snap, &known.snap, "op #{} {:?}: snapshots differ (left PgStore, right MemStore)", i, op);
        check_versions(&mem, &pg, &known.snap, &mut versions, i, op).await?;
    }
    Ok(())
}

#[test]
fn pg_store_behaves_exactly_like_mem_store() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let db = rt.block_on(TestDb::create(2));
    // Deterministic by default (CI); PROPTEST_RNG_SEED=<u64> explores elsewhere.
    let rng_seed = match Config::default().rng_seed {
        RngSeed::Random => RngSeed::Fixed(DEFAULT_RNG_SEED),
        chosen => chosen,
    };
    let config = Config { cases: 64, rng_seed, max_shrink_iters: 512, source_file: Some(file!()), ..Config::default() };
    let mut runner = TestRunner::new(config);
    let seen = RefCell::new(BTreeMap::new());
    let result = runner
        .run(&prop::collection::vec(op(), 1..=40), |ops| rt.block_on(run_case(&db, &ops, &mut seen.borrow_mut())));
    rt.block_on(db.drop_db());
    if let Err(e) = result {
        panic!("{e}");
    }
    let seen = seen.into_inner();
    eprintln!("paths exercised: {seen:?}");
    let missed: Vec<&&str> = MUST_REACH.iter().filter(|l| !seen.contains_key(**l)).collect();
    assert!(missed.is_empty(), "the generator never reached {missed:?}; seen {seen:?}");
}
