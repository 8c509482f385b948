//! The one fault seam. Every injected fault enters the booking core through
//! a [`FaultSeam`] handle: a crash right after a named store commit
//! ([`CommitPoint`]), a stalled hold sweeper, and a planted bug
//! ([`Plant`], the catalog the simulator proves its scenarios against).
//! FoundationDB's BUGGIFY is the model: the code under test asks the seam at
//! the points where a fault may strike, and the harness decides.
//!
//! Everything that can switch a fault on exists only with the cargo feature
//! `fault-injection`. Without it (`bookingd` as released) [`FaultSeam`] is an
//! empty value with no constructor but [`FaultSeam::none`], every question it
//! answers is a constant "no", and the planted branches compile to nothing;
//! `ci/test` checks that a release `bookingd` carries no trace of the seam.

#[cfg(feature = "fault-injection")]
mod plant;
#[cfg(feature = "fault-injection")]
pub mod process;

#[cfg(feature = "fault-injection")]
pub use plant::{Area, CATALOG, Entry, Plant};

#[cfg(feature = "fault-injection")]
use std::sync::Arc;

/// A marker string that exists only in a build with the `fault-injection`
/// feature (it names the seam in the catalog's header): `ci/test` looks for
/// it in binaries to prove that a release `bookingd` carries no fault switch.
#[cfg(feature = "fault-injection")]
pub const SEAM_MARKER: &str = "holdfast-fault-seam: planted bugs and crash points are compiled in";

/// A point right after a store transaction committed and before the code
/// that made it acts on the result (answers a client, calls the provider,
/// moves on). A crash here loses everything but the commit: the client's
/// answer, the dispatcher's next step, the webhook's acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommitPoint {
    /// Handler: a hold was granted.
    Hold,
    /// Handler: a hold was released.
    Release,
    /// Handler: a checkout began payment.
    Checkout,
    /// Dispatcher: outbox rows were claimed (leased).
    OutboxClaim,
    /// Dispatcher or reconciler: a provider answer (success, decline, unknown) was recorded.
    PaymentOutcome,
    /// Reconciler: an unresolved payment was released at its deadline.
    UnresolvedRelease,
    /// Webhook: a provider callback was applied, not yet acknowledged.
    Webhook,
    /// Sweeper: expired holds were returned to `available`.
    Sweep,
    /// Compensation: a refund attempt was started (leased), the provider not yet called.
    CompensationStart,
    /// Compensation: a refund attempt's result was recorded.
    CompensationFinish,
}

impl CommitPoint {
    /// Every commit point, in declaration order.
    pub const ALL: &'static [CommitPoint] = &[
        CommitPoint::Hold,
        CommitPoint::Release,
        CommitPoint::Checkout,
        CommitPoint::OutboxClaim,
        CommitPoint::PaymentOutcome,
        CommitPoint::UnresolvedRelease,
        CommitPoint::Webhook,
        CommitPoint::Sweep,
        CommitPoint::CompensationStart,
        CommitPoint::CompensationFinish,
    ];

    /// The stable kebab-case name (scenario files, logs, the trace).
    pub fn as_str(self) -> &'static str {
        match self {
            CommitPoint::Hold => "hold",
            CommitPoint::Release => "release",
            CommitPoint::Checkout => "checkout",
            CommitPoint::OutboxClaim => "outbox-claim",
            CommitPoint::PaymentOutcome => "payment-outcome",
            CommitPoint::UnresolvedRelease => "unresolved-release",
            CommitPoint::Webhook => "webhook",
            CommitPoint::Sweep => "sweep",
            CommitPoint::CompensationStart => "compensation-start",
            CommitPoint::CompensationFinish => "compensation-finish",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<CommitPoint> {
        CommitPoint::ALL.iter().copied().find(|p| p.as_str() == name)
    }
}

impl std::fmt::Display for CommitPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What decides the faults of one process or simulated host. Implemented by
/// the harness (the simulator's per-host injector; a real process's abort).
#[cfg(feature = "fault-injection")]
pub trait Injector: Send + Sync + 'static {
    /// Whether to crash right after `point` committed. Returning true means
    /// the caller never proceeds: in a real process the implementation
    /// should not return at all (abort); in the simulator the host is
    /// crashed by the world and the caller waits forever.
    fn crash_after(&self, point: CommitPoint) -> bool;

    /// Whether the hold sweeper skips its passes now.
    fn sweeper_stalled(&self) -> bool {
        false
    }

    /// The planted bug, if any.
    fn plant(&self) -> Option<Plant> {
        None
    }
}

