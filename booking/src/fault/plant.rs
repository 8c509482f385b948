//! The planted-bug catalog: realistic mistakes, each written the way a
//! developer might write it, each planted where it would live (in both
//! stores when it lives in SQL), and each naming the library scenario and
//! the invariant that must catch it within that scenario's default seeds.
//! `simulator plants` lists them; `simulator run --plant NAME` applies one;
//! `simulator plants --check` proves every entry is caught.

/// Where a planted bug lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Area {
    /// Taking holds.
    Holds,
    /// Checkout (begin payment).
    Checkout,
    /// Recording payment outcomes.
    PaymentOutcome,
    /// Applying provider webhooks.
    Webhooks,
    /// Reconciling unknown payments.
    Reconciliation,
    /// Refunds of charges without a ticket.
    Compensation,
    /// Returning expired holds.
    Expiry,
    /// The waiting room's admission gate.
    Admission,
    /// Answering while a dependency (the database) is down.
    Availability,
    /// Serving seat maps (the cache).
    Reads,
}

impl Area {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Area::Holds => "holds",
            Area::Checkout => "checkout",
            Area::PaymentOutcome => "payment-outcome",
            Area::Webhooks => "webhooks",
            Area::Reconciliation => "reconciliation",
            Area::Compensation => "compensation",
            Area::Expiry => "expiry",
            Area::Admission => "admission",
            Area::Availability => "availability",
            Area::Reads => "reads",
        }
    }
}

/// One planted bug. See [`Plant::ALL`] for the catalog and each entry's
/// `what`, `scenario` and `invariant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plant {
    /// The admission gate checks the token's signature, event, user and
    /// expiry, but not whether its checkout session is still open.
    AdmissionIgnoresSession,
    /// When the rooms' store has lost an event's room, the service treats the
    /// event as having none instead of rebuilding the room from the record.
    RoomLossOpensGate,
    /// While the rooms' store cannot answer, the service takes the event for
    /// one without a room (the gate fails open during an outage).
    OutageOpensGate,
    /// The store reads its clock from the `bookingd` process instead of the
    /// database: a hold's deadline and every expiry decision follow that
    /// host's clock.
    StoreTrustsLocalClock,
    /// The Redis seat-map cache takes an entry without its tag line for a
    /// bare seat-map body (an older entry format) and serves it, whatever it holds.
    CacheServesUntagged,
    /// A checkout whose store call outlasts 300 ms (the handler's
    /// `SLOW_CHECKOUT_MS`) is answered as refused (the hold is gone) while
    /// the store's work goes on and may commit.
    SlowCheckoutRefused,
    /// A charge whose answer was lost is tried again at once under a fresh
    /// idempotency key (the provider charges again).
    ChargeNewKeyPerRetry,
    /// The Redis seat-map cache waits for Redis as long as Redis takes
    /// (30 s) instead of 300 ms.
    CacheWaitsForRedis,
    /// A charge the provider could not be reached for (never sent) is
    /// recorded as declined, releasing the seats.
    UnreachableChargeDeclined,
    /// The webhook endpoint refuses a second delivery of an event it has
    /// applied as a replay, instead of answering it as applied.
    ReplayedWebhookRefused,
    /// The Redis seat-map cache writes each entry's lifetime in seconds
    /// (`EX`) where it means milliseconds: entries live 1,000 times too long.
    CacheTtlInSeconds,
    /// The hold endpoint takes a selection not in ascending seat order for
    /// malformed (`400 invalid-input`) instead of sorting it itself.
    HoldNeedsSortedSeats,
    /// The database probe finds the database down but never opens the
    /// circuit: every request waits for the pool's timeout before its `503`.
    CircuitNeverOpens,
    /// Checkout drops the whole condition (state, token, holder, deadline): the
    /// unconditional `UPDATE … SET state = 'payment_pending'`, which takes even a sold seat.
    UnconditionalCheckout,
    /// Checkout's condition forgets the token comparison.
    CheckoutIgnoresToken,
    /// Checkout's condition forgets the holder comparison.
    CheckoutIgnoresHolder,
    /// Checkout's condition forgets the deadline comparison.
    CheckoutIgnoresDeadline,
    /// Checkout's condition forgets `state = 'held'`: a double-clicked
    /// checkout opens a second order for seats already in payment.
    CheckoutIgnoresState,
    /// Checkout takes the seats it names without checking they are the whole hold.
    CheckoutTakesNamedSeats,
    /// A multi-seat hold keeps the seats it could get when one is taken.
    HoldKeepsPartial,
    /// Taking over an expired hold keeps its token (`COALESCE(hold_token, new)`).
    TakeoverKeepsToken,
    /// A hold takes over any held seat, expired or not.
    HoldIgnoresDeadline,
    /// The per-user cap compares only the seats already held (`held >= limit`),
    /// not held plus requested.
    HoldLimitIgnoresRequest,
    /// A checkout retry checks the hold before its idempotency key, so a
    /// retry after a lost answer is refused instead of finding its order.
    IdempotencyAfterHoldCheck,
    /// An unknown payment outcome releases the seats at once.
    UnknownReleasesAtOnce,
    /// The dispatcher takes a lost provider answer for a decline.
    DispatchUnknownAsDeclined,
    /// A repeated success (duplicate webhook) of a confirmed order opens a refund.
    RepeatSuccessRefunds,
    /// The webhook handler takes a `refund.failed` callback for a success.
    WebhookRefundFailedAsSucceeded,
    /// The reconciler releases an unknown payment at its first check, without
    /// waiting for the deadline; the store's release skips its check too.
    ReconcileReleasesEarly,
    /// A refund retried after an unknown outcome goes out under a fresh idempotency key.
    RefundNewKeyPerRetry,
    /// A compensation that gives up marks its order `failed`, out of the operators' list.
    RefundGiveUpHidesOrder,
    /// A refund attempt takes over an `in_flight` one without waiting for its lease.
    RefundTakeoverIgnoresLease,
    /// The sweeper also takes holds that will expire before its next pass.
    SweepEarly,
    /// The sweeper also frees `payment_pending` seats past their hold deadline.
    SweepFreesPaymentPending,
}

