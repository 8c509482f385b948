//! The rebuild rule, on journals whose answer is known.

use super::*;
use crate::model::EventId;

const OPEN_MS: i64 = 10_000;
const TTL_MS: i64 = 5_000;

fn spec(policy: Policy) -> RoomSpec {
    RoomSpec { policy, opens_at_ms: OPEN_MS, target_active_sessions: 3, session_ttl_ms: TTL_MS }
}

fn joined(user: impl Into<UserId>, tier: u8, at: i64, seq: i64) -> JournalUser {
    JournalUser { user_id: user.into(), tier, first_joined: (at, seq), joined: (at, seq), session: None }
}

#[test]
fn fifo_and_priority_wait_in_tier_then_join_order() {
    let users = vec![joined("c", 1, 30, 3), joined("a", 0, 10, 1), joined("b", 1, 20, 2), joined("d", 0, 40, 4)];
    let fifo =
        RoomImage::of(&RoomJournal { spec: spec(Policy::Fifo), sold_out: false, users: users.clone() }, [0; 32], 0);
    let names: Vec<&str> = fifo.waiting.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(names, ["a", "b", "c", "d"], "FIFO ignores tiers");
    let prio = RoomImage::of(&RoomJournal { spec: spec(Policy::Priority), sold_out: true, users }, [0; 32], 0);
    assert_eq!(prio.waiting, vec![("a".into(), 0), ("d".into(), 0), ("b".into(), 1), ("c".into(), 1)]);
    assert!(prio.sold_out && !prio.drawn && prio.pre_draw.is_empty());
}

#[test]
fn sessions_come_back_and_expire_by_their_time() {
    let mut open = joined("open", 0, 1, 1);
    let s_open = Session::new(&EventId::from("e"), &UserId::from("open"), 1, OPEN_MS, TTL_MS);
    open.session = Some((s_open, None));
    let mut old = joined("old", 0, 2, 2);
    let s_old = Session::new(&EventId::from("e"), &UserId::from("old"), 1, OPEN_MS - TTL_MS, TTL_MS);
    old.session = Some((s_old, None));
    let journal = RoomJournal { spec: spec(Policy::Fifo), sold_out: false, users: vec![old, open] };
    let image = RoomImage::of(&journal, [0; 32], OPEN_MS + 1);
    assert_eq!(
        image.sessions,
        vec![("open".into(), 0, s_open, None), ("old".into(), 0, s_old, Some(SessionEnd::Expired))]
    );
    assert!(image.waiting.is_empty());
}

#[test]
fn a_lottery_redraws_its_pre_opening_joiners_by_the_same_seed() {
    let seed = [3u8; 32];
    let early: Vec<JournalUser> = (0..8).map(|i| joined(format!("u{i}"), 0, 100 + i, i)).collect();
    let mut users = early.clone();
    users.push(joined("late", 0, OPEN_MS + 1, 50));
    // u3 was admitted; u5 was admitted, bought, and joined again after opening.
    let s3 = Session::new(&EventId::from("e"), &UserId::from("u3"), 1, OPEN_MS, TTL_MS);
    users[3].session = Some((s3, None));
    users[5].joined = (OPEN_MS + 5, 60);
    let journal = RoomJournal { spec: spec(Policy::Lottery), sold_out: false, users };
    let pre: Vec<UserId> = early.iter().map(|u| u.user_id.clone()).collect();
    let before = RoomImage::of(&journal, seed, OPEN_MS - 1);
    assert!(!before.drawn && before.waiting.is_empty());
    assert_eq!(before.pre_draw, pre, "arrival order");
    let after = RoomImage::of(&journal, seed, OPEN_MS + 10);
    assert!(after.drawn);
    let mut expected: Vec<(UserId, u8)> =
        lottery_order(&seed, &pre).into_iter().filter(|u| u != "u3" && u != "u5").map(|u| (u, 0)).collect();
    expected.extend([(UserId::from("late"), 1), (UserId::from("u5"), 1)]);
    assert_eq!(after.waiting, expected, "the draw's order, then later arrivals by join");
    assert_eq!(after.sessions, vec![("u3".into(), 0, s3, None)]);
}
