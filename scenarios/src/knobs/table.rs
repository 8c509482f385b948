//! The knob table: one row per key of the scenario file, in the README's
//! order. Data, not code: each row is read by the loader, the swarm draw,
//! the shrinker and the README renderer.

use super::{Access, Bound, Check, FromValue, Knob, MIN_PHASE_MS, MS_GRAIN, Rule, Shrink, Swarm, Value};
use crate::fault_kind::FaultKind as F;
use crate::limits::{
    MAX_HOLD_TTL_MS, MAX_LATENCY_MS, MAX_PAYMENT_TTL_MS, MAX_PHASE_MS, MAX_SEATS_PER_EVENT, MAX_SEATS_PER_HOLD,
    MAX_STALL_MS,
};
use crate::model::Outcome;
use crate::names::{
    CACHE_FAULT_NAMES, CLASSIFICATION_NAMES, COMMIT_POINT_NAMES, INVARIANT_NAMES, PATH_NAMES, ROOM_POLICY_NAMES,
};

/// A key every scenario has: `req!(workload.events)`.
macro_rules! req {
    ($($p:ident).+) => {
        Access { get: |s| Some(Value::from(s.$($p).+.clone())), set: |s, v| s.$($p).+ = FromValue::from_value(v) }
    };
}

/// An optional key (an `Option` field) of a table every scenario has.
macro_rules! maybe {
    ($($p:ident).+) => {
        Access { get: |s| s.$($p).+.clone().map(Value::from), set: |s, v| s.$($p).+ = FromValue::from_value(v) }
    };
}

/// A key of an optional table: `opt!(faults.paused_client => probability)`.
macro_rules! opt {
    ($($t:ident).+ => $f:ident) => {
        Access {
            get: |s| s.$($t).+.as_ref().map(|t| Value::from(t.$f.clone())),
            set: |s, v| if let Some(t) = s.$($t).+.as_mut() { t.$f = FromValue::from_value(v) },
        }
    };
}

/// An optional key of an optional table: `opt_maybe!(waiting_room => poll_max_s)`.
macro_rules! opt_maybe {
    ($($t:ident).+ => $f:ident) => {
        Access {
            get: |s| s.$($t).+.as_ref().and_then(|t| t.$f.clone()).map(Value::from),
            set: |s, v| if let Some(t) = s.$($t).+.as_mut() { t.$f = FromValue::from_value(v) },
        }
    };
}

/// An optional table itself: `table!(faults.cache)`.
macro_rules! table {
    ($($t:ident).+) => {
        Access {
            get: |s| s.$($t).+.as_ref().map(|_| Value::Table),
            set: |s, v| {
                assert_eq!(v, Value::Absent, "a table's row only removes it");
                s.$($t).+ = None;
            },
        }
    };
}

/// A row with the defaults: no rule, no note, kept by swarm and shrink.
const ROW: Knob = Knob {
    key: "",
    meaning: "",
    check: Check::Special(""),
    rule: None,
    note: "",
    access: Access::NONE,
    shrink: Shrink::Keep,
    swarm: Swarm::Keep,
};

const fn count(min: i64, max: i64) -> Check {
    Check::Count { min: Bound::Fixed(min), max: Bound::Fixed(max) }
}

const fn ms(min: i64, max: i64) -> Check {
    Check::Duration { min: Bound::Fixed(min), max: Bound::Fixed(max) }
}

const fn range(max: i64) -> Check {
    Check::Range { max: Bound::Fixed(max) }
}

const P: Check = Check::Probability;
const LADDER: Shrink = Shrink::Ladder { lo: 1, grain: 1 };
const LADDER_MS: Shrink = Shrink::Ladder { lo: 1, grain: MS_GRAIN };
const LADDER_PHASE: Shrink = Shrink::Ladder { lo: MIN_PHASE_MS, grain: MIN_PHASE_MS };