/// One catalog entry's facts.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// The plant.
    pub plant: Plant,
    /// Stable kebab-case name (`--plant NAME`).
    pub name: &'static str,
    /// Where it lives.
    pub area: Area,
    /// The mistake, as a developer would make it.
    pub what: &'static str,
    /// Where it is planted (`MemStore`, `PgStore`, `Workflow`, ...).
    pub lives_in: &'static str,
    /// The library scenario that must catch it within its default seeds.
    pub scenario: &'static str,
    /// The invariant that must report it.
    pub invariant: &'static str,
    /// Further library scenarios whose story it breaks, each with the
    /// invariant that must report it there.
    pub also: &'static [(&'static str, &'static str)],
    /// Caught on the real stack only (`simulator chaos --plant NAME
    /// --scenario SCENARIO --expect-caught INVARIANT`): it breaks a part the
    /// simulator does not run (the database circuit), so `simulator plants`
    /// lists it and does not check it.
    pub real_stack: bool,
    /// For a real-stack plant that no chaos run catches within `ci/test`'s
    /// time, the test (a path under the workspace) that shows its nemesis
    /// exposes it, with real processes; `None`: a `ci/test` chaos step does.
    pub proved_by_test: Option<&'static str>,
}

const fn e(
    plant: Plant,
    name: &'static str,
    area: Area,
    lives_in: &'static str,
    scenario: &'static str,
    invariant: &'static str,
    what: &'static str,
) -> Entry {
    Entry { plant, name, area, what, lives_in, scenario, invariant, also: &[], real_stack: false, proved_by_test: None }
}

impl Entry {
    /// Every (scenario, invariant) that must catch this plant: the named one first.
    pub fn catchers(&self) -> Vec<(&'static str, &'static str)> {
        std::iter::once((self.scenario, self.invariant)).chain(self.also.iter().copied()).collect()
    }

