//! The waiting-room contract as executable checks: every [`Rooms`]
//! implementation runs them (in memory in unit tests, Redis in
//! `booking/tests/redis_rooms.rs`). Each check uses events named from
//! `prefix`, so runs against a shared store do not meet. A check panics with
//! what broke.

use super::{Place, Policy, RoomError, RoomImage, RoomSpec, Rooms, Session, SessionEnd};
use crate::admission::queue::{QueueError, lottery_order};
use crate::model::{EventId, OrderId, UserId};
use sha2::{Digest, Sha256};
use uuid::Uuid;

const OPEN_MS: i64 = 1_000_000;
const TTL_MS: i64 = 60_000;

fn spec(policy: Policy, target: u32) -> RoomSpec {
    RoomSpec { policy, opens_at_ms: OPEN_MS, target_active_sessions: target, session_ttl_ms: TTL_MS }
}

fn user(i: usize) -> UserId {
    UserId::from(format!("u{i:04}"))
}

/// Every check, in order.
pub async fn all(rooms: &dyn Rooms, prefix: &str) {
    opening_is_idempotent(rooms, prefix).await;
    fifo_keeps_arrival_order(rooms, prefix).await;
    admission_never_passes_the_target(rooms, prefix).await;
    sessions_end_once_and_expire(rooms, prefix).await;
    failed_purchases_reopen(rooms, prefix).await;
    ended_sessions_rejoin_at_the_back(rooms, prefix).await;
    restores_stand_as_recorded(rooms, prefix).await;
    lottery_is_recomputable(rooms, prefix).await;
    priority_tiers_go_first(rooms, prefix).await;
    sold_out_tells_the_waiting(rooms, prefix).await;
    one_leader_at_a_time(rooms, prefix).await;
}

/// Opening twice with the same spec is fine; another spec conflicts; bad specs are refused.
pub async fn opening_is_idempotent(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-open"));
    rooms.open(&ev, &spec(Policy::Fifo, 3), [1; 32]).await.unwrap();
    rooms.open(&ev, &spec(Policy::Fifo, 3), [1; 32]).await.unwrap();
    assert_eq!(rooms.open(&ev, &spec(Policy::Fifo, 4), [1; 32]).await, Err(RoomError::Conflict(ev.to_string())));
    assert_eq!(rooms.spec(&ev).await.unwrap(), Some(spec(Policy::Fifo, 3)));
    assert!(rooms.events().await.unwrap().contains(&ev));
    let bad = RoomSpec { target_active_sessions: 0, ..spec(Policy::Fifo, 1) };
    assert_eq!(rooms.open(&EventId::from(format!("{prefix}-bad")), &bad, [1; 32]).await, Err(RoomError::BadSpec));
    assert_eq!(rooms.spec(&EventId::from(format!("{prefix}-none"))).await.unwrap(), None);
    let none = rooms.join(&EventId::from(format!("{prefix}-none")), &UserId::from("u"), 0, OPEN_MS).await;
    assert_eq!(none, Err(RoomError::NoRoom(format!("{prefix}-none"))));
}

/// Places follow arrival order; nobody is admitted before opening; admissions follow places.
pub async fn fifo_keeps_arrival_order(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-fifo"));
    rooms.open(&ev, &spec(Policy::Fifo, 100), [2; 32]).await.unwrap();
    for i in 0..10 {
        let place = rooms.join(&ev, &user(i), 0, OPEN_MS - 100 + i as i64).await.unwrap();
        assert_eq!(place, Place::Waiting { position: i as u64 + 1 });
    }
    assert_eq!(rooms.join(&ev, &user(3), 0, OPEN_MS).await.unwrap(), Place::Waiting { position: 4 }, "rejoin");
    assert_eq!(
        rooms.join(&ev, &UserId::from("tiered"), 1, OPEN_MS).await,
        Err(RoomError::Queue(QueueError::BadTier(1)))
    );
    let early = rooms.admit(&ev, 5, 1.0, OPEN_MS - 1).await.unwrap();
    assert!(early.admitted.is_empty(), "nobody before the sale opens");
    let batch = rooms.admit(&ev, 4, 2.5, OPEN_MS).await.unwrap();
    let names: Vec<_> = batch.admitted.iter().map(|(u, _)| u.clone()).collect();
    assert_eq!(names, (0..4).map(user).collect::<Vec<_>>());
    assert_eq!((batch.active, batch.waiting), (4, 6));
    let (place, gauge) = rooms.place(&ev, &user(4)).await.unwrap();
    assert_eq!(place, Place::Waiting { position: 1 });
    assert_eq!((gauge.waiting, gauge.active, gauge.rate_per_s, gauge.sold_out), (6, 4, 2.5, false));
    match rooms.place(&ev, &user(1)).await.unwrap().0 {
        Place::Admitted { session, ended: None } => {
            assert_eq!(session, batch.admitted[1].1);
            assert_eq!((session.position, session.admitted_at_ms), (2, OPEN_MS));
            assert_eq!(session.expires_at_ms, OPEN_MS + TTL_MS);
        }
        other => panic!("admitted user reads {other:?}"),
    }
    assert_eq!(rooms.place(&ev, &UserId::from("stranger")).await.unwrap().0, Place::NotJoined);
}