/// The fault seam's handle, held by the store, the service, the workflow and
/// the sweeper. Cheap to clone. Production: [`FaultSeam::none`], which is all a
/// build without the `fault-injection` feature can make.
#[derive(Clone, Default)]
pub struct FaultSeam {
    #[cfg(feature = "fault-injection")]
    injector: Option<Arc<dyn Injector>>,
}

impl std::fmt::Debug for FaultSeam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultSeam").finish_non_exhaustive()
    }
}

impl FaultSeam {
    /// No faults: what production runs.
    pub fn none() -> Self {
        Self::default()
    }

    /// A seam whose faults `injector` decides.
    #[cfg(feature = "fault-injection")]
    pub fn new(injector: Arc<dyn Injector>) -> Self {
        Self { injector: Some(injector) }
    }

    /// Only `plant` planted (no crashes, no stalls): what a store is given.
    #[cfg(feature = "fault-injection")]
    pub fn planting(plant: Plant) -> Self {
        struct Only(Plant);
        impl Injector for Only {
            fn crash_after(&self, _: CommitPoint) -> bool {
                false
            }
            fn plant(&self) -> Option<Plant> {
                Some(self.0)
            }
        }
        Self::new(Arc::new(Only(plant)))
    }

    /// Called right after the store committed at `point`: returns at once
    /// unless the injector crashes here, in which case it never returns (the
    /// committed work's answer is lost, as in a crash).
    #[inline]
    pub async fn after_commit(&self, point: CommitPoint) {
        #[cfg(feature = "fault-injection")]
        if let Some(i) = &self.injector
            && i.crash_after(point)
        {
            std::future::pending::<()>().await;
        }
        #[cfg(not(feature = "fault-injection"))]
        let _ = point;
    }

    /// Whether the hold sweeper is stalled now.
    #[inline]
    pub fn sweeper_stalled(&self) -> bool {
        #[cfg(feature = "fault-injection")]
        if let Some(i) = &self.injector {
            return i.sweeper_stalled();
        }
        false
    }

    /// Whether `plant` is the planted bug. Use [`planted!`](crate::planted),
    /// which compiles to `false` without the feature.
    #[cfg(feature = "fault-injection")]
    #[inline]
    pub fn planted(&self, plant: Plant) -> bool {
        self.injector.as_ref().and_then(|i| i.plant()) == Some(plant)
    }
}

/// `planted!(faults, Name)`: whether the planted bug [`Plant::Name`] is on
/// for the [`FaultSeam`] handle `faults`. Without the `fault-injection`
/// feature it is the constant `false` (the handle is not even read), so the
/// planted branch is dead code the compiler removes.
#[macro_export]
macro_rules! planted {
    ($faults:expr, $plant:ident) => {{
        #[cfg(feature = "fault-injection")]
        let on = $faults.planted($crate::fault::Plant::$plant);
        #[cfg(not(feature = "fault-injection"))]
        let on = {
            let _ = &$faults;
            false
        };
        on
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_point_names_round_trip() {
        for p in CommitPoint::ALL {
            assert_eq!(CommitPoint::parse(p.as_str()), Some(*p));
        }
        assert_eq!(CommitPoint::parse("nope"), None);
    }

    #[test]
    fn no_faults_plants_nothing_and_never_stalls() {
        let f = FaultSeam::none();
        assert!(!f.sweeper_stalled());
        #[cfg(feature = "fault-injection")]
        for p in Plant::ALL {
            assert!(!f.planted(*p));
        }
        assert!(!planted!(f, UnconditionalCheckout));
    }

    #[cfg(feature = "fault-injection")]
    #[test]
    fn planting_plants_exactly_one() {
        let f = FaultSeam::planting(Plant::SweepEarly);
        for p in Plant::ALL {
            assert_eq!(f.planted(*p), *p == Plant::SweepEarly, "{p:?}");
        }
        assert!(planted!(f, SweepEarly));
        assert!(!planted!(f, UnconditionalCheckout));
    }
}
