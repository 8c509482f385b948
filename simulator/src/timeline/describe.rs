//! One line of text per trace event: what a mark's tooltip, the detail box
//! and a violation's witness list say about it.

use invariants::trace::{ClientOp, OpResult, PaymentEvent, RoomEvent, SeatImage, TraceEvent, TraceKind};
use serde::Serialize;
use uuid::Uuid;

/// A uuid cut to its first 8 hex digits: enough to tell a run's ids apart.
pub fn short(id: &(impl Copy + Into<Uuid>)) -> String {
    let mut s = (*id).into().simple().to_string();
    s.truncate(8);
    s
}

/// The stable (serialized) name of a unit enum value, such as a fault kind
/// or a session's end; its debug form if it does not serialize to a string.
pub fn name_of<T: Serialize + std::fmt::Debug>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{value:?}"),
    }
}

/// `seq N at T: what happened`, one line.
pub fn event_line(e: &TraceEvent) -> String {
    format!("seq {} at {}: {}", e.seq, super::scale::time_label(e.at_ms), describe(&e.kind))
}

/// [`event_line`], or for an event recorded after the run (see
/// [`super::lanes::after_run`]) `seq N after the run: what happened`.
pub fn event_line_drawn(e: &TraceEvent, after_run: bool) -> String {
    if after_run {
        format!(
            "seq {} after the run (recorded at {}): {}",
            e.seq,
            super::scale::time_label(e.at_ms),
            describe(&e.kind)
        )
    } else {
        event_line(e)
    }
}

/// What happened, one line (no seq, no time).
pub fn describe(kind: &TraceKind) -> String {
    match kind {
        TraceKind::Invoke { op_id, client, op, .. } => format!("{client} sends {} (op {op_id})", op_text(op)),
        TraceKind::Ok { op_id, result, .. } => format!("op {op_id} ok: {}", result_text(result)),
        TraceKind::Fail { op_id, error_kind, .. } => format!("op {op_id} refused: {}", name_of(error_kind)),
        TraceKind::Unknown { op_id, reason } => format!("op {op_id} unknown outcome: {reason}"),
        TraceKind::SeatChange(c) => {
            let by = c.authority.holder.as_deref().map(|h| format!(" for {h}")).unwrap_or_default();
            let token = c.authority.token.as_ref().map(|t| format!(" token {}", short(t))).unwrap_or_default();
            let order = c.authority.order_id.as_ref().map(|o| format!(" order {}", short(o))).unwrap_or_default();
            format!(
                "seat {}/{}: {} -> {} by {}{by}{token}{order} (v{}; now {})",
                c.event_id,
                c.seat_id,
                c.before.state,
                c.after.state,
                c.cause.as_str(),
                c.after.version,
                image_text(&c.after)
            )
        }
        TraceKind::OrderChange(o) => {
            let from = o.from.map_or_else(|| "created".to_string(), |f| f.as_str().to_string());
            format!("order {} of {}: {from} -> {}", short(&o.order_id), o.holder_id, o.to)
        }
        TraceKind::CompensationChange(c) => {
            let from = c.from.map_or_else(|| "created".to_string(), |f| name_of(&f));
            format!(
                "refund {} of order {}: {from} -> {} (attempts {})",
                short(&c.compensation_id),
                short(&c.order_id),
                name_of(&c.to),
                c.attempts
            )
        }
        TraceKind::Payment(p) => payment_text(p),
        TraceKind::World(f) => world_text(f),
        TraceKind::Fault { kind, detail } => format!("fault {}: {detail}", name_of(kind)),
        TraceKind::Phase { phase, .. } => format!("phase: {}", name_of(phase)),
        TraceKind::SeatMapCached { event_id, version_sum } => match version_sum {
            Some(v) => format!("seat map of {event_id} served from the cache (version {v})"),
            None => format!("seat map of {event_id} served from the cache: poisoned"),
        },
        TraceKind::Room(r) => room_text(r),
        TraceKind::ServiceCounters(c) => format!(
            "service counters: {} holds, {} orders, {} paid, {} admitted",
            c.holds_acquired, c.checkouts_created, c.payments_succeeded, c.admissions
        ),
        TraceKind::OperatorList { order_ids, compensation_ids } => {
            format!("operators' list: {} orders, {} refunds", order_ids.len(), compensation_ids.len())
        }
        TraceKind::Store { op_id, call, .. } => {
            let by = op_id.map(|op| format!(" for op {op}")).unwrap_or_default();
            match call.refusal() {
                Some(r) => format!("store {}{by}: refused {} ({})", call.name(), r.kind, r.message),
                None => format!("store {}{by}: ok", call.name()),
            }
        }
    }
}

