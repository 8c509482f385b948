//! The rules a store applies, as plain data both stores and the shared
//! decisions read: every rule on ([`Rules::SOUND`]), unless a bug is planted
//! through the fault seam (`fault-injection` builds only). One place maps
//! each planted bug to the rule it breaks, so `MemStore` and `PgStore` break
//! it the same way (the differential test holds them to it).

use crate::fault::FaultSeam;
#[cfg(feature = "fault-injection")]
use crate::planted;

/// Declares [`Rules`]: each rule's name, type, sound value and doc. With
/// `fault-injection` a rule is a field, read through its accessor; without
/// it `Rules` is a unit struct and each accessor a `const fn` returning the
/// sound value, so a release build has no runtime value for a planted
/// branch to test: every such branch is dead code the compiler removes
/// (asserted at compile time: `Rules` is zero-sized there).
macro_rules! declare_rules {
    ($( #[doc = $doc:literal] $name:ident: $ty:ty = $sound:expr, )*) => {
        /// Which guards a store applies. Production: [`Rules::SOUND`], always
        /// (without `fault-injection`, nothing else can be built).
        #[cfg(feature = "fault-injection")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Rules {
            $( #[doc = $doc] pub $name: $ty, )*
        }

        /// Which guards a store applies: in a build without
        /// `fault-injection`, always every one ([`Rules::SOUND`]).
        #[cfg(not(feature = "fault-injection"))]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Rules;

        impl Rules {
            /// Every rule on.
            #[cfg(feature = "fault-injection")]
            pub const SOUND: Rules = Rules { $( $name: $sound, )* };
            /// Every rule on (the only rules there are).
            #[cfg(not(feature = "fault-injection"))]
            pub const SOUND: Rules = Rules;

            $(
                #[doc = $doc]
                #[inline(always)]
                pub const fn $name(&self) -> $ty {
                    #[cfg(feature = "fault-injection")]
                    let value = self.$name;
                    #[cfg(not(feature = "fault-injection"))]
                    let value = $sound;
                    value
                }
            )*
        }

        // Without fault injection `Rules` carries nothing at run time: no
        // branch can read a planted rule (`ci/check-fault-seam` builds this).
        #[cfg(not(feature = "fault-injection"))]
        const _: () = assert!(std::mem::size_of::<Rules>() == 0, "a release build's rules are constants");
    };
}

declare_rules! {
    /// Checkout compares the presented token with the seat's.
    checkout_token: bool = true,
    /// Checkout compares the presented holder with the seat's.
    checkout_holder: bool = true,
    /// Checkout requires the hold's deadline to be ahead of the store's clock.
    checkout_deadline: bool = true,
    /// Checkout requires the seats to be `held`.
    checkout_state: bool = true,
    /// Checkout requires the whole hold to be named (a hold is paid all or nothing).
    checkout_whole_hold: bool = true,
    /// Checkout looks up its idempotency key before it checks the hold.
    idempotency_first: bool = true,
    /// A multi-seat hold takes every seat or none.
    hold_all_or_nothing: bool = true,
    /// The per-user cap counts the seats a hold requests, not only those already held.
    hold_limit_counts_request: bool = true,
    /// A hold takes over a held seat only past its deadline.
    hold_deadline: bool = true,
    /// A hold always carries a new token, also when it takes over an expired hold.
    hold_fresh_token: bool = true,
    /// An unknown payment outcome keeps the seats reserved.
    unknown_keeps_seats: bool = true,
    /// A repeated success of a decided payment changes nothing.
    repeat_success_idempotent: bool = true,
    /// An unresolved payment is released only once its deadline has passed.
    release_waits_for_deadline: bool = true,
    /// A compensation that gives up leaves its order `compensation_failed` (visible).
    give_up_flags_order: bool = true,
    /// A refund attempt takes over an `in_flight` one only once that attempt's lease has expired.
    attempt_lease: bool = true,
    /// The sweeper takes holds expiring up to this many ms ahead of the store's clock (sound: 0).
    sweep_ahead_ms: i64 = 0,
    /// The sweeper takes only `held` seats (never `payment_pending` ones).
    sweep_held_only: bool = true,
}

/// `rule_text!(rules.field(), sound, planted)`: the `sound` text while the rule
/// holds, else the `planted` text (a planted bug's SQL). Without the
/// `fault-injection` feature the planted text is not compiled in at all, so
/// a release `bookingd` carries only sound SQL (`ci/check-fault-seam` looks).
macro_rules! rule_text {
    ($rule:expr, $sound:expr, $planted:expr) => {{
        #[cfg(feature = "fault-injection")]
        let text: &'static str = if $rule { $sound } else { $planted };
        #[cfg(not(feature = "fault-injection"))]
        let text: &'static str = {
            debug_assert!($rule, "a rule is broken in a build without fault injection");
            $sound
        };
        text
    }};
}
pub(crate) use rule_text;

/// How far ahead the planted early sweeper looks: one default sweeper pass.
pub const PLANTED_SWEEP_AHEAD_MS: i64 = 1_000;

impl Rules {
    /// The rules under `faults`: [`Rules::SOUND`] with the planted bug's rule broken.
    #[cfg(not(feature = "fault-injection"))]
    pub fn of(faults: &FaultSeam) -> Rules {
        let _ = faults;
        Rules
    }