    const fn also(mut self, also: &'static [(&'static str, &'static str)]) -> Entry {
        self.also = also;
        self
    }

    const fn real_stack(mut self) -> Entry {
        self.real_stack = true;
        self
    }

    const fn proved_by_test(mut self, test: &'static str) -> Entry {
        self.real_stack = true;
        self.proved_by_test = Some(test);
        self
    }
}

/// The catalog, in a fixed order.
pub const CATALOG: &[Entry] = &[
    e(
        Plant::UnconditionalCheckout,
        "unconditional-checkout",
        Area::Checkout,
        "MemStore, PgStore",
        "alice-bob-stale-token",
        "no-stale-authority",
        "checkout moves the seats to payment_pending whatever their state, token, holder or deadline, a sold seat included",
    )
    .also(&[("stale-token-replay", "no-stale-authority")]),
    e(
        Plant::CheckoutIgnoresToken,
        "checkout-ignores-token",
        Area::Checkout,
        "MemStore, PgStore",
        "alice-bob-stale-token",
        "no-stale-authority",
        "checkout's condition compares holder and deadline but not the hold token",
    )
    .also(&[("stale-token-replay", "no-stale-authority")]),
    e(
        Plant::CheckoutIgnoresHolder,
        "checkout-ignores-holder",
        Area::Checkout,
        "MemStore, PgStore",
        "alice-bob-stale-token",
        "no-stale-authority",
        "checkout's condition compares token and deadline but not the holder",
    )
    .also(&[("stale-token-replay", "no-stale-authority")]),
    e(
        Plant::CheckoutIgnoresDeadline,
        "checkout-ignores-deadline",
        Area::Checkout,
        "MemStore, PgStore",
        "alice-bob-stale-token",
        "no-stale-authority",
        "checkout's condition compares token and holder but not the hold deadline",
    )
    .also(&[("paused-clients", "no-stale-authority")]),
    e(
        Plant::CheckoutIgnoresState,
        "checkout-ignores-state",
        Area::Checkout,
        "MemStore, PgStore",
        "crash-after-commit",
        "one-booking-per-seat",
        "checkout's condition compares token, holder and deadline but not state = 'held', so a double-clicked checkout opens a second order for seats already in payment",
    ),
    e(
        Plant::CheckoutTakesNamedSeats,
        "checkout-takes-named-seats",
        Area::Checkout,
        "MemStore, PgStore",
        "adjacent-seats",
        "checkout-whole-hold",
        "checkout takes the seats the request names without checking that they are the whole hold, so part of a hold is paid for and the rest lapses",
    ),
    e(
        Plant::HoldKeepsPartial,
        "hold-keeps-partial",
        Area::Holds,
        "MemStore, PgStore",
        "adjacent-seats",
        "hold-all-or-nothing",
        "a multi-seat hold grants the seats it could get when one of them is taken",
    ),
    e(
        Plant::TakeoverKeepsToken,
        "takeover-keeps-token",
        Area::Holds,
        "MemStore, PgStore",
        "alice-bob-stale-token",
        "fresh-hold-token",
        "taking over an expired hold keeps the previous token (SET hold_token = COALESCE(hold_token, $new))",
    )
    .also(&[("paused-clients", "fresh-hold-token")]),
    e(
        Plant::HoldIgnoresDeadline,
        "hold-ignores-deadline",
        Area::Holds,
        "MemStore, PgStore",
        "same-seat-race",
        "no-stale-authority",
        "a hold takes over any held seat, whether or not its deadline has passed",
    )
    .also(&[("hot-seat", "no-stale-authority"), ("opening-burst", "no-stale-authority")]),
    e(
        Plant::HoldLimitIgnoresRequest,
        "hold-limit-ignores-request",
        Area::Holds,
        "MemStore, PgStore (shared decision)",
        "abandoned-holds",
        "hold-cap",
        "the per-user cap compares the seats already held with the cap (held >= limit) instead of held plus requested, so a user just below the cap takes a whole selection past it",
    ),
    e(
        Plant::IdempotencyAfterHoldCheck,
        "idempotency-after-hold-check",
        Area::Checkout,
        "MemStore, PgStore",
        "crash-after-commit",
        "idempotent-retry",
        "checkout checks the hold before looking up its idempotency key, so a retry after a lost answer is refused",
    )
    .also(&[("network-partitions", "idempotent-retry")]),
    e(
        Plant::UnknownReleasesAtOnce,
        "unknown-releases-at-once",
        Area::PaymentOutcome,
        "MemStore, PgStore",
        "payment-unknown",
        "unknown-keeps-seats",
        "an unknown payment outcome releases the seats at once and marks the order released",
    )
    .also(&[("late-success-after-release", "unknown-keeps-seats")]),
    e(
        Plant::DispatchUnknownAsDeclined,
        "dispatch-unknown-as-declined",
        Area::PaymentOutcome,
        "Workflow (dispatcher)",
        "payment-unknown",
        "no-hidden-charge",
        "the dispatcher records a lost provider answer as a decline",
    )
    .also(&[("late-success-after-release", "no-hidden-charge")]),
    e(
        Plant::RepeatSuccessRefunds,
        "repeat-success-refunds",
        Area::Webhooks,
        "MemStore, PgStore",
        "duplicate-webhooks",
        "no-refund-of-ticket",
        "a repeated payment success (a duplicate webhook) of a confirmed order opens a refund",
    )
    .also(&[("all-faults", "no-refund-of-ticket")]),
    e(
        Plant::WebhookRefundFailedAsSucceeded,
        "webhook-refund-failed-as-succeeded",
        Area::Webhooks,
        "Workflow (webhooks)",
        "refund-failures",
        "refund-at-provider",
        "the webhook handler matches every refund.* callback as a success, so a failed refund is recorded as refunded",
    ),
    e(
        Plant::ReconcileReleasesEarly,
        "reconcile-releases-early",
        Area::Reconciliation,
        "Workflow (reconciler), MemStore, PgStore",
        "payment-unknown",
        "unknown-keeps-seats",
        "the reconciler releases an unknown payment at its first check instead of at its deadline",
    )
    .also(&[("late-success-after-release", "no-stale-authority")]),
    e(
        Plant::RefundNewKeyPerRetry,
        "refund-new-key-per-retry",
        Area::Compensation,
        "Workflow (compensation)",
        "refund-failures",
        "no-double-refund",
        "a refund retried after an unknown outcome is sent under a new idempotency key",
    ),
    e(
        Plant::RefundGiveUpHidesOrder,
        "refund-give-up-hides-order",
        Area::Compensation,
        "MemStore, PgStore (shared decision)",
        "refund-failures",
        "compensation-visible",
        "a compensation that gives up marks its order failed instead of compensation_failed",
    ),
    e(
        Plant::RefundTakeoverIgnoresLease,
        "refund-takeover-ignores-lease",
        Area::Compensation,
        "MemStore, PgStore (shared decision)",
        "refund-failures",
        "refund-attempt-due",
        "a refund attempt takes over an in-flight one without checking that its lease has expired, so two dispatchers refund at once",
    ),
    e(
        Plant::SweepEarly,
        "sweep-early",
        Area::Expiry,
        "MemStore, PgStore",
        "abandoned-holds",
        "no-stale-authority",
        "the sweeper also returns holds that will expire before its next pass",
    )
    .also(&[("clock-skew", "no-stale-authority")]),
    e(
        Plant::SweepFreesPaymentPending,
        "sweep-frees-payment-pending",
        Area::Expiry,
        "MemStore, PgStore",
        "all-faults",
        "unknown-keeps-seats",
        "the sweeper also frees payment_pending seats whose hold deadline has passed",
    )
    .also(&[("all-faults", "one-booking-per-seat")]),
    e(
        Plant::AdmissionIgnoresSession,
        "admission-ignores-session",
        Area::Admission,
        "WaitingRoom (the gate)",
        "queue-bypass",
        "admission-required",
        "the admission gate verifies the token but not that its session is still open, so a spent admission holds again",
    ),
    e(
        Plant::RoomLossOpensGate,
        "room-loss-opens-gate",
        Area::Admission,
        "WaitingRoom::spec (the room's existence)",
        "queue-bypass",
        "queue-liveness",
        "once the rooms' store has lost an event's room, the service takes the event for one without a room, so anyone holds without an admission",
    ),
    e(
        Plant::OutageOpensGate,
        "outage-opens-gate",
        Area::Admission,
        "WaitingRoom::spec (the room's existence)",
        "queue-bypass",
        "admission-required",
        "while the rooms' store (Redis) cannot answer, the service takes the event for one without a room, so anyone holds without an admission until Redis is back",
    ),
    e(
        Plant::CircuitNeverOpens,
        "circuit-never-opens",
        Area::Availability,
        "Circuit (the database probe)",
        "paused-clients",
        "outage-answered-fast",
        "the probe finds the database down but never opens the circuit, so while it is down every request waits for the pool's 5 s timeout before its 503 (chaos mode's database partition and restart catch it)",
    )
    .real_stack(),
    e(
        Plant::StoreTrustsLocalClock,
        "store-trusts-local-clock",
        Area::Expiry,
        "the daemon's store clock (PgClock)",
        "clock-skew",
        "hold-lifetime",
        "the store takes its time from the bookingd host instead of the database, so a skewed host grants holds that expire early or late by the store's clock (chaos mode's clock skew catches it)",
    )
    .real_stack(),
    e(
        Plant::CacheServesUntagged,
        "cache-serves-untagged",
        Area::Reads,
        "the Redis seat-map cache (RedisCache::get)",
        "paused-clients",
        "seat-map-valid",
        "the seat-map cache serves an entry without its entity-tag line as a bare seat-map body (the format before tags were cached) without checking it, so a corrupted entry reaches users as a 200 (chaos mode's cache poison catches it)",
    )
    .real_stack(),
    e(
        Plant::SlowCheckoutRefused,
        "slow-checkout-refused",
        Area::Checkout,
        "the checkout handler (http::handlers::checkout)",
        "network-partitions",
        "no-early-expiry",
        "a checkout handler that stops waiting for a slow store answers that the hold is gone while the store's work goes on, so a holder is refused its own hold before the deadline, and an order the user was refused may be created and charged (`refusal-changes-nothing`, when the store's work commits); chaos mode's slow and lossy database links catch it",
    )
    .real_stack(),
    e(
        Plant::ChargeNewKeyPerRetry,
        "charge-new-key-per-retry",
        Area::PaymentOutcome,
        "Workflow (dispatcher)",
        "payment-unknown",
        "no-hidden-charge",
        "a charge whose answer was lost is sent again at once under a new idempotency key, so a call that did reach the provider is charged twice, once under a key the store never heard of (on the real stack, chaos mode's slow provider link catches it too)",
    ),
    e(
        Plant::CacheWaitsForRedis,
        "cache-waits-for-redis",
        Area::Reads,
        "the Redis seat-map cache (LazyRedisCache's call timeout)",
        "cache-faults",
        "cache-never-blocks",
        "the seat-map cache waits for Redis as long as Redis takes, so a stalled Redis holds up every read and write (chaos mode's stall of the cache's Redis catches it)",
    )
    .real_stack(),
    e(
        Plant::UnreachableChargeDeclined,
        "unreachable-charge-declined",
        Area::PaymentOutcome,
        "Workflow (dispatcher)",
        "network-partitions",
        "decline-from-provider",
        "a charge that could not reach the provider (never sent) is recorded as a decline, so a buyer whose payment nobody declined loses the seats (chaos mode's cut of one bookingd from the provider catches it)",
    )
    .real_stack(),
    e(
        Plant::ReplayedWebhookRefused,
        "replayed-webhook-refused",
        Area::Webhooks,
        "the webhook endpoint (service::WorkflowWebhooks)",
        "duplicate-webhooks",
        "legitimate-accepted",
        "a replay guard refuses a second delivery of an event the endpoint has already applied, so a provider whose first answer was lost is refused its genuine webhook (the simulator's duplicated deliveries catch it: the world knows its provider signed it; chaos mode's lost webhook answers too)",
    ),
    e(
        Plant::CacheTtlInSeconds,
        "cache-ttl-in-seconds",
        Area::Reads,
        "the Redis seat-map cache (RedisCache::put)",
        "cache-faults",
        "cached-read-bound",
        "the seat-map cache gives Redis each entry's lifetime as seconds (`EX`) where it holds milliseconds, so an entry whose invalidation was lost while Redis was down comes back with a restart that keeps the data and is served 1,000 times too long (a restart that loses the data hides it)",
    )
    .proved_by_test("booking/tests/cache_kept_restart.rs"),
    e(
        Plant::HoldNeedsSortedSeats,
        "hold-needs-sorted-seats",
        Area::Holds,
        "the hold endpoint (http::handlers::hold)",
        "adjacent-seats",
        "legitimate-accepted",
        "the hold endpoint, guarding the store's sorted locking, refuses a selection the user clicked in any other order than the seats' own as malformed (`400 invalid-input`) instead of sorting it: every such good hold is refused, and nothing in the records shows it",
    ),
];

