//! The knob table: one row per key of the scenario file outside the fault
//! tables (each fault kind's rows are its module's: `faults/`), in
//! the README's order. Data, not code: each row is read by the loader, the
//! swarm draw, the shrinker and the README renderer.

use super::row::*;
use crate::model::Outcome;
use std::sync::LazyLock;

/// Every key of the scenario file, in the README's order: the keys before
/// the fault tables, every fault kind's (see `faults/`), the keys after.
pub static KNOBS: LazyLock<Vec<&'static Knob>> =
    LazyLock::new(|| BEFORE_FAULTS.iter().chain(crate::faults::knobs()).chain(AFTER_FAULTS).collect());

/// The keys before the fault tables.
static BEFORE_FAULTS: &[Knob] = &[
    Knob {
        key: "name",
        meaning: "unique scenario name, used by `--scenario NAME`",
        check: Check::Special("1..=64 of `[a-z0-9-]`"),
        ..ROW
    },
    Knob {
        key: "description",
        meaning: "one line shown by `simulator list`",
        check: Check::Special("non-empty, one line"),
        ..ROW
    },
    Knob {
        key: "swarm",
        meaning: "swarm testing: per seed, each configured fault is switched on or off (half the time) and its probabilities scaled by a weight in 0.25..=1",
        check: Check::Flag,
        rule: Some(Rule {
            broken: |s| s.swarm && s.faults.kinds().is_empty(),
            message: "swarm = true needs at least one fault under [faults]",
        }),
        note: "default `false`; `true` needs a fault",
        access: req!(swarm),
        ..ROW
    },
    Knob {
        key: "workload.events",
        meaning: "events on sale",
        check: count(1, 100),
        access: req!(workload.events),
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.seats_per_event",
        meaning: "seats of each event",
        check: count(1, MAX_SEATS_PER_EVENT),
        access: Access {
            get: |s| Some(s.workload.seats_per_event.into()),
            set: |s, v| {
                let w = &mut s.workload;
                w.seats_per_event = FromValue::from_value(v);
                w.hot_seats = w.hot_seats.min(w.seats_per_event);
                if w.hot_seats == 0 {
                    w.hot_share = 0.0;
                }
            },
        },
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.hot_seats",
        meaning: "size of the hot set (the first seats of each event) that forces contention",
        check: Check::Count {
            min: Bound::Fixed(0),
            max: Bound::Of("`seats_per_event`", |s| s.workload.seats_per_event.into()),
        },
        access: Access {
            get: |s| Some(s.workload.hot_seats.into()),
            set: |s, v| {
                s.workload.hot_seats = FromValue::from_value(v);
                if s.workload.hot_seats == 0 {
                    s.workload.hot_share = 0.0;
                }
            },
        },
        shrink: Shrink::Ladder { lo: 0, grain: 1 },
        ..ROW
    },
    Knob {
        key: "workload.hot_share",
        meaning: "probability that a selection is drawn from the hot set",
        check: P,
        rule: Some(Rule {
            broken: |s| s.workload.hot_seats == 0 && s.workload.hot_share > 0.0,
            message: "is above 0 but workload.hot_seats is 0",
        }),
        note: "0 when `hot_seats` is 0",
        access: req!(workload.hot_share),
        ..ROW
    },
    Knob {
        key: "workload.users",
        meaning: "virtual users",
        check: count(1, 100_000),
        access: req!(workload.users),
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.client_hosts",
        meaning: "client hosts the users are spread over",
        check: count(1, 64),
        access: req!(workload.client_hosts),
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.server_hosts",
        meaning: "`bookingd` hosts",
        check: count(1, 16),
        access: req!(workload.server_hosts),
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.think_time_ms",
        meaning: "pause between a user's steps, `{ min, max }`",
        check: range(MAX_PHASE_MS),
        access: req!(workload.think_time_ms),
        ..ROW
    },
    Knob {
        key: "workload.arrival_ms",
        meaning: "optional: when each user arrives (its first step), ms after the sale opens; absent: after a think time like any step. A narrow range is an on-sale opening (`opening-burst`)",
        check: range(MAX_PHASE_MS),
        access: maybe!(workload.arrival_ms),
        ..ROW
    },
    Knob {
        key: "workload.multi_seat_share",
        meaning: "probability that a selection has several adjacent seats",
        check: P,
        rule: Some(Rule {
            broken: |s| s.workload.multi_seat_share > 0.0 && s.workload.max_seats_per_hold < 2,
            message: "is above 0 but workload.max_seats_per_hold is 1",
        }),
        note: "needs `max_seats_per_hold >= 2`",
        access: req!(workload.multi_seat_share),
        shrink: Shrink::Probability,
        ..ROW
    },
    Knob {
        key: "workload.max_seats_per_hold",
        meaning: "largest selection",
        check: count(1, MAX_SEATS_PER_HOLD),
        access: Access {
            get: |s| Some(s.workload.max_seats_per_hold.into()),
            set: |s, v| {
                s.workload.max_seats_per_hold = FromValue::from_value(v);
                if s.workload.max_seats_per_hold == 1 {
                    s.workload.multi_seat_share = 0.0;
                    s.workload.partial_checkout_share = 0.0;
                }
            },
        },
        shrink: LADDER,
        ..ROW
    },
    Knob {
        key: "workload.checkout_share",
        meaning: "probability that a user with a hold checks out",
        check: P,
        access: req!(workload.checkout_share),
        ..ROW
    },
    Knob {
        key: "workload.abandon_share",
        meaning: "probability that a user with a hold walks away without releasing it (an abandoned hold)",
        check: P,
        rule: Some(Rule {
            broken: |s| s.workload.checkout_share + s.workload.abandon_share > 1.0,
            message: "checkout_share + abandon_share exceed 1",
        }),
        note: "`checkout_share + abandon_share <= 1` (the rest release)",
        access: req!(workload.abandon_share),
        ..ROW
    },
    Knob {
        key: "workload.hoard_share",
        meaning: "probability that a user with a hold keeps it and holds again at once (runs of 2..=`max_seats_per_hold` seats, at most 6 more holds) until the per-user cap (bookingd's default, 8 seats) refuses with 409 hold-limit; the extra holds are abandoned",
        check: P,
        note: "default 0",
        access: req!(workload.hoard_share),
        shrink: Shrink::Probability,
        ..ROW
    },
    Knob {
        key: "workload.double_submit_share",
        meaning: "probability that a granted checkout is sent again at once under a new idempotency key (a double click), which must be refused",
        check: P,
        note: "default 0",
        access: req!(workload.double_submit_share),
        shrink: Shrink::Probability,
        ..ROW
    },
    Knob {
        key: "workload.partial_checkout_share",
        meaning: "probability that the checkout of a multi-seat hold first names only its first seat, which must be refused",
        check: P,
        rule: Some(Rule {
            broken: |s| s.workload.partial_checkout_share > 0.0 && s.workload.max_seats_per_hold < 2,
            message: "is above 0 but workload.max_seats_per_hold is 1",
        }),
        note: "default 0; needs `max_seats_per_hold >= 2`",
        access: req!(workload.partial_checkout_share),
        shrink: Shrink::Probability,
        ..ROW
    },
    Knob {
        key: "workload.probers",
        meaning: "users besides `users` who walk the API's whole answer space for the auditor: every refusal of the surface (routing, credentials, body, path, query, the store's input rules), signed and unsigned webhooks, more hold attempts than the rate limit allows, another user's hold, order and idempotency key, a token on another event, the per-user cap met exactly and passed by one, checkouts and takeovers aimed one tick before, at and after a hold's deadline",
        check: count(0, 100),
        note: "default 0",
        access: req!(workload.probers),
        shrink: Shrink::Ladder { lo: 0, grain: 1 },
        ..ROW
    },
    Knob {
        key: "workload.hold_ttl_ms",
        meaning: "hold time to live",
        check: ms(1, MAX_HOLD_TTL_MS),
        access: req!(workload.hold_ttl_ms),
        ..ROW
    },
    Knob {
        key: "workload.payment_ttl_ms",
        meaning: "how long a payment may stay unresolved before its seats may be released",
        check: ms(1, MAX_PAYMENT_TTL_MS),
        access: req!(workload.payment_ttl_ms),
        ..ROW
    },
    Knob {
        key: "phases.fault_ms",
        meaning: "users and faults run this long",
        check: ms(1, MAX_PHASE_MS),
        access: req!(phases.fault_ms),
        shrink: LADDER_PHASE,
        ..ROW
    },
    Knob {
        key: "phases.settle_ms",
        meaning: "then faults stop and the system must settle (holds expired, payments reconciled, compensations finished or flagged) within this long; the phase ends earlier once the world is quiescent (users done, hosts up, no delayed provider work, nothing live in the store)",
        check: ms(1, MAX_PHASE_MS),
        access: req!(phases.settle_ms),
        shrink: LADDER_PHASE,
        ..ROW
    },
];

