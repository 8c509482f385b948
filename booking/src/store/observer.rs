//! Observing the store's writes from inside its transactions: the simulator
//! records every seat, order and compensation change into its trace, with the
//! store's clock and what the writer presented, at the moment it happens.

use crate::model::{Compensation, HoldToken, Order, Seat, UserId};
use serde::{Deserialize, Serialize};

/// Which store operation wrote a seat. Serialized in snake_case (the trace's `cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeatWriteCause {
    /// `acquire_hold`.
    Hold,
    /// `release_hold`.
    Release,
    /// `sweep_expired_holds`.
    Sweep,
    /// `begin_payment`.
    Checkout,
    /// `record_payment_success` while the order owned the seat.
    Sale,
    /// `record_payment_failure`.
    PaymentDeclined,
    /// `release_unresolved_payment`.
    UnresolvedReleased,
}

impl SeatWriteCause {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            SeatWriteCause::Hold => "hold",
            SeatWriteCause::Release => "release",
            SeatWriteCause::Sweep => "sweep",
            SeatWriteCause::Checkout => "checkout",
            SeatWriteCause::Sale => "sale",
            SeatWriteCause::PaymentDeclined => "payment_declined",
            SeatWriteCause::UnresolvedReleased => "unresolved_released",
        }
    }
}

/// What the writer presented to justify a seat write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Presented {
    /// The hold token presented (release, checkout; order writes: the order's token).
    pub token: Option<HoldToken>,
    /// On whose behalf.
    pub holder: Option<UserId>,
    /// The order presented (sale, decline, unresolved release).
    pub order: Option<Order>,
}

impl Presented {
    /// An order acting on its seats: its token, its buyer and the order itself.
    pub fn by_order(order: &Order) -> Self {
        Self { token: Some(order.hold_token), holder: Some(order.holder_id.clone()), order: Some(order.clone()) }
    }
}

/// Receives every write, in commit order, inside the store's transaction.
/// Implementations must be quick and must not call back into the store.
pub trait StoreObserver: Send + Sync + 'static {
    /// A seat record changed from `before` to `after` at `now_ms` (store clock).
    fn seat_written(&self, cause: SeatWriteCause, now_ms: i64, presented: &Presented, before: &Seat, after: &Seat);
    /// An order was created (`before` = `None`) or changed status.
    fn order_written(&self, before: Option<&Order>, after: &Order, now_ms: i64);
    /// A compensation was created (`before` = `None`) or changed.
    fn compensation_written(&self, before: Option<&Compensation>, after: &Compensation, now_ms: i64);
}