/// However passes interleave, open sessions never pass the target.
pub async fn admission_never_passes_the_target(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-target"));
    rooms.open(&ev, &spec(Policy::Fifo, 5), [3; 32]).await.unwrap();
    for i in 0..20 {
        rooms.join(&ev, &user(i), 0, OPEN_MS).await.unwrap();
    }
    let (a, b) = futures::join!(rooms.admit(&ev, 4, 1.0, OPEN_MS), rooms.admit(&ev, 4, 1.0, OPEN_MS));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.admitted.len() + b.admitted.len(), 5, "two passes at once admit the target, no more");
    let mut all: Vec<_> = a.admitted.iter().chain(&b.admitted).map(|(u, _)| u.clone()).collect();
    all.sort();
    assert_eq!(all, (0..5).map(user).collect::<Vec<_>>(), "the first five, each once");
    let more = rooms.admit(&ev, 10, 1.0, OPEN_MS + 1).await.unwrap();
    assert!(more.admitted.is_empty());
    assert_eq!(more.active, 5);
}

fn purchase(n: u8) -> SessionEnd {
    SessionEnd::Purchased { order_id: OrderId::from_bytes([n; 16]), key_id: Uuid::from_bytes([n + 1; 16]) }
}

/// A session ends once, by its purchase; expired sessions end at the next pass and free room.
pub async fn sessions_end_once_and_expire(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-end"));
    rooms.open(&ev, &spec(Policy::Fifo, 2), [4; 32]).await.unwrap();
    for i in 0..4 {
        rooms.join(&ev, &user(i), 0, OPEN_MS).await.unwrap();
    }
    let batch = rooms.admit(&ev, 2, 1.0, OPEN_MS).await.unwrap();
    let (u0, s0) = batch.admitted[0].clone();
    let (u1, s1) = batch.admitted[1].clone();
    assert_eq!(rooms.end_session(&ev, &u1, s0.session_id, purchase(1), OPEN_MS + 5).await.unwrap(), None);
    let ended = rooms.end_session(&ev, &u0, s0.session_id, purchase(1), OPEN_MS + 500).await.unwrap();
    assert_eq!(ended, Some(500));
    assert_eq!(rooms.end_session(&ev, &u0, s0.session_id, purchase(3), OPEN_MS + 600).await.unwrap(), None);
    assert_eq!(rooms.place(&ev, &u0).await.unwrap().0, Place::Admitted { session: s0, ended: Some(purchase(1)) });
    let next = rooms.admit(&ev, 5, 1.0, OPEN_MS + 1_000).await.unwrap();
    assert_eq!(next.admitted.len(), 1, "the purchase freed one place");
    assert_eq!(next.admitted[0].0, user(2));
    let late = rooms.admit(&ev, 5, 1.0, s1.expires_at_ms).await.unwrap();
    assert_eq!(late.expired_ms, vec![TTL_MS as u64], "u1's session expired");
    assert_eq!(late.admitted.iter().map(|(u, _)| u.clone()).collect::<Vec<_>>(), vec![user(3)]);
    assert_eq!(
        rooms.place(&ev, &u1).await.unwrap().0,
        Place::Admitted { session: s1, ended: Some(SessionEnd::Expired) }
    );
    assert_eq!(rooms.end_session(&ev, &u1, s1.session_id, purchase(5), s1.expires_at_ms).await.unwrap(), None);
}