impl Plant {
    /// Every plant, in catalog order.
    pub const ALL: &'static [Plant] = &[
        Plant::UnconditionalCheckout,
        Plant::CheckoutIgnoresToken,
        Plant::CheckoutIgnoresHolder,
        Plant::CheckoutIgnoresDeadline,
        Plant::CheckoutIgnoresState,
        Plant::CheckoutTakesNamedSeats,
        Plant::HoldKeepsPartial,
        Plant::TakeoverKeepsToken,
        Plant::HoldIgnoresDeadline,
        Plant::HoldLimitIgnoresRequest,
        Plant::IdempotencyAfterHoldCheck,
        Plant::UnknownReleasesAtOnce,
        Plant::DispatchUnknownAsDeclined,
        Plant::RepeatSuccessRefunds,
        Plant::WebhookRefundFailedAsSucceeded,
        Plant::ReconcileReleasesEarly,
        Plant::RefundNewKeyPerRetry,
        Plant::RefundGiveUpHidesOrder,
        Plant::RefundTakeoverIgnoresLease,
        Plant::SweepEarly,
        Plant::SweepFreesPaymentPending,
        Plant::AdmissionIgnoresSession,
        Plant::RoomLossOpensGate,
        Plant::OutageOpensGate,
        Plant::CircuitNeverOpens,
        Plant::StoreTrustsLocalClock,
        Plant::CacheServesUntagged,
        Plant::SlowCheckoutRefused,
        Plant::ChargeNewKeyPerRetry,
        Plant::CacheWaitsForRedis,
        Plant::UnreachableChargeDeclined,
        Plant::ReplayedWebhookRefused,
        Plant::CacheTtlInSeconds,
        Plant::HoldNeedsSortedSeats,
    ];

    /// This plant's catalog entry.
    pub fn entry(self) -> &'static Entry {
        CATALOG.iter().find(|e| e.plant == self).expect("every plant has a catalog entry")
    }

    /// The stable name.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Plant> {
        CATALOG.iter().find(|e| e.name == name).map(|e| e.plant)
    }
}

impl std::fmt::Display for Plant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_and_all_agree_and_names_are_unique() {
        assert_eq!(CATALOG.len(), Plant::ALL.len());
        for (entry, plant) in CATALOG.iter().zip(Plant::ALL) {
            assert_eq!(entry.plant, *plant, "catalog order");
            assert_eq!(Plant::parse(entry.name), Some(*plant));
        }
        let mut names: Vec<&str> = CATALOG.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CATALOG.len());
        assert!(CATALOG.len() >= 12, "the catalog holds at least 12 realistic mistakes");
    }
}
