//! Per-run figures from the trace and the final records: holds acquired,
//! refused by contention, abandoned; expiry lag; checkouts and payments by
//! outcome; seat-time spent held, held past deadline, pending and sold; and a
//! [`Classification`] that tells a broken expiry process apart from genuine
//! demand (a full-looking seat map can be either; they need different fixes).

use crate::checks::index::seat_changes;
use crate::trace::{ChangeCause, ClientOp, OpId, PaymentEvent, TraceKind};
use crate::{Config, TraceEvent};
use booking::model::{HoldToken, SeatState, Snapshot};
use booking::problem_kind::ProblemKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// What a full-looking seat map means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Classification {
    /// Holds outlive their deadlines: seats stay held past the sweep bound, or
    /// are reclaimed late, or spend much of their held time already expired.
    /// Fix the expiry process, not capacity.
    BrokenExpiry,
    /// Expiry works (low lag) and seats are wanted: sold out or contended.
    GenuineDemand,
    /// Expiry works and seats are neither contended nor mostly sold.
    #[default]
    LowDemand,
}

impl Classification {
    /// Every classification.
    pub const ALL: &'static [Classification] =
        &[Classification::BrokenExpiry, Classification::GenuineDemand, Classification::LowDemand];

    /// The stable name (also used in scenario files' `expect.classification`).
    pub fn as_str(self) -> &'static str {
        match self {
            Classification::BrokenExpiry => "broken-expiry",
            Classification::GenuineDemand => "genuine-demand",
            Classification::LowDemand => "low-demand",
        }
    }
}

impl std::fmt::Display for Classification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Share of held seat-time spent past the deadline above which expiry is
/// judged broken (numerator / denominator).
pub const BROKEN_EXPIRED_SHARE: (i64, i64) = (1, 4);

/// The figures of one run. Times are store-clock ms; seat-time is summed over seats.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// Seats in the final records.
    pub seats_total: u64,
    /// Seats sold in the final records.
    pub seats_sold: u64,
    /// Holds granted (distinct tokens written by `hold` changes).
    pub holds_acquired: u64,
    /// Seat-holds granted (one per seat of each hold).
    pub seats_held: u64,
    /// Hold requests refused because a seat was taken (`seat-unavailable`).
    pub holds_refused_contention: u64,
    /// Holds released by their holder.
    pub holds_released: u64,
    /// Holds checked out (moved to payment).
    pub holds_checked_out: u64,
    /// Holds that expired unused (abandoned): reclaimed by the sweeper or
    /// taken over, or still held past their deadline at the end, never checked out.
    pub holds_abandoned: u64,
    /// Expired seat-holds reclaimed (sweeps and takeovers).
    pub seats_reclaimed: u64,
    /// Largest time between a hold's deadline and its reclaim.
    pub expiry_lag_max_ms: i64,
    /// Mean of the same (0 when nothing was reclaimed).
    pub expiry_lag_mean_ms: i64,
    /// Seats still held at the end past their deadline plus the sweep bound.
    pub seats_overdue_at_end: u64,
    /// Largest time past its deadline of a seat still held at the end.
    pub overdue_max_ms: i64,
    /// Checkout answers by outcome: `ok`, `replayed`, `fail:<error kind>`, `unknown`.
    pub checkouts: BTreeMap<String, u64>,
    /// Provider events by kind: `charged`, `declined`, `unknown`, `refunded`,
    /// `refund_failed`, `callback`, `callback_duplicate`, `callback_late`.
    pub payments: BTreeMap<String, u64>,
    /// Final orders by status.
    pub orders_by_status: BTreeMap<String, u64>,
    /// Seat-time spent held (deadline not passed).
    pub seat_ms_held: i64,
    /// Seat-time spent held past the deadline (unreclaimed expired holds).
    pub seat_ms_held_expired: i64,
    /// Seat-time spent payment_pending.
    pub seat_ms_pending: i64,
    /// Seat-time spent sold.
    pub seat_ms_sold: i64,
    /// What the figures say about a full-looking seat map.
    pub classification: Classification,
}