/// A purchase whose order failed is undone until the session's expiry, and
/// only by that order; the reopened session counts again.
pub async fn failed_purchases_reopen(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-reopen"));
    rooms.open(&ev, &spec(Policy::Fifo, 1), [9; 32]).await.unwrap();
    rooms.join(&ev, &user(0), 0, OPEN_MS).await.unwrap();
    rooms.join(&ev, &user(1), 0, OPEN_MS).await.unwrap();
    let (u0, s0) = rooms.admit(&ev, 1, 1.0, OPEN_MS).await.unwrap().admitted[0].clone();
    rooms.end_session(&ev, &u0, s0.session_id, purchase(1), OPEN_MS + 10).await.unwrap();
    let other = OrderId::from_bytes([7; 16]);
    assert!(!rooms.reopen(&ev, &u0, s0.session_id, other, OPEN_MS + 20).await.unwrap(), "another order");
    assert!(rooms.reopen(&ev, &u0, s0.session_id, OrderId::from_bytes([1; 16]), OPEN_MS + 20).await.unwrap());
    assert!(!rooms.reopen(&ev, &u0, s0.session_id, OrderId::from_bytes([1; 16]), OPEN_MS + 21).await.unwrap(), "once");
    assert_eq!(rooms.place(&ev, &u0).await.unwrap().0, Place::Admitted { session: s0, ended: None });
    let pass = rooms.admit(&ev, 1, 1.0, OPEN_MS + 30).await.unwrap();
    assert_eq!((pass.admitted.len(), pass.active), (0, 1), "the reopened session counts");
    rooms.end_session(&ev, &u0, s0.session_id, purchase(3), OPEN_MS + 40).await.unwrap();
    let at_expiry = s0.expires_at_ms;
    assert!(!rooms.reopen(&ev, &u0, s0.session_id, OrderId::from_bytes([3; 16]), at_expiry).await.unwrap(), "expired");
}

/// A user whose session ended (purchase or expiry) who joins again is a new
/// arrival, behind everyone waiting; an open session's holder stays admitted.
pub async fn ended_sessions_rejoin_at_the_back(rooms: &dyn Rooms, prefix: &str) {
    for policy in [Policy::Fifo, Policy::Lottery, Policy::Priority] {
        let ev = EventId::from(format!("{prefix}-rejoin-{policy:?}"));
        rooms.open(&ev, &spec(policy, 2), [10; 32]).await.unwrap();
        for i in 0..4 {
            rooms.join(&ev, &user(i), 0, OPEN_MS - 10 + i as i64).await.unwrap();
        }
        let batch = rooms.admit(&ev, 2, 1.0, OPEN_MS).await.unwrap().admitted;
        let ((bought, sb), (open, so)) = (batch[0].clone(), batch[1].clone());
        assert_eq!(rooms.join(&ev, &open, 0, OPEN_MS + 1).await.unwrap(), Place::Admitted { session: so, ended: None });
        rooms.end_session(&ev, &bought, sb.session_id, purchase(1), OPEN_MS + 2).await.unwrap();
        assert_eq!(
            rooms.join(&ev, &bought, 0, OPEN_MS + 3).await.unwrap(),
            Place::Waiting { position: 3 },
            "{policy:?}"
        );
        assert_eq!(rooms.join(&ev, &open, 0, so.expires_at_ms).await.unwrap(), Place::Waiting { position: 4 });
        let next = rooms.admit(&ev, 4, 1.0, so.expires_at_ms).await.unwrap();
        let order: Vec<UserId> = next.admitted.into_iter().map(|(u, _)| u).collect();
        assert_eq!(order.len(), 2);
        assert!(!order.contains(&bought) && !order.contains(&open), "{policy:?}: the rejoined wait their turn");
        let again = rooms.admit(&ev, 4, 1.0, so.expires_at_ms + TTL_MS).await.unwrap();
        let order: Vec<UserId> = again.admitted.into_iter().map(|(u, _)| u).collect();
        assert_eq!(order, vec![bought.clone(), open.clone()], "{policy:?}: then in their new order");
    }
}