/// Every key of the scenario file.
pub static KNOBS: &[Knob] = &[
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
    Knob {
        key: "faults.paused_client",
        meaning: "paused clients",
        check: Check::Table,
        access: table!(faults.paused_client),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::PausedClient),
        ..ROW
    },
    Knob {
        key: "faults.paused_client.probability",
        meaning: "probability that a user pauses right after acquiring a hold",
        check: P,
        access: opt!(faults.paused_client => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::PausedClient),
        ..ROW
    },
    Knob {
        key: "faults.paused_client.pause_ms",
        meaning: "how long it stays paused; above `hold_ttl_ms` it outlives its hold",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.paused_client => pause_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.stale_token",
        meaning: "stale hold tokens replayed",
        check: Check::Table,
        access: table!(faults.stale_token),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::StaleToken),
        ..ROW
    },
    Knob {
        key: "faults.stale_token.probability",
        meaning: "probability, per granted hold and per sold-out look, that a user presents a hold token that is not its current one: its own previous token (Alice's old request arriving after she holds again) or the newest hold of another user (a leaked link, often still live); three times in four as a checkout, else a release",
        check: P,
        access: opt!(faults.stale_token => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::StaleToken),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback",
        meaning: "payment callbacks late, twice or out of order",
        check: Check::Table,
        access: table!(faults.delayed_callback),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.probability",
        meaning: "probability that a payment callback (each webhook copy) is held back `delay_ms`; every copy is otherwise sent within 0–1,000 ms (`simulator::world::plan::WEBHOOK_JITTER_MS`). Late successes are `faults.provider.late_success_probability`",
        check: P,
        access: opt!(faults.delayed_callback => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.delay_ms",
        meaning: "how much later a held-back callback arrives; above `payment_ttl_ms` it arrives after the deadline",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.delayed_callback => delay_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.duplicate_probability",
        meaning: "probability that a callback is delivered twice",
        check: P,
        access: opt!(faults.delayed_callback => duplicate_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.delayed_callback.reorder_probability",
        meaning: "probability that a callback is held back a further 2,001 ms, so that later ones overtake it",
        check: P,
        access: opt!(faults.delayed_callback => reorder_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::DelayedCallback),
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit",
        meaning: "crashes between a store commit and the answer",
        check: Check::Table,
        access: table!(faults.crash_after_commit),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::CrashAfterCommit),
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.probability",
        meaning: "probability that a committed write's answer is lost to a crash of its host",
        check: P,
        access: opt!(faults.crash_after_commit => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::CrashAfterCommit),
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.restart_after_ms",
        meaning: "time until the host restarts",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.crash_after_commit => restart_after_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.crash_after_commit.points",
        meaning: "the commit points where a crash may strike, each right after its store transaction commits: handlers `hold`, `release`, `checkout`; dispatcher `outbox-claim`, `payment-outcome` (also the reconciler's); reconciler `unresolved-release`; `webhook` (applied, not yet acknowledged); `sweep`; refunds `compensation-start`, `compensation-finish`",
        check: Check::Names { known: COMMIT_POINT_NAMES, noun: "commit point", non_empty: true },
        note: "default `[\"checkout\"]`",
        access: opt!(faults.crash_after_commit => points),
        shrink: Shrink::OneLess,
        ..ROW
    },
    Knob {
        key: "faults.provider",
        meaning: "the payment provider misbehaves",
        check: Check::Table,
        access: table!(faults.provider),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.unknown_probability",
        meaning: "probability that a charge is processed but its answer lost",
        check: P,
        access: opt!(faults.provider => unknown_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.decline_probability",
        meaning: "probability that a charge is declined",
        check: P,
        access: opt!(faults.provider => decline_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.error_rate",
        meaning: "probability that a request fails before processing (retryable)",
        check: P,
        rule: Some(Rule {
            broken: |s| {
                s.faults
                    .provider
                    .as_ref()
                    .is_some_and(|p| p.unknown_probability + p.decline_probability + p.error_rate > 1.0)
            },
            message: "unknown_probability + decline_probability + error_rate exceed 1",
        }),
        note: "`unknown_probability + decline_probability + error_rate <= 1`",
        access: opt!(faults.provider => error_rate),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
    },
    Knob {
        key: "faults.provider.latency_ms",
        meaning: "provider response time, `{ min, max }`: each request waits a uniform draw in `min..=max`",
        check: range(MAX_LATENCY_MS),
        access: opt!(faults.provider => latency_ms),
        ..ROW
    },
    Knob {
        key: "faults.provider.late_success_probability",
        meaning: "probability that a charge answers `processing` and succeeds only 5 s after the payment deadline (`simulator::world::plan::LATE_SUCCESS_AFTER_DEADLINE_MS`), its callback bringing the outcome",
        check: P,
        access: opt!(faults.provider => late_success_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.refund_failure_probability",
        meaning: "probability that a refund/void attempt fails",
        check: P,
        access: opt!(faults.provider => refund_failure_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Provider),
        ..ROW
    },
    Knob {
        key: "faults.provider.lenient_refunds",
        meaning: "the provider accepts a refund under a new idempotency key even beyond the charged amount (each key a separate refund), as a real provider with partial refunds does; only holdfast's own key discipline then prevents a double refund. Swarm scenarios draw it per seed",
        check: Check::Flag,
        note: "default `false` (the fake refuses a refund beyond the charge)",
        access: opt!(faults.provider => lenient_refunds),
        swarm: Swarm::Lenient,
        ..ROW
    },
    Knob {
        key: "faults.provider.window_ms",
        meaning: "when the provider's faults hold, `{ min, max }` ms into the fault phase (a brownout mid-sale); absent: the whole fault phase",
        check: Check::Range { max: Bound::Of("`phases.fault_ms`", |s| s.phases.fault_ms) },
        access: opt_maybe!(faults.provider => window_ms),
        ..ROW
    },
    Knob {
        key: "faults.network",
        meaning: "network partitions and latency",
        check: Check::Table,
        access: table!(faults.network),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Network),
        ..ROW
    },
    Knob {
        key: "faults.network.partition_probability",
        meaning: "probability per simulated second that a random link is partitioned",
        check: P,
        access: opt!(faults.network => partition_probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Network),
        ..ROW
    },
    Knob {
        key: "faults.network.partition_ms",
        meaning: "how long a partition lasts",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.network => partition_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.network.latency_ms",
        meaning: "latency of every message on every link, `{ min, max }` (turmoil draws it per message; at least 1 ms, and `max` at least `min + 1`); without `[faults.network]` it is 1..=20 ms",
        check: range(MAX_LATENCY_MS),
        access: opt!(faults.network => latency_ms),
        ..ROW
    },
    Knob {
        key: "faults.network.pinned",
        meaning: "the link faults themselves, as `simulator shrink` writes them in a capsule: a list of `{ start_ms, end_ms, a, b, mode }` (`a`/`b`: `svcN` and `provider`, or `clientN` and `svcN`; `mode`: `\"cut\"` drops messages, `\"held\"` queues them until the end); exactly these strike and none is drawn from `partition_probability` (which is still drawn, so the cache faults drawn after it stay as they were)",
        check: Check::Special("`0 <= start_ms < end_ms <= phases.fault_ms`; hosts of this world; at most 10,000"),
        ..ROW
    },
    Knob {
        key: "faults.clock_skew",
        meaning: "service hosts' clocks disagree (the store's clock decides)",
        check: Check::Table,
        access: table!(faults.clock_skew),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::ClockSkew),
        ..ROW
    },
    Knob {
        key: "faults.clock_skew.max_skew_ms",
        meaning: "each service host's clock is off by up to this much either way",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.clock_skew => max_skew_ms),
        shrink: LADDER_MS,
        swarm: Swarm::ScaleMs(F::ClockSkew),
        ..ROW
    },
    Knob {
        key: "faults.sweeper_stall",
        meaning: "the expiry sweeper stops for a while",
        check: Check::Table,
        access: table!(faults.sweeper_stall),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::SweeperStall),
        ..ROW
    },
    Knob {
        key: "faults.sweeper_stall.from_ms",
        meaning: "when the expiry sweeper stalls, from the start of the run",
        check: ms(0, MAX_STALL_MS),
        access: opt!(faults.sweeper_stall => from_ms),
        ..ROW
    },
    Knob {
        key: "faults.sweeper_stall.to_ms",
        meaning: "when it resumes; past the end of the settle phase means never (broken expiry)",
        check: Check::Duration {
            min: Bound::Of("`from_ms + 1`", |s| s.faults.sweeper_stall.as_ref().map_or(0, |f| f.from_ms + 1)),
            max: Bound::Fixed(MAX_STALL_MS),
        },
        access: opt!(faults.sweeper_stall => to_ms),
        ..ROW
    },
    Knob {
        key: "faults.store_outage",
        meaning: "the store is unreachable for a window",
        check: Check::Table,
        access: table!(faults.store_outage),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::StoreOutage),
        ..ROW
    },
    Knob {
        key: "faults.store_outage.from_ms",
        meaning: "when the store becomes unreachable (every call of every service host fails with a backend error, as when PostgreSQL is down: the service answers `503 backend`, its health check `503 unavailable`, its background work retries after), from the start of the run",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1`", |s| s.phases.fault_ms - 1),
        },
        access: opt!(faults.store_outage => from_ms),
        ..ROW
    },
    Knob {
        key: "faults.store_outage.to_ms",
        meaning: "when it answers again",
        check: Check::Duration {
            min: Bound::Of("`from_ms + 1`", |s| s.faults.store_outage.as_ref().map_or(0, |f| f.from_ms + 1)),
            max: Bound::Of("`phases.fault_ms`", |s| s.phases.fault_ms),
        },
        access: opt!(faults.store_outage => to_ms),
        ..ROW
    },
    Knob {
        key: "faults.rooms_lost",
        meaning: "the waiting rooms' store loses every room",
        check: Check::Table,
        rule: Some(Rule {
            broken: |s| s.faults.rooms_lost.is_some() && s.waiting_room.is_none(),
            message: "needs a [waiting_room] to lose",
        }),
        note: "needs `[waiting_room]`",
        access: table!(faults.rooms_lost),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::RoomsLost),
    },
    Knob {
        key: "faults.rooms_lost.at_ms",
        meaning: "when the waiting rooms' store (Redis, to the service) loses every room, as a restart without persistence does; the service must rebuild each room from the authority's record at its next call on it, and every later answer is held to the room as it was",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1`", |s| s.phases.fault_ms - 1),
        },
        access: opt!(faults.rooms_lost => at_ms),
        ..ROW
    },
    Knob {
        key: "faults.rooms_lost.down_ms",
        meaning: "how long the rooms' store is unreachable first (Redis stopped), from `at_ms`; meanwhile every call on a room's event must fail closed (`503`; the auditor accepts nothing else, and a hold granted without an admission is `admission-required`); 0: the rooms are lost at once",
        check: Check::Duration {
            min: Bound::Fixed(0),
            max: Bound::Of("`phases.fault_ms - 1 - at_ms`", |s| {
                s.phases.fault_ms - 1 - s.faults.rooms_lost.as_ref().map_or(0, |r| r.at_ms)
            }),
        },
        note: "default 0",
        access: opt!(faults.rooms_lost => down_ms),
        ..ROW
    },
    Knob {
        key: "faults.cache",
        meaning: "the seat-map cache goes down, loses its invalidations, or is poisoned",
        check: Check::Table,
        access: table!(faults.cache),
        shrink: Shrink::Drop,
        swarm: Swarm::Switch(F::Cache),
        ..ROW
    },
    Knob {
        key: "faults.cache.probability",
        meaning: "probability that a seat-map cache fault starts, per simulated second of the fault phase in which none is under way (one at a time; the seed's windows are drawn up front, `replay --plan` lists them)",
        check: P,
        access: opt!(faults.cache => probability),
        shrink: Shrink::Probability,
        swarm: Swarm::Scale(F::Cache),
        ..ROW
    },
    Knob {
        key: "faults.cache.length_ms",
        meaning: "how long each lasts (cut short at the end of the fault phase)",
        check: ms(1, MAX_PHASE_MS),
        access: opt!(faults.cache => length_ms),
        shrink: LADDER_MS,
        ..ROW
    },
    Knob {
        key: "faults.cache.modes",
        meaning: "which may strike, one drawn per fault: `\"down\"` (every read misses; puts and invalidations are lost, as when Redis is unreachable), `\"stale\"` (invalidations are lost: entries live out bookingd's cache TTL, 1 s), `\"poisoned\"` (reads answer the cached map with every seat shown available). With cache faults every map served from the cache is traced and `stale-read-bounded` holds it to the TTL",
        check: Check::Names { known: CACHE_FAULT_NAMES, noun: "cache fault", non_empty: true },
        note: "default all three",
        access: opt!(faults.cache => modes),
        shrink: Shrink::OneLess,
        ..ROW
    },
    Knob {
        key: "faults.cache.pinned",
        meaning: "the cache faults themselves, as a capsule writes them: a list of `{ start_ms, end_ms, mode }`; exactly these strike, in time order, one at a time, and none is drawn from `probability`",
        check: Check::Special(
            "`0 <= start_ms < end_ms <= phases.fault_ms`, each starting at or after the previous one's end; mode as in `modes`; at most 10,000",
        ),
        ..ROW
    },
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