/// A client request, in words.
fn op_text(op: &ClientOp) -> String {
    match op {
        ClientOp::Hold { event_id, seat_ids, .. } => format!("hold {event_id} {}", seat_ids.join(",")),
        ClientOp::Release { event_id, hold_token } => format!("release {event_id} token {}", short(hold_token)),
        ClientOp::Checkout { event_id, hold_token, seat_ids, idempotency_key, .. } => {
            format!("checkout {event_id} {} token {} key {idempotency_key}", seat_ids.join(","), short(hold_token))
        }
        ClientOp::OrderStatus { order_id } => format!("order status {}", short(order_id)),
        ClientOp::SeatMap { event_id, state, .. } => match state {
            Some(state) => format!("seat map {event_id} ({state} only)"),
            None => format!("seat map {event_id}"),
        },
        ClientOp::Request { method, path, .. } => format!("{method} {path}"),
    }
}

/// A successful answer, in words.
fn result_text(r: &OpResult) -> String {
    match r {
        OpResult::Held { hold_token, seat_ids, .. } => {
            format!("held {} token {}", seat_ids.join(","), short(hold_token))
        }
        OpResult::Released { seat_ids } => format!("released {}", seat_ids.join(",")),
        OpResult::CheckedOut { order_id, status, replayed, .. } => {
            let replayed = if *replayed { " (replayed)" } else { "" };
            format!("checked out: order {} {status}{replayed}", short(order_id))
        }
        OpResult::OrderStatus { order_id, status, .. } => format!("order {} is {status}", short(order_id)),
        OpResult::SeatMap { source, counts, .. } => {
            format!(
                "seat map from the {source}: {} available, {} held, {} paying, {} sold",
                counts[0], counts[1], counts[2], counts[3]
            )
        }
        OpResult::Answered { fields, .. } => format!("answered ({})", fields.join(", ")),
    }
}

/// A seat image's owner fields, in words.
fn image_text(s: &SeatImage) -> String {
    let mut parts = vec![s.state.as_str().to_string()];
    if let Some(h) = &s.holder_id {
        parts.push(format!("holder {h}"));
    }
    if let Some(t) = &s.hold_token {
        parts.push(format!("token {}", short(t)));
    }
    if let Some(o) = &s.order_id {
        parts.push(format!("order {}", short(o)));
    }
    if let Some(b) = &s.booking_id {
        parts.push(format!("booking {}", short(b)));
    }
    parts.join(" ")
}

/// A provider event, in words.
fn payment_text(p: &PaymentEvent) -> String {
    match p {
        PaymentEvent::Charged { payment_op_id, amount_cents, .. } => {
            format!("charged {} cents (payment {})", amount_cents, short(payment_op_id))
        }
        PaymentEvent::Declined { payment_op_id } => format!("payment {} declined", short(payment_op_id)),
        PaymentEvent::Unknown { payment_op_id, reason } => {
            format!("payment {} outcome unknown: {reason}", short(payment_op_id))
        }
        PaymentEvent::Refunded { compensation_id, amount_cents, .. } => {
            format!("refunded {} cents (refund {})", amount_cents, short(compensation_id))
        }
        PaymentEvent::RefundFailed { compensation_id, reason, .. } => {
            format!("refund {} failed: {reason}", short(compensation_id))
        }
        PaymentEvent::CallbackDelivered { payment_op_id, status, duplicate, late } => format!(
            "callback for payment {}: {status}{}{}",
            short(payment_op_id),
            if *duplicate { ", duplicate" } else { "" },
            if *late { ", late" } else { "" }
        ),
        PaymentEvent::Read { payment_op_id, status } => {
            format!("provider read payment {}: {}", short(payment_op_id), status.as_deref().unwrap_or("no record"))
        }
    }
}