/// A room rebuilt from an image stands as the image says, and only once.
pub async fn restores_stand_as_recorded(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-restore"));
    let s = spec(Policy::Fifo, 2);
    let open = Session::new(&ev, &UserId::from("a"), 1, OPEN_MS, TTL_MS);
    let bought = Session::new(&ev, &UserId::from("b"), 2, OPEN_MS, TTL_MS);
    let image = RoomImage {
        spec: s,
        seed: [11; 32],
        sold_out: false,
        drawn: false,
        pre_draw: vec![],
        sessions: vec![("a".into(), 0, open, None), ("b".into(), 0, bought, Some(purchase(1)))],
        waiting: vec![("w2".into(), 0), ("w1".into(), 0)],
    };
    assert!(rooms.restore(&ev, &image).await.unwrap());
    assert!(!rooms.restore(&ev, &RoomImage { waiting: vec![], ..image.clone() }).await.unwrap(), "once");
    assert_eq!(rooms.spec(&ev).await.unwrap(), Some(s));
    assert_eq!(rooms.place(&ev, &UserId::from("a")).await.unwrap().0, Place::Admitted { session: open, ended: None });
    assert_eq!(
        rooms.place(&ev, &UserId::from("b")).await.unwrap().0,
        Place::Admitted { session: bought, ended: Some(purchase(1)) }
    );
    let (place, gauge) = rooms.place(&ev, &UserId::from("w1")).await.unwrap();
    assert_eq!((place, gauge.waiting, gauge.active), (Place::Waiting { position: 2 }, 2, 1));
    assert_eq!(rooms.join(&ev, &UserId::from("new"), 0, OPEN_MS + 5).await.unwrap(), Place::Waiting { position: 3 });
    let order: Vec<UserId> =
        rooms.admit(&ev, 5, 1.0, OPEN_MS + 10).await.unwrap().admitted.into_iter().map(|(u, _)| u).collect();
    assert_eq!(order, vec!["w2".to_string()], "one place free under the target, in the image's order");
    let lottery = EventId::from(format!("{prefix}-restore-lottery"));
    let joiners: Vec<UserId> = (0..6).map(user).collect();
    let undrawn = RoomImage {
        spec: spec(Policy::Lottery, 10),
        seed: [12; 32],
        pre_draw: joiners.clone(),
        sessions: vec![],
        waiting: vec![],
        ..image
    };
    assert!(rooms.restore(&lottery, &undrawn).await.unwrap());
    assert_eq!(rooms.place(&lottery, &user(2)).await.unwrap().0, Place::AwaitingDraw);
    let order: Vec<UserId> =
        rooms.admit(&lottery, 10, 1.0, OPEN_MS).await.unwrap().admitted.into_iter().map(|(u, _)| u).collect();
    assert_eq!(order, lottery_order(&[12; 32], &joiners), "the same seed draws the same order");
    assert_eq!(rooms.lottery(&lottery).await.unwrap().joiners, Some(joiners));
}

/// The lottery's order is recomputable from its revealed seed; the commitment is the seed's hash.
pub async fn lottery_is_recomputable(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-lottery"));
    let seed = [5u8; 32];
    rooms.open(&ev, &spec(Policy::Lottery, 100), seed).await.unwrap();
    let record = rooms.lottery(&ev).await.unwrap();
    assert_eq!(record.commitment, hex::encode(Sha256::digest(seed)));
    assert_eq!((record.seed, record.joiners), (None, None), "nothing revealed before the draw");
    let joiners: Vec<UserId> = (0..12).map(user).collect();
    for (i, u) in joiners.iter().enumerate() {
        assert_eq!(rooms.join(&ev, u, 0, OPEN_MS - 1_000 + i as i64).await.unwrap(), Place::AwaitingDraw);
    }
    assert_eq!(rooms.join(&ev, &UserId::from("late"), 0, OPEN_MS + 10).await.unwrap(), Place::Waiting { position: 13 });
    let record = rooms.lottery(&ev).await.unwrap();
    let revealed: [u8; 32] = hex::decode(record.seed.expect("revealed after the draw")).unwrap().try_into().unwrap();
    assert_eq!(record.joiners.as_deref(), Some(joiners.as_slice()));
    let expected = lottery_order(&revealed, &joiners);
    let mut admitted = Vec::new();
    for t in 0..13 {
        let batch = rooms.admit(&ev, 1, 1.0, OPEN_MS + 20 + t).await.unwrap();
        admitted.extend(batch.admitted.into_iter().map(|(u, _)| u));
    }
    assert_eq!(&admitted[..12], expected.as_slice(), "admitted in the recomputed order");
    assert_eq!(admitted[12], "late", "later arrivals follow");
    let fifo = EventId::from(format!("{prefix}-fifo-nolottery"));
    rooms.open(&fifo, &spec(Policy::Fifo, 1), seed).await.unwrap();
    assert_eq!(rooms.lottery(&fifo).await, Err(RoomError::NotALottery(fifo.to_string())));
}

