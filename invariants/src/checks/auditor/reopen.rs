//! The auditor's rule for a purchase that came to nothing, judged from the
//! authority's records, not the rooms' word: a session a purchase ended is
//! open again, until its expiry, once that purchase's order has failed (a
//! decline, a release of an unresolved payment, a charge that came only
//! after its seats were released: no seats and not confirmed). The rooms
//! read the order before every answer to the user (a join, a queue read,
//! the gate of a hold or checkout), so a request sent after the order came
//! to nothing must find the session reopened by the time it is answered.
//! Without this rule the model would reopen a session only when the rooms
//! said they did, and a service that never reopens would look right.

use super::Auditor;
use booking::admission::room::SessionEnd;
use booking::model::{EventId, OrderId, OrderStatus, UserId};

impl Auditor<'_> {
    /// The order that ended `user`'s session on `event_id`, if it has come to
    /// nothing in the store model (the session is then due to reopen).
    pub(super) fn undone_purchase(&self, event_id: &EventId, user: &UserId) -> Option<OrderId> {
        let key = (event_id.clone(), user.clone());
        let Some(SessionEnd::Purchased { order_id, .. }) = self.admissions.sessions.get(&key)?.ended else {
            return None;
        };
        let order = self.store.orders.get(&(key.0, order_id))?;
        let undone = !order.status.owns_seats() && order.status != OrderStatus::Confirmed;
        undone.then_some(order_id)
    }

    /// Why a request by `user` on `event_id`, sent when the purchase
    /// `order_id` had already come to nothing and answered by host time
    /// `to_ms`, found the session still ended, if it did: the session is
    /// still ended by that purchase and had not expired by then.
    pub(super) fn missed_reopen(
        &self,
        event_id: &EventId,
        user: &UserId,
        order_id: OrderId,
        to_ms: i64,
    ) -> Option<String> {
        let key = (event_id.clone(), user.clone());
        let s = self.admissions.sessions.get(&key)?;
        let still_ended = matches!(s.ended, Some(SessionEnd::Purchased { order_id: o, .. }) if o == order_id);
        (still_ended && s.expires_at_ms > to_ms).then(|| {
            let status = self.store.orders.get(&(key.0, order_id)).map(|o| o.status);
            format!(
                "{user}'s session on {event_id} stayed ended by order {order_id} ({status:?} before the request was \
                 sent): a purchase that came to nothing gives the session back until its expiry"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::RoomEvent;
    use booking::model::{HoldToken, Order, PaymentOpId};

    fn order(order_id: OrderId, status: OrderStatus) -> Order {
        Order {
            event_id: "ev".into(),
            order_id,
            holder_id: "u".into(),
            hold_token: HoldToken::nil(),
            seat_ids: vec!["1A".into()],
            amount_cents: 100,
            status,
            payment_op_id: PaymentOpId::nil(),
            payment_deadline_at_ms: 0,
            idempotency_key: "k".into(),
            resolution_reason: None,
            created_at_ms: 0,
            updated_at_ms: 0,
        }
    }

    #[test]
    fn a_session_ended_by_a_purchase_that_came_to_nothing_is_due_to_reopen_until_its_expiry() {
        let cfg = super::super::tests::cfg();
        let mut a = Auditor::new(cfg.audit.as_ref().expect("audited"), &[]);
        let (session_id, order_id) = (booking::model::SessionId::from_u128(7), OrderId::from_u128(9));
        a.admissions.observe(&RoomEvent::Admitted {
            event_id: "ev".into(),
            user: "u".into(),
            session_id,
            expires_at_ms: 5_000,
        });
        let how = SessionEnd::Purchased { order_id, key_id: uuid::Uuid::nil() };
        a.admissions.observe(&RoomEvent::Ended { event_id: "ev".into(), user: "u".into(), session_id, how });
        for (status, undone) in [
            (OrderStatus::Pending, false),
            (OrderStatus::Reconciling, false),
            (OrderStatus::Confirmed, false),
            (OrderStatus::Failed, true),
            (OrderStatus::Released, true),
            (OrderStatus::Compensating, true),
        ] {
            a.store.orders.insert(("ev".into(), order_id), order(order_id, status));
            assert_eq!(a.undone_purchase(&"ev".into(), &"u".into()), undone.then_some(order_id), "{status}");
        }
        assert!(a.missed_reopen(&"ev".into(), &"u".into(), order_id, 4_999).is_some(), "still ended before its expiry");
        assert!(a.missed_reopen(&"ev".into(), &"u".into(), order_id, 5_000).is_none(), "expired: nothing to give back");
        a.admissions.observe(&RoomEvent::Reopened { event_id: "ev".into(), user: "u".into(), session_id });
        assert!(a.missed_reopen(&"ev".into(), &"u".into(), order_id, 4_999).is_none(), "reopened");
        assert_eq!(a.undone_purchase(&"ev".into(), &"u".into()), None);
    }
}