/// A waiting-room event, in words.
fn room_text(r: &RoomEvent) -> String {
    match r {
        RoomEvent::Opened { event_id, policy, target_active_sessions, .. } => {
            format!("waiting room {event_id} opened: {} for {target_active_sessions} sessions", name_of(policy))
        }
        RoomEvent::Joined { event_id, user, tier, .. } => format!("{user} joined {event_id}'s queue (tier {tier})"),
        RoomEvent::Pass { event_id, asked, admitted, active, waiting, .. } => {
            format!("{event_id} pass: asked {asked}, admitted {admitted}, active {active}, waiting {waiting}")
        }
        RoomEvent::Admitted { event_id, user, session_id, .. } => {
            format!("{user} admitted to {event_id} (session {})", short(session_id))
        }
        RoomEvent::Ended { event_id, user, how, .. } => {
            let how = match how {
                booking::admission::room::SessionEnd::Purchased { order_id, .. } => {
                    format!("purchased (order {})", short(order_id))
                }
                booking::admission::room::SessionEnd::Expired => "expired".to_string(),
            };
            format!("{user}'s session at {event_id} ended: {how}")
        }
        RoomEvent::Reopened { event_id, user, session_id } => {
            format!("{user}'s session {} at {event_id} reopened: its purchase failed", short(session_id))
        }
        RoomEvent::SoldOut { event_id } => format!("{event_id} sold out"),
        RoomEvent::LawRan { event_id, instance, admit, rate_per_million_s, health_ppm, .. } => format!(
            "{instance}'s law for {event_id}: admit {admit}, rate {:.3}/s, health {:.3}",
            *rate_per_million_s as f64 / 1e6,
            *health_ppm as f64 / 1e6
        ),
        RoomEvent::LawLearnt { event_id, instance, duration_ms, .. } => {
            format!("{instance}'s law for {event_id} learnt a {duration_ms} ms session")
        }
        RoomEvent::Told { event_id, user, admitted } => {
            format!(
                "{user} told: {}",
                if *admitted { format!("admitted to {event_id}") } else { format!("{event_id} sold out") }
            )
        }
    }
}

/// A fact the world made, one line.
fn world_text(f: &invariants::trace::WorldFact) -> String {
    use invariants::trace::WorldFact;
    match f {
        WorldFact::Credential { user, tier } => format!("the world issued {user} a tier-{tier} credential"),
        WorldFact::RoomAsked { event_id, policy, target_active_sessions, .. } => {
            format!("the world asked for a {policy:?} room on {event_id} (target {target_active_sessions})")
        }
        WorldFact::Prober { user } => format!("{user} probes the API's surface"),
        WorldFact::Misuse { op_id } => format!("op {op_id} is a deliberate misuse"),
        WorldFact::WebhookRefused { payment_op_id, kind, host, status } => {
            format!(
                "svc{host} refused the provider's genuine {kind} webhook for {} with {status}",
                short(payment_op_id)
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use invariants::trace::{FaultEvent, PhaseMark};

    #[test]
    fn names_are_the_stable_ones() {
        assert_eq!(name_of(&FaultEvent::CrashAfterCommit), "crash_after_commit");
        assert_eq!(name_of(&PhaseMark::FaultPhaseEnd), "fault_phase_end");
    }

    #[test]
    fn a_line_names_seq_and_time() {
        let e = TraceEvent {
            seq: 7,
            at_ms: 1_500,
            kind: TraceKind::Fault { kind: FaultEvent::HostRestarted, detail: "svc0 restarted".into() },
        };
        assert_eq!(event_line(&e), "seq 7 at 1.5 s: fault host_restarted: svc0 restarted");
    }
}