/// The keys after the fault tables.
static AFTER_FAULTS: &[Knob] = &[
    Knob {
        key: "service.max_refund_attempts",
        meaning: "refund attempts before a compensation gives up and is flagged `failed` for operators (unknown outcomes get twice as many)",
        check: count(1, 100),
        note: "default bookingd's 8",
        access: maybe!(service.max_refund_attempts),
        ..ROW
    },
    Knob {
        key: "waiting_room",
        meaning: "a waiting room in front of every event: users join its queue at their arrival, wait until admitted (polling when told) and only then hold and check out",
        check: Check::Table,
        rule: Some(Rule {
            broken: |s| s.swarm && s.waiting_room.is_some(),
            message: "a swarm scenario has no waiting room",
        }),
        note: "not with `swarm`",
        access: table!(waiting_room),
        shrink: Shrink::Drop,
        ..ROW
    },
    Knob {
        key: "waiting_room.policy",
        meaning: "who is admitted first: `fifo` (arrival order), `lottery` (a shuffle recomputed from the room's revealed seed), `priority` (members' tier first)",
        check: Check::Name { known: ROOM_POLICY_NAMES, noun: "room policy" },
        access: opt!(waiting_room => policy),
        ..ROW
    },
    Knob {
        key: "waiting_room.target_active_sessions",
        meaning: "checkout sessions open at once at most",
        check: count(1, 100_000),
        access: opt!(waiting_room => target_active_sessions),
        ..ROW
    },
    Knob {
        key: "waiting_room.session_ttl_ms",
        meaning: "how long an admission lasts unless it ends sooner",
        check: ms(1_000, MAX_PHASE_MS),
        access: opt!(waiting_room => session_ttl_ms),
        ..ROW
    },
    Knob {
        key: "waiting_room.opens_at_ms",
        meaning: "when the sale opens (nobody is admitted before), from the start of the run",
        check: ms(0, MAX_PHASE_MS),
        access: opt!(waiting_room => opens_at_ms),
        ..ROW
    },
    Knob {
        key: "waiting_room.prior_session_ms",
        meaning: "the admission law's prior mean checkout session",
        check: ms(1, MAX_PHASE_MS),
        note: "default 90000, the brief's",
        access: opt_maybe!(waiting_room => prior_session_ms),
        ..ROW
    },
    Knob {
        key: "waiting_room.member_share",
        meaning: "share of users with a members' credential (tier 0) in a priority room; the rest are the public",
        check: P,
        rule: Some(Rule {
            broken: |s| s.waiting_room.as_ref().is_some_and(|r| r.member_share > 0.0 && r.policy != "priority"),
            message: "is above 0 but the policy is not priority",
        }),
        note: "default 0; 0 unless the policy is `priority`",
        access: opt!(waiting_room => member_share),
        ..ROW
    },
    Knob {
        key: "waiting_room.bypass_share",
        meaning: "share of users who try to get past the queue: holds and checkouts without a token, with a forged, borrowed, other-event or spent one",
        check: P,
        note: "default 0",
        access: opt!(waiting_room => bypass_share),
        ..ROW
    },
    Knob {
        key: "waiting_room.poll_max_s",
        meaning: "longest wait, in seconds, a waiting client is told before asking again",
        check: count(2, 3_600),
        note: "default 60",
        access: opt_maybe!(waiting_room => poll_max_s),
        ..ROW
    },
    Knob {
        key: "seeds.default",
        meaning: "seeds a plain `run` uses: `\"A..B\"` (B excluded), `\"A..=B\"`, or `\"N\"`",
        check: Check::Special("1..=1000000 seeds"),
        ..ROW
    },
    Knob {
        key: "expect.outcome",
        meaning: "`\"pass\"`: no invariant may be violated; `\"fail\"`: the checks must catch a violation (a scenario that proves a check works)",
        check: Check::Special("`\"pass\"` or `\"fail\"`"),
        ..ROW
    },
    Knob {
        key: "expect.violations",
        meaning: "with `\"fail\"`: invariants each seed must violate (empty: any)",
        check: Check::Names { known: INVARIANT_NAMES, noun: "invariant", non_empty: false },
        rule: Some(Rule {
            broken: |s| s.expect.outcome == Outcome::Pass && !s.expect.violations.is_empty(),
            message: "lists violations but expect.outcome is \"pass\"",
        }),
        note: "empty with `\"pass\"`",
        access: req!(expect.violations),
        ..ROW
    },
    Knob {
        key: "expect.classification",
        meaning: "the metrics classification each seed must get",
        check: Check::Name { known: CLASSIFICATION_NAMES, noun: "classification" },
        note: "optional",
        access: maybe!(expect.classification),
        ..ROW
    },
    Knob {
        key: "expect.tolerated",
        meaning: "with `\"fail\"`: invariants a seed may violate besides `expect.violations`; any other violation fails the seed (an expected failure must be the only failure)",
        check: Check::Names { known: INVARIANT_NAMES, noun: "invariant", non_empty: false },
        rule: Some(Rule {
            broken: |s| s.expect.outcome == Outcome::Pass && !s.expect.tolerated.is_empty(),
            message: "lists violations but expect.outcome is \"pass\"",
        }),
        note: "empty with `\"pass\"`",
        access: req!(expect.tolerated),
        ..ROW
    },
    Knob {
        key: "expect.must_happen",
        meaning: "paths that must happen at least once over the default seeds (judged when `run` covers them): a fault that silently stopped firing, or a story the workload no longer tells, fails the scenario. The run summary shows how often each path happened",
        check: Check::Names { known: PATH_NAMES, noun: "path", non_empty: false },
        access: req!(expect.must_happen),
        ..ROW
    },
];
