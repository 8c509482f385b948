//! Lookups over the trace shared by the checkers: events grouped by the record
//! they concern, in trace order.

use crate::trace::{CompensationChange, OrderChange, PaymentEvent, SeatChange, TraceEvent, TraceKind};
use booking::model::{CompensationId, EventId, OrderId, PaymentOpId, SeatId};
use std::collections::BTreeMap;

/// Seat changes by seat, in trace order.
pub fn seat_changes(trace: &[TraceEvent]) -> BTreeMap<(EventId, SeatId), Vec<(u64, &SeatChange)>> {
    let mut out: BTreeMap<(EventId, SeatId), Vec<(u64, &SeatChange)>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::SeatChange(c) = &e.kind {
            out.entry(c.seat_key()).or_default().push((e.seq, c));
        }
    }
    out
}

/// Order changes by order, in trace order.
pub fn order_changes(trace: &[TraceEvent]) -> BTreeMap<OrderId, Vec<(u64, &OrderChange)>> {
    let mut out: BTreeMap<OrderId, Vec<(u64, &OrderChange)>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::OrderChange(c) = &e.kind {
            out.entry(c.order_id).or_default().push((e.seq, c));
        }
    }
    out
}

/// Compensation changes by compensation, in trace order.
pub fn compensation_changes(trace: &[TraceEvent]) -> BTreeMap<CompensationId, Vec<(u64, &CompensationChange)>> {
    let mut out: BTreeMap<CompensationId, Vec<(u64, &CompensationChange)>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::CompensationChange(c) = &e.kind {
            out.entry(c.compensation_id).or_default().push((e.seq, c));
        }
    }
    out
}

/// A charge at the provider: (seq, amount).
pub type Charge = (u64, i64);

/// Charges by payment operation, in trace order.
pub fn charges(trace: &[TraceEvent]) -> BTreeMap<PaymentOpId, Vec<Charge>> {
    let mut out: BTreeMap<PaymentOpId, Vec<Charge>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::Payment(PaymentEvent::Charged { payment_op_id, amount_cents, .. }) = &e.kind {
            out.entry(*payment_op_id).or_default().push((e.seq, *amount_cents));
        }
    }
    out
}

/// A refund at the provider: (seq, compensation id, amount).
pub type Refund = (u64, CompensationId, i64);

/// Refunds by payment operation, in trace order.
pub fn refunds(trace: &[TraceEvent]) -> BTreeMap<PaymentOpId, Vec<Refund>> {
    let mut out: BTreeMap<PaymentOpId, Vec<Refund>> = BTreeMap::new();
    for e in trace {
        if let TraceKind::Payment(PaymentEvent::Refunded { compensation_id, payment_op_id, amount_cents }) = &e.kind {
            out.entry(*payment_op_id).or_default().push((e.seq, *compensation_id, *amount_cents));
        }
    }
    out
}
