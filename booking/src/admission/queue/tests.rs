//! Each policy keeps the guarantee it states.

use super::*;

const OPEN_MS: i64 = 1_000;

fn users(n: usize) -> Vec<UserId> {
    (0..n).map(|i| UserId::from(format!("u{i:03}"))).collect()
}

fn admit_all(q: &mut Queue, at_ms: i64) -> Vec<UserId> {
    let mut out = Vec::new();
    loop {
        let batch = q.admit(3, at_ms);
        if batch.is_empty() {
            return out;
        }
        out.extend(batch);
    }
}

#[test]
fn fifo_admits_nobody_before_someone_who_joined_earlier() {
    let mut q = Queue::new(Fairness::Fifo, OPEN_MS);
    for (i, u) in users(10).iter().enumerate() {
        assert_eq!(q.join(u, 0, i as i64), Ok(Standing::Waiting { position: i as u64 + 1 }));
    }
    assert_eq!(q.admit(5, OPEN_MS - 1), Vec::<UserId>::new(), "nobody before the sale opens");
    assert_eq!(q.admit(4, OPEN_MS), users(4));
    assert_eq!(q.standing(&UserId::from("u004")), Standing::Waiting { position: 1 });
    assert_eq!(q.standing(&UserId::from("u000")), Standing::Admitted);
    assert_eq!(
        q.join(&UserId::from("u004"), 0, 5_000),
        Ok(Standing::Waiting { position: 1 }),
        "joining again changes nothing"
    );
    assert_eq!(admit_all(&mut q, OPEN_MS), users(10)[4..].to_vec());
}

#[test]
fn the_lottery_is_drawn_at_opening_and_anyone_can_recompute_it() {
    let seed = [7u8; 32];
    let mut q = Queue::new(Fairness::Lottery { seed }, OPEN_MS);
    let commitment = q.commitment().expect("published when the queue opens");
    for u in users(20) {
        assert_eq!(q.join(&u, 0, 10), Ok(Standing::AwaitingDraw));
    }
    assert_eq!(q.reveal(), Err(QueueError::NotDrawn), "the seed stays secret until the draw");
    q.join(&UserId::from("late1"), 0, OPEN_MS + 5).unwrap();
    q.join(&UserId::from("late2"), 0, OPEN_MS + 6).unwrap();
    let admitted = admit_all(&mut q, OPEN_MS + 10);
    // A buyer's check: the revealed seed matches the commitment and recomputes the order.
    let (revealed, joiners) = q.reveal().expect("revealed after the draw");
    assert_eq!(hex::encode(Sha256::digest(revealed)), commitment);
    assert_eq!(joiners, users(20));
    let mut expected = lottery_order(&revealed, &joiners);
    assert_ne!(expected, users(20), "a draw, not arrival order");
    expected.extend([UserId::from("late1"), UserId::from("late2")]);
    assert_eq!(admitted, expected, "the drawn order, then later arrivals in arrival order");
    let other = lottery_order(&[8u8; 32], &joiners);
    assert_ne!(other, lottery_order(&revealed, &joiners), "another seed, another order");
}

#[test]
fn priority_tiers_go_first_fifo_within_a_tier() {
    let mut q = Queue::new(Fairness::Priority, OPEN_MS);
    q.join(&UserId::from("public1"), 1, 1).unwrap();
    q.join(&UserId::from("member1"), 0, 2).unwrap();
    q.join(&UserId::from("public2"), 1, 3).unwrap();
    q.join(&UserId::from("member2"), 0, 4).unwrap();
    assert_eq!(q.standing(&UserId::from("public1")), Standing::Waiting { position: 3 });
    assert_eq!(q.standing(&UserId::from("member2")), Standing::Waiting { position: 2 });
    assert_eq!(admit_all(&mut q, OPEN_MS), ["member1", "member2", "public1", "public2"]);
    assert_eq!(q.join(&UserId::from("x"), MAX_TIERS, 0), Err(QueueError::BadTier(MAX_TIERS)));
    assert_eq!(Queue::new(Fairness::Fifo, 0).join(&UserId::from("x"), 1, 0), Err(QueueError::BadTier(1)));
}

#[test]
fn a_sold_out_event_tells_every_waiting_user_at_once() {
    let mut q = Queue::new(Fairness::Fifo, OPEN_MS);
    for u in users(5) {
        q.join(&u, 0, 0).unwrap();
    }
    q.admit(2, OPEN_MS);
    q.sold_out();
    assert_eq!(q.standing(&UserId::from("u000")), Standing::Admitted);
    assert_eq!(q.standing(&UserId::from("u004")), Standing::SoldOut);
    assert_eq!(q.admit(10, OPEN_MS), Vec::<UserId>::new());
    assert_eq!(q.join(&UserId::from("late"), 0, OPEN_MS), Err(QueueError::SoldOut));
    assert_eq!(q.waiting(), 3);
}

#[test]
fn find_tells_joiners_from_strangers_before_and_after_the_draw() {
    // Regression (2026-12-02): `has` scanned the lottery's pre-draw list on
    // every join and poll, O(n) each, O(n²) over a pre-sale's joins; it is a
    // set lookup now. The answers must not change with it.
    let mut q = Queue::new(Fairness::Lottery { seed: [3u8; 32] }, OPEN_MS);
    for u in users(50) {
        q.join(&u, 0, 10).unwrap();
    }
    assert_eq!(q.join(&UserId::from("u007"), 0, 20), Ok(Standing::AwaitingDraw), "joining again changes nothing");
    assert_eq!(q.waiting(), 50, "no duplicate");
    assert!(q.has(&UserId::from("u049")) && !q.has(&UserId::from("stranger")));
    assert_eq!(q.find(&UserId::from("u000")), Some(Standing::AwaitingDraw));
    assert_eq!(q.find(&UserId::from("stranger")), None);
    q.open_if_due(OPEN_MS);
    assert!(q.has(&UserId::from("u049")) && !q.has(&UserId::from("stranger")), "after the draw too");
    let positions: BTreeSet<u64> = users(50)
        .iter()
        .map(|u| match q.find(u) {
            Some(Standing::Waiting { position }) => position,
            other => panic!("{u}: {other:?}"),
        })
        .collect();
    assert_eq!(positions, (1..=50).collect(), "every joiner has one place");
    assert_eq!(q.find(&UserId::from("stranger")), None);
    q.sold_out();
    assert_eq!(q.find(&UserId::from("u010")), Some(Standing::SoldOut));
    assert_eq!(q.find(&UserId::from("stranger")), None, "a stranger is still no joiner");
}