    /// The rules under `faults`: [`Rules::SOUND`] with the planted bug's rule broken.
    #[cfg(feature = "fault-injection")]
    pub fn of(faults: &FaultSeam) -> Rules {
        let unconditional = planted!(faults, UnconditionalCheckout);
        Rules {
            checkout_token: !unconditional && !planted!(faults, CheckoutIgnoresToken),
            checkout_holder: !unconditional && !planted!(faults, CheckoutIgnoresHolder),
            checkout_deadline: !unconditional && !planted!(faults, CheckoutIgnoresDeadline),
            checkout_state: !unconditional && !planted!(faults, CheckoutIgnoresState),
            checkout_whole_hold: !unconditional && !planted!(faults, CheckoutTakesNamedSeats),
            idempotency_first: !planted!(faults, IdempotencyAfterHoldCheck),
            hold_all_or_nothing: !planted!(faults, HoldKeepsPartial),
            hold_limit_counts_request: !planted!(faults, HoldLimitIgnoresRequest),
            hold_deadline: !planted!(faults, HoldIgnoresDeadline),
            hold_fresh_token: !planted!(faults, TakeoverKeepsToken),
            unknown_keeps_seats: !planted!(faults, UnknownReleasesAtOnce),
            repeat_success_idempotent: !planted!(faults, RepeatSuccessRefunds),
            release_waits_for_deadline: !planted!(faults, ReconcileReleasesEarly),
            give_up_flags_order: !planted!(faults, RefundGiveUpHidesOrder),
            attempt_lease: !planted!(faults, RefundTakeoverIgnoresLease),
            sweep_ahead_ms: if planted!(faults, SweepEarly) { PLANTED_SWEEP_AHEAD_MS } else { 0 },
            sweep_held_only: !planted!(faults, SweepFreesPaymentPending),
        }
    }
}

impl Default for Rules {
    fn default() -> Self {
        Rules::SOUND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_faults_is_sound() {
        assert_eq!(Rules::of(&FaultSeam::none()), Rules::SOUND);
    }

    /// Every planted bug breaks exactly the rules it names (an exhaustive
    /// match: a new plant must say which), and the workflow's and the waiting
    /// room's bugs leave the store's rules sound.
    #[cfg(feature = "fault-injection")]
    #[test]
    fn every_plant_breaks_exactly_its_rules() {
        use crate::fault::Plant;
        let s = Rules::SOUND;
        for p in Plant::ALL {
            let want = match p {
                Plant::DispatchUnknownAsDeclined
                | Plant::RefundNewKeyPerRetry
                | Plant::WebhookRefundFailedAsSucceeded
                | Plant::AdmissionIgnoresSession
                | Plant::RoomLossOpensGate
                | Plant::OutageOpensGate
                | Plant::CircuitNeverOpens
                | Plant::StoreTrustsLocalClock
                | Plant::CacheServesUntagged
                | Plant::SlowCheckoutRefused
                | Plant::ChargeNewKeyPerRetry
                | Plant::CacheWaitsForRedis
                | Plant::UnreachableChargeDeclined
                | Plant::ReplayedWebhookRefused
                | Plant::CacheTtlInSeconds
                | Plant::HoldNeedsSortedSeats => s,
                Plant::UnconditionalCheckout => Rules {
                    checkout_token: false,
                    checkout_holder: false,
                    checkout_deadline: false,
                    checkout_state: false,
                    checkout_whole_hold: false,
                    ..s
                },
                Plant::CheckoutIgnoresToken => Rules { checkout_token: false, ..s },
                Plant::CheckoutIgnoresHolder => Rules { checkout_holder: false, ..s },
                Plant::CheckoutIgnoresDeadline => Rules { checkout_deadline: false, ..s },
                Plant::CheckoutIgnoresState => Rules { checkout_state: false, ..s },
                Plant::CheckoutTakesNamedSeats => Rules { checkout_whole_hold: false, ..s },
                Plant::HoldKeepsPartial => Rules { hold_all_or_nothing: false, ..s },
                Plant::TakeoverKeepsToken => Rules { hold_fresh_token: false, ..s },
                Plant::HoldIgnoresDeadline => Rules { hold_deadline: false, ..s },
                Plant::HoldLimitIgnoresRequest => Rules { hold_limit_counts_request: false, ..s },
                Plant::IdempotencyAfterHoldCheck => Rules { idempotency_first: false, ..s },
                Plant::UnknownReleasesAtOnce => Rules { unknown_keeps_seats: false, ..s },
                Plant::RepeatSuccessRefunds => Rules { repeat_success_idempotent: false, ..s },
                Plant::ReconcileReleasesEarly => Rules { release_waits_for_deadline: false, ..s },
                Plant::RefundGiveUpHidesOrder => Rules { give_up_flags_order: false, ..s },
                Plant::RefundTakeoverIgnoresLease => Rules { attempt_lease: false, ..s },
                Plant::SweepEarly => Rules { sweep_ahead_ms: PLANTED_SWEEP_AHEAD_MS, ..s },
                Plant::SweepFreesPaymentPending => Rules { sweep_held_only: false, ..s },
            };
            assert_eq!(Rules::of(&FaultSeam::planting(*p)), want, "{p:?}");
        }
    }
}