impl Metrics {
    /// Computes the figures. Seat-time is counted from each seat's first change
    /// to `cfg.final_store_now_ms`; `cfg.sweep_bound_ms` is the expiry lag
    /// above which expiry is judged broken.
    pub fn compute(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Metrics {
        let now = cfg.final_store_now_ms;
        let mut m = Metrics {
            seats_total: snap.seats.len() as u64,
            seats_sold: snap.seats.iter().filter(|s| s.state == SeatState::Sold).count() as u64,
            ..Metrics::default()
        };
        m.add_client_view(trace);
        for o in &snap.orders {
            bump(&mut m.orders_by_status, o.status.as_str());
        }
        let mut holds = HoldTokens::default();
        let mut lag_sum: i64 = 0;
        for changes in seat_changes(trace).values() {
            for (i, (_, c)) in changes.iter().enumerate() {
                // Seat-time from this change to the next (or the end).
                let until = changes.get(i + 1).map_or(now, |(_, n)| n.store_now_ms);
                lag_sum += m.add_change(c, until, &mut holds);
            }
        }
        for s in snap.seats.iter().filter(|s| s.state == SeatState::Held) {
            let deadline = s.hold_expires_at_ms.unwrap_or(now);
            if deadline < now {
                m.overdue_max_ms = m.overdue_max_ms.max(now - deadline);
                holds.expired_unused.extend(s.hold_token);
                if now > deadline.saturating_add(cfg.sweep_bound_ms) {
                    m.seats_overdue_at_end += 1;
                }
            }
        }
        m.holds_acquired = holds.granted.len() as u64;
        m.holds_checked_out = holds.checked_out.len() as u64;
        m.holds_released = holds.released.len() as u64;
        m.holds_abandoned = holds.expired_unused.difference(&holds.checked_out).count() as u64;
        if m.seats_reclaimed > 0 {
            m.expiry_lag_mean_ms = lag_sum / m.seats_reclaimed as i64;
        }
        m.classification = m.classify(cfg.sweep_bound_ms);
        m
    }

    /// The client's view: contention, checkout outcomes, payments.
    fn add_client_view(&mut self, trace: &[TraceEvent]) {
        let mut kinds: BTreeMap<OpId, &ClientOp> = BTreeMap::new();
        for e in trace {
            match &e.kind {
                TraceKind::Invoke { op_id, op, .. } => {
                    kinds.insert(*op_id, op);
                }
                TraceKind::Ok { op_id, result, .. } => {
                    if let Some(ClientOp::Checkout { .. }) = kinds.get(op_id) {
                        let replayed = matches!(result, crate::trace::OpResult::CheckedOut { replayed: true, .. });
                        bump(&mut self.checkouts, if replayed { "replayed" } else { "ok" });
                    }
                }
                TraceKind::Fail { op_id, error_kind, .. } => match kinds.get(op_id) {
                    Some(ClientOp::Hold { .. }) if *error_kind == ProblemKind::SeatUnavailable => {
                        self.holds_refused_contention += 1
                    }
                    Some(ClientOp::Checkout { .. }) => bump(&mut self.checkouts, &format!("fail:{error_kind}")),
                    _ => {}
                },
                TraceKind::Unknown { op_id, .. } => {
                    if let Some(ClientOp::Checkout { .. }) = kinds.get(op_id) {
                        bump(&mut self.checkouts, "unknown");
                    }
                }
                TraceKind::Payment(p) => bump(&mut self.payments, payment_name(p)),
                _ => {}
            }
        }
    }

    /// Counts one seat change `c` (the seat stays as it leaves it until
    /// `until`); returns its expiry lag if it reclaimed an expired hold, else 0.
    fn add_change(&mut self, c: &crate::trace::SeatChange, until: i64, holds: &mut HoldTokens) -> i64 {
        let reclaim = match c.cause {
            ChangeCause::Sweep => true,
            ChangeCause::Hold => c.before.state == SeatState::Held,
            _ => false,
        };
        let mut lag = 0;
        if reclaim {
            lag = (c.store_now_ms - c.before.hold_expires_at_ms.unwrap_or(c.store_now_ms)).max(0);
            self.seats_reclaimed += 1;
            self.expiry_lag_max_ms = self.expiry_lag_max_ms.max(lag);
            holds.expired_unused.extend(c.before.hold_token);
        }
        match c.cause {
            ChangeCause::Hold => {
                self.seats_held += 1;
                holds.granted.extend(c.after.hold_token);
            }
            ChangeCause::Checkout => holds.checked_out.extend(c.authority.token),
            ChangeCause::Release => holds.released.extend(c.before.hold_token),
            _ => {}
        }
        let span = (until - c.store_now_ms).max(0);
        match c.to() {
            SeatState::Held => {
                let deadline = c.after.hold_expires_at_ms.unwrap_or(until);
                let live = (deadline.min(until) - c.store_now_ms).clamp(0, span);
                self.seat_ms_held += live;
                self.seat_ms_held_expired += span - live;
            }
            SeatState::PaymentPending => self.seat_ms_pending += span,
            SeatState::Sold => self.seat_ms_sold += span,
            SeatState::Available => {}
        }
        lag
    }

    /// The classification these figures support, given the sweep bound:
    /// broken expiry when any seat is overdue at the end, or the largest expiry
    /// lag exceeds the bound, or more than [`BROKEN_EXPIRED_SHARE`] of held
    /// seat-time was past deadline; else genuine demand when at least half the
    /// seats sold or any hold was refused by contention; else low demand.
    pub fn classify(&self, sweep_bound_ms: i64) -> Classification {
        let held = self.seat_ms_held + self.seat_ms_held_expired;
        let (num, den) = BROKEN_EXPIRED_SHARE;
        let expired_share_high = held > 0 && self.seat_ms_held_expired * den > held * num;
        if self.seats_overdue_at_end > 0 || self.expiry_lag_max_ms > sweep_bound_ms || expired_share_high {
            Classification::BrokenExpiry
        } else if self.seats_sold * 2 >= self.seats_total.max(1) || self.holds_refused_contention > 0 {
            Classification::GenuineDemand
        } else {
            Classification::LowDemand
        }
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    *map.entry(key.to_owned()).or_default() += 1;
}

/// Hold tokens by what became of them, as the store's changes show.
#[derive(Default)]
struct HoldTokens {
    granted: BTreeSet<HoldToken>,
    checked_out: BTreeSet<HoldToken>,
    released: BTreeSet<HoldToken>,
    expired_unused: BTreeSet<HoldToken>,
}

/// A payment event's name in [`Metrics::payments`].
fn payment_name(p: &PaymentEvent) -> &'static str {
    match p {
        PaymentEvent::Charged { .. } => "charged",
        PaymentEvent::Declined { .. } => "declined",
        PaymentEvent::Unknown { .. } => "unknown",
        PaymentEvent::Refunded { .. } => "refunded",
        PaymentEvent::RefundFailed { .. } => "refund_failed",
        PaymentEvent::CallbackDelivered { duplicate: true, .. } => "callback_duplicate",
        PaymentEvent::CallbackDelivered { late: true, .. } => "callback_late",
        PaymentEvent::CallbackDelivered { .. } => "callback",
        PaymentEvent::Read { .. } => "read",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::World;

    /// Ten users want two seats; expiry works: genuine demand.
    #[test]
    fn contended_sold_out_with_prompt_expiry_is_genuine_demand() {
        let mut w = World::new(&["A", "B"]);
        let abandoned = w.hold("u1", &["A"], 5_000);
        for u in 0..8 {
            w.hold_refused(format!("r{u}"), &["A"]);
        }
        w.advance(5_500);
        w.sweep();
        let t = w.hold("u2", &["A", "B"], 5_000);
        let o = w.checkout("u2", t, "k", 10_000);
        w.advance(1_000);
        w.charge(o);
        w.advance(10_000);
        let m = Metrics::compute(&w.snap, w.trace.events(), &w.config());
        assert_eq!(m.holds_acquired, 2);
        assert_eq!(m.seats_held, 3);
        assert_eq!(m.holds_refused_contention, 8);
        assert_eq!(m.holds_abandoned, 1, "{abandoned} expired unused");
        assert_eq!(m.holds_checked_out, 1);
        assert_eq!((m.seats_reclaimed, m.expiry_lag_max_ms, m.expiry_lag_mean_ms), (1, 500, 500));
        assert_eq!(m.seats_sold, 2);
        assert_eq!(m.checkouts.get("ok"), Some(&1));
        assert_eq!(m.payments.get("charged"), Some(&1));
        assert_eq!(m.seat_ms_held, 5_000);
        assert_eq!(m.seat_ms_held_expired, 500);
        assert_eq!(m.seat_ms_pending, 2 * 1_000);
        assert_eq!(m.seat_ms_sold, 2 * 10_000);
        assert_eq!(m.classification, Classification::GenuineDemand);
    }

    /// Every seat held by someone who left, and nobody reclaims them: broken expiry.
    #[test]
    fn abandoned_holds_never_reclaimed_is_broken_expiry() {
        let mut w = World::new(&["A", "B", "C"]);
        for (u, s) in [("u1", "A"), ("u2", "B"), ("u3", "C")] {
            w.hold(u, &[s], 5_000);
        }
        w.hold_refused("late", &["A"]);
        w.advance(60_000);
        let m = Metrics::compute(&w.snap, w.trace.events(), &w.config());
        assert_eq!(m.holds_acquired, 3);
        assert_eq!(m.holds_abandoned, 3);
        assert_eq!(m.seats_reclaimed, 0);
        assert_eq!(m.seats_overdue_at_end, 3);
        assert_eq!(m.overdue_max_ms, 55_000);
        assert_eq!(m.seat_ms_held_expired, 3 * 55_000);
        assert_eq!(m.classification, Classification::BrokenExpiry);
    }

    /// Expired holds reclaimed long after their deadline: broken, even with nothing overdue at the end.
    #[test]
    fn late_reclaim_is_broken_expiry() {
        let mut w = World::new(&["A"]);
        w.hold("u1", &["A"], 5_000);
        w.advance(30_000);
        w.sweep();
        let m = Metrics::compute(&w.snap, w.trace.events(), &w.config());
        assert_eq!((m.seats_reclaimed, m.expiry_lag_max_ms), (1, 25_000));
        assert_eq!(m.seats_overdue_at_end, 0);
        assert_eq!(m.classification, Classification::BrokenExpiry);
    }

    #[test]
    fn quiet_run_is_low_demand() {
        let mut w = World::new(&["A", "B", "C"]);
        let t = w.hold("u1", &["A"], 5_000);
        w.release("u1", t);
        w.advance(10_000);
        let m = Metrics::compute(&w.snap, w.trace.events(), &w.config());
        assert_eq!(m.holds_released, 1);
        assert_eq!(m.holds_abandoned, 0);
        assert_eq!(m.classification, Classification::LowDemand);
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<Metrics>(&json).unwrap(), m);
        assert!(json.contains("\"classification\":\"low-demand\""), "{json}");
    }
}