/// Lower tiers are admitted first, FIFO within a tier.
pub async fn priority_tiers_go_first(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-priority"));
    rooms.open(&ev, &spec(Policy::Priority, 100), [6; 32]).await.unwrap();
    let joins = [("p1", 1), ("m1", 0), ("p2", 1), ("m2", 0), ("v1", 2)];
    for (i, (u, tier)) in joins.iter().enumerate() {
        rooms.join(&ev, &UserId::from(*u), *tier, OPEN_MS + i as i64).await.unwrap();
    }
    assert_eq!(rooms.place(&ev, &UserId::from("p1")).await.unwrap().0, Place::Waiting { position: 3 });
    assert_eq!(rooms.join(&ev, &UserId::from("x"), 8, OPEN_MS).await, Err(RoomError::Queue(QueueError::BadTier(8))));
    let batch = rooms.admit(&ev, 10, 1.0, OPEN_MS + 10).await.unwrap();
    let names: Vec<_> = batch.admitted.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(names, ["m1", "m2", "p1", "p2", "v1"]);
}

/// Once sold out, waiting users read it, nobody is admitted, nobody joins.
pub async fn sold_out_tells_the_waiting(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-soldout"));
    rooms.open(&ev, &spec(Policy::Fifo, 10), [7; 32]).await.unwrap();
    for i in 0..3 {
        rooms.join(&ev, &user(i), 0, OPEN_MS).await.unwrap();
    }
    rooms.admit(&ev, 1, 1.0, OPEN_MS).await.unwrap();
    rooms.sell_out(&ev).await.unwrap();
    assert!(matches!(rooms.place(&ev, &user(0)).await.unwrap().0, Place::Admitted { .. }));
    let (place, gauge) = rooms.place(&ev, &user(1)).await.unwrap();
    assert_eq!(place, Place::SoldOut);
    assert!(gauge.sold_out);
    assert!(rooms.admit(&ev, 5, 1.0, OPEN_MS + 1).await.unwrap().admitted.is_empty());
    assert_eq!(
        rooms.join(&ev, &UserId::from("late"), 0, OPEN_MS + 2).await,
        Err(RoomError::Queue(QueueError::SoldOut))
    );
    assert_eq!(rooms.join(&ev, &user(2), 0, OPEN_MS + 2).await.unwrap(), Place::SoldOut, "rejoin reads sold out");
}

/// One leader at a time; the lease lapses.
pub async fn one_leader_at_a_time(rooms: &dyn Rooms, prefix: &str) {
    let ev = EventId::from(format!("{prefix}-lead"));
    rooms.open(&ev, &spec(Policy::Fifo, 1), [8; 32]).await.unwrap();
    assert!(rooms.lead(&ev, "a", 1_500, OPEN_MS).await.unwrap());
    assert!(!rooms.lead(&ev, "b", 1_500, OPEN_MS + 1_000).await.unwrap());
    assert!(rooms.lead(&ev, "a", 1_500, OPEN_MS + 1_000).await.unwrap(), "the leader renews");
    assert!(!rooms.lead(&ev, "b", 1_500, OPEN_MS + 2_499).await.unwrap());
    assert!(rooms.lead(&ev, "b", 1_500, OPEN_MS + 2_500).await.unwrap(), "a lapsed lease is taken");
    assert!(!rooms.lead(&ev, "a", 1_500, OPEN_MS + 2_600).await.unwrap());
}
