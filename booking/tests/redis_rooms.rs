//! [`RedisRooms`] against a real Redis: the waiting-room contract, two
//! instances joining and admitting at once, the lottery drawn amid joins from
//! a lagging instance, a lost room (a restart without persistence), and a
//! differential run against [`MemRooms`] (every answer equal, each policy).
//!
//! The server is the one `test_services::redis_url` picks (`HOLDFAST_TEST_REDIS_URL`,
//! a container where Docker runs, else `redis://127.0.0.1:6379`).
//! Each test keeps its keys under a prefix of its own (test name and process
//! id), cleared before and after.

use booking::admission::queue::lottery_order;
use booking::admission::room::{
    Admitted, Gauge, LotteryRecord, MemRooms, Place, Policy, RedisRooms, RoomError, RoomSpec, Rooms, Session,
    SessionEnd, contract,
};
use booking::model::{EventId, OrderId, SessionId, UserId};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

const OPEN_MS: i64 = 1_000_000;

fn redis_url() -> String {
    test_services::redis_url()
}

/// The key prefix of test `name` in this process.
fn prefix(name: &str) -> String {
    format!("holdfast-test:{name}:{}", std::process::id())
}

/// Deletes every key under `prefix`.
async fn clear(prefix: &str) {
    let client = redis::Client::open(redis_url()).expect("redis url");
    let mut conn = client.get_multiplexed_async_connection().await.expect("connect to the test redis");
    let mut cursor: u64 = 0;
    for _ in 0..100_000 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}:*"))
            .arg("COUNT")
            .arg(1_000)
            .query_async(&mut conn)
            .await
            .expect("scan");
        if !keys.is_empty() {
            let _: () = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await.expect("del");
        }
        if next == 0 {
            return;
        }
        cursor = next;
    }
    panic!("scan of {prefix} did not finish");
}

async fn rooms(prefix: &str) -> RedisRooms {
    RedisRooms::connect(&redis_url(), prefix).await.expect("connect to the test redis")
}

#[tokio::test]
async fn redis_rooms_keep_the_contract() {
    let p = prefix("contract");
    clear(&p).await;
    contract::all(&rooms(&p).await, "redis").await;
    clear(&p).await;
}

/// What a Redis restart without persistence does (here: the room's keys deleted):
/// every call on the lost room answers `NoRoom`, none answers an empty room.
#[tokio::test]
async fn a_lost_room_answers_no_room() {
    let p = prefix("lost");
    clear(&p).await;
    let rooms = rooms(&p).await;
    let spec =
        RoomSpec { policy: Policy::Lottery, opens_at_ms: OPEN_MS, target_active_sessions: 5, session_ttl_ms: 1_000 };
    let (lost, u) = (EventId::from("lost"), UserId::from("u"));
    rooms.open(&lost, &spec, [12; 32]).await.unwrap();
    assert_eq!(rooms.join(&lost, &u, 0, OPEN_MS - 1).await.unwrap(), Place::AwaitingDraw);
    clear(&p).await;
    let no_room = || RoomError::NoRoom("lost".into());
    assert_eq!(rooms.join(&lost, &u, 0, OPEN_MS).await, Err(no_room()));
    assert_eq!(rooms.place(&lost, &u).await, Err(no_room()));
    assert_eq!(rooms.admit(&lost, 5, 1.0, OPEN_MS).await, Err(no_room()));
    assert_eq!(rooms.end_session(&lost, &u, SessionId::nil(), SessionEnd::Expired, OPEN_MS).await, Err(no_room()));
    assert_eq!(rooms.sell_out(&lost).await, Err(no_room()));
    assert_eq!(rooms.lottery(&lost).await, Err(no_room()));
    assert_eq!(rooms.lead(&lost, "h", 1_000, OPEN_MS).await, Err(no_room()));
    assert_eq!(rooms.spec(&lost).await, Ok(None));
    assert_eq!(rooms.events().await, Ok(vec![]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_joins_from_two_instances_keep_one_place_each() {
    let p = prefix("concurrent");
    clear(&p).await;
    let (a, b) = (rooms(&p).await, rooms(&p).await);
    let spec =
        RoomSpec { policy: Policy::Fifo, opens_at_ms: OPEN_MS, target_active_sessions: 1_000, session_ttl_ms: 60_000 };
    let ev = &EventId::from("joins");
    a.open(ev, &spec, [9; 32]).await.unwrap();
    b.open(ev, &spec, [9; 32]).await.unwrap();

    let a_users: Vec<UserId> = (0..400).map(|i| UserId::from(format!("a{i:03}"))).collect();
    let b_users: Vec<UserId> = (0..400).map(|i| UserId::from(format!("b{i:03}"))).collect();
    let mut answered = BTreeMap::new();
    for chunk in 0..8 {
        let (from, to) = (chunk * 50, chunk * 50 + 50);
        let joins_a = futures::future::join_all(a_users[from..to].iter().map(|u| a.join(ev, u, 0, OPEN_MS - 10)));
        let joins_b = futures::future::join_all(b_users[from..to].iter().map(|u| b.join(ev, u, 0, OPEN_MS - 10)));
        let (ra, rb) = futures::join!(joins_a, joins_b);
        for (u, place) in a_users[from..to].iter().zip(ra).chain(b_users[from..to].iter().zip(rb)) {
            let Place::Waiting { position } = place.unwrap() else { panic!("{u} is not waiting") };
            answered.insert(u.clone(), position);
        }
    }
    // Everyone reads the place their join answered; the places are 1..=800, each once.
    let mut by_position = BTreeMap::new();
    for (i, u) in a_users.iter().chain(&b_users).enumerate() {
        let reader = if i % 2 == 0 { &a } else { &b };
        let (place, gauge) = reader.place(ev, u).await.unwrap();
        let Place::Waiting { position } = place else { panic!("{u} reads {place:?}") };
        assert_eq!(answered[u], position, "{u}'s join answered another place");
        assert_eq!(gauge.waiting, 800);
        assert!(by_position.insert(position, u.clone()).is_none(), "position {position} held twice");
    }
    assert_eq!(by_position.keys().copied().collect::<Vec<_>>(), (1..=800).collect::<Vec<u64>>());

    // Admitting in batches yields them in position order.
    let mut admitted = Vec::new();
    for pass in 0..20 {
        let admitter = if pass % 2 == 0 { &a } else { &b };
        let batch = admitter.admit(ev, 64, 1.0, OPEN_MS + pass).await.unwrap();
        for (i, (_, session)) in batch.admitted.iter().enumerate() {
            assert_eq!(session.position, i as u64 + 1);
        }
        admitted.extend(batch.admitted.into_iter().map(|(u, _)| u));
    }
    assert_eq!(admitted, by_position.into_values().collect::<Vec<_>>(), "admitted in position order");

    // Two instances admitting at once never pass the target together.
    let target = 25;
    let ttl = 1_000;
    let spec = RoomSpec { target_active_sessions: target, session_ttl_ms: ttl, ..spec };
    let ev = &EventId::from("target");
    a.open(ev, &spec, [10; 32]).await.unwrap();
    let users: Vec<UserId> = (0..600).map(|i| UserId::from(format!("t{i:03}"))).collect();
    let (ja, jb) = futures::join!(
        futures::future::join_all(users[..300].iter().map(|u| a.join(ev, u, 0, OPEN_MS))),
        futures::future::join_all(users[300..].iter().map(|u| b.join(ev, u, 0, OPEN_MS))),
    );
    assert!(ja.into_iter().chain(jb).all(|r| r.is_ok()));
    let mut open: BTreeMap<UserId, Session> = BTreeMap::new();
    let mut ever = BTreeSet::new();
    for round in 0..60i64 {
        let now = OPEN_MS + round * 300;
        open.retain(|_, s| s.expires_at_ms > now);
        let (ra, rb) = futures::join!(a.admit(ev, 10, 1.0, now), b.admit(ev, 10, 1.0, now));
        let (ra, rb) = (ra.unwrap(), rb.unwrap());
        assert!(ra.active <= target && rb.active <= target, "round {round}: {} and {} active", ra.active, rb.active);
        for (u, s) in ra.admitted.iter().chain(&rb.admitted) {
            assert!(ever.insert(u.clone()), "{u} admitted twice");
            open.insert(u.clone(), *s);
        }
        assert!(open.len() <= target as usize, "round {round}: {} sessions open", open.len());
        assert_eq!(a.place(ev, &UserId::from("nobody")).await.unwrap().1.active as usize, open.len(), "round {round}");
        // Every third round one holder buys, freeing a place before expiry.
        if round % 3 == 0
            && let Some((u, s)) = open.pop_first()
        {
            let why = SessionEnd::Purchased { order_id: OrderId::nil(), key_id: Uuid::nil() };
            let ended = b.end_session(ev, &u, s.session_id, why, now + 1).await.unwrap();
            assert_eq!(ended, Some((now + 1 - s.admitted_at_ms) as u64));
        }
    }
    assert!(ever.len() > 100, "the rounds admitted {} users", ever.len());
    clear(&p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lottery_draw_under_concurrent_joins_places_everyone_once() {
    let p = prefix("draw-race");
    clear(&p).await;
    let (a, b) = (rooms(&p).await, rooms(&p).await);
    let seed = [11u8; 32];
    let spec = RoomSpec {
        policy: Policy::Lottery,
        opens_at_ms: OPEN_MS,
        target_active_sessions: 10_000,
        session_ttl_ms: 60_000,
    };
    let ev = &EventId::from("draw");
    a.open(ev, &spec, seed).await.unwrap();
    // a's clock lags (its users join before the opening) while b's joins, after it, draw.
    let early: Vec<UserId> = (0..400).map(|i| UserId::from(format!("e{i:03}"))).collect();
    let late: Vec<UserId> = (0..300).map(|i| UserId::from(format!("l{i:03}"))).collect();
    for u in &early[..100] {
        assert_eq!(a.join(ev, u, 0, OPEN_MS - 1).await.unwrap(), Place::AwaitingDraw);
    }
    // In chunks of 10, so the draw lands amid a's joins: b's first join marks
    // it due and closes the pre-draw list; a's joins before are drawn, the
    // later ones (their clock lagging still) follow in arrival order.
    let joins_a = async {
        let mut out = Vec::new();
        for chunk in early[100..].chunks(10) {
            out.extend(futures::future::join_all(chunk.iter().map(|u| a.join(ev, u, 0, OPEN_MS - 1))).await);
        }
        out
    };
    let joins_b = async {
        let mut out = Vec::new();
        for chunk in late.chunks(10) {
            out.extend(futures::future::join_all(chunk.iter().map(|u| b.join(ev, u, 0, OPEN_MS + 1))).await);
        }
        out
    };
    let (ea, lb) = futures::join!(joins_a, joins_b);
    let mut drawn_users = BTreeSet::new();
    for (u, place) in early[..100].iter().map(|u| (u, Ok(Place::AwaitingDraw))).chain(early[100..].iter().zip(ea)) {
        match place.unwrap() {
            Place::AwaitingDraw => assert!(drawn_users.insert(u.clone())),
            Place::Waiting { .. } => {}
            other => panic!("{u} reads {other:?}"),
        }
    }
    assert!(lb.into_iter().all(|p| matches!(p, Ok(Place::Waiting { .. }))), "joins after the opening have places");
    let record = b.lottery(ev).await.unwrap();
    let joiners = record.joiners.expect("drawn");
    assert_eq!(&joiners[..100], &early[..100], "joiners in arrival order");
    assert_eq!(joiners.iter().cloned().collect::<BTreeSet<_>>(), drawn_users, "the draw placed every pre-draw joiner");
    assert_eq!(joiners.len(), drawn_users.len(), "each once");
    let batch = a.admit(ev, 10_000, 1.0, OPEN_MS + 2).await.unwrap();
    let order: Vec<UserId> = batch.admitted.into_iter().map(|(u, _)| u).collect();
    assert_eq!(order.len(), 700, "everyone placed once");
    assert_eq!(order.iter().collect::<BTreeSet<_>>().len(), 700);
    assert_eq!(&order[..joiners.len()], lottery_order(&seed, &joiners).as_slice(), "the draw's order first");
    eprintln!("{} of 400 early joiners were drawn", joiners.len());
    assert!(joiners.len() < 400, "the draw ran amid the early joins (b's first join draws)");
    clear(&p).await;
}

/// One call of the differential run.
#[derive(Debug, Clone)]
enum Op {
    Join { event: EventId, user: UserId, tier: u8, now: i64 },
    Admit { event: EventId, n: u32, rate: f64, now: i64 },
    Place { event: EventId, user: UserId },
    End { event: EventId, user: UserId, session_id: Option<SessionId>, why: SessionEnd, now: i64 },
    Reopen { event: EventId, user: UserId, session_id: Option<SessionId>, order: u8, now: i64 },
    SellOut { event: EventId },
    Lottery { event: EventId },
    Lead { event: EventId, holder: String, lease_ms: i64, now: i64 },
    Spec { event: EventId },
    Events,
    Open { event: EventId, spec: RoomSpec, seed: [u8; 32] },
}

/// A call's answer, whichever call it was.
#[derive(Debug, PartialEq)]
enum Answer {
    Unit(Result<(), RoomError>),
    Spec(Result<Option<RoomSpec>, RoomError>),
    Events(Result<Vec<EventId>, RoomError>),
    Join(Result<Place, RoomError>),
    Place(Result<(Place, Gauge), RoomError>),
    Admit(Result<Admitted, RoomError>),
    End(Result<Option<u64>, RoomError>),
    Lottery(Result<LotteryRecord, RoomError>),
    Lead(Result<bool, RoomError>),
    Reopen(Result<bool, RoomError>),
}

/// Applies `op` to `rooms` (`session_of`: the session an `End` names unless it made one up).
async fn apply(rooms: &dyn Rooms, op: &Op, session_of: Option<SessionId>) -> Answer {
    match op {
        Op::Join { event, user, tier, now } => Answer::Join(rooms.join(event, user, *tier, *now).await),
        Op::Admit { event, n, rate, now } => Answer::Admit(rooms.admit(event, *n, *rate, *now).await),
        Op::Place { event, user } => Answer::Place(rooms.place(event, user).await),
        Op::End { event, user, session_id, why, now } => {
            let sid = session_id.or(session_of).unwrap_or(SessionId::nil());
            Answer::End(rooms.end_session(event, user, sid, *why, *now).await)
        }
        Op::Reopen { event, user, session_id, order, now } => {
            let sid = session_id.or(session_of).unwrap_or(SessionId::nil());
            Answer::Reopen(rooms.reopen(event, user, sid, OrderId::from_bytes([*order; 16]), *now).await)
        }
        Op::SellOut { event } => Answer::Unit(rooms.sell_out(event).await),
        Op::Lottery { event } => Answer::Lottery(rooms.lottery(event).await),
        Op::Lead { event, holder, lease_ms, now } => Answer::Lead(rooms.lead(event, holder, *lease_ms, *now).await),
        Op::Spec { event } => Answer::Spec(rooms.spec(event).await),
        Op::Events => Answer::Events(rooms.events().await),
        Op::Open { event, spec, seed } => Answer::Unit(rooms.open(event, spec, *seed).await),
    }
}

/// A random call at `now`; session ends mostly name one of `admitted` (users admitted so far).
fn random_op(rng: &mut ChaCha8Rng, i: usize, policy: Policy, now: i64, spec: &RoomSpec, admitted: &[UserId]) -> Op {
    let event = EventId::from(if rng.random_ratio(1, 40) { "missing" } else { "ev" });
    // New users keep arriving: 150 at first, one more every 4 calls.
    let user = UserId::from(format!("user{:03}", rng.random_range(0..150 + i / 4)));
    let roll = rng.random_range(0..1_000);
    match roll {
        0..400 => {
            let tier = match policy {
                Policy::Priority => rng.random_range(0..=8),
                _ if rng.random_ratio(1, 20) => rng.random_range(1..4),
                _ => 0,
            };
            Op::Join { event, user, tier, now }
        }
        400..600 => Op::Admit { event, n: rng.random_range(0..6), rate: rng.random::<f64>() * 50.0, now },
        600..750 => Op::Place { event, user },
        750..850 => {
            let order = rng.random_range(0..3u8);
            let why = match rng.random_range(0..3) {
                0 => SessionEnd::Expired,
                _ => SessionEnd::Purchased { order_id: OrderId::from_bytes([order; 16]), key_id: Uuid::from_u128(7) },
            };
            let session_id = if rng.random_ratio(1, 5) { Some(SessionId::from_u128(rng.random())) } else { None };
            let user = match admitted.len() {
                0 => user,
                n if rng.random_ratio(4, 5) => admitted[n - 1 - rng.random_range(0..n.min(8))].clone(),
                _ => user,
            };
            if rng.random_ratio(1, 3) {
                Op::Reopen { event, user, session_id, order, now }
            } else {
                Op::End { event, user, session_id, why, now }
            }
        }
        850..920 => {
            let holder = ["h1", "h2", "h3"][rng.random_range(0..3)].to_string();
            Op::Lead { event, holder, lease_ms: rng.random_range(-100..3_000), now }
        }
        920..960 => Op::Lottery { event },
        960..975 => Op::Spec { event },
        975..985 => Op::Events,
        985..998 => {
            let spec = if rng.random_bool(0.5) { *spec } else { RoomSpec { target_active_sessions: 99, ..*spec } };
            Op::Open { event, spec, seed: [policy as u8; 32] }
        }
        _ if i > 1_500 => Op::SellOut { event },
        _ => Op::Place { event, user },
    }
}

#[tokio::test]
async fn redis_rooms_answer_as_mem_rooms_do() {
    for (k, policy) in [Policy::Fifo, Policy::Lottery, Policy::Priority].into_iter().enumerate() {
        let p = prefix(&format!("differential-{k}"));
        clear(&p).await;
        let redis = rooms(&p).await;
        let mem = MemRooms::new();
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed_0000 + k as u64);
        let spec = RoomSpec { policy, opens_at_ms: OPEN_MS, target_active_sessions: 6, session_ttl_ms: 1_500 };
        let seed = [policy as u8; 32];
        let ev = EventId::from("ev");
        assert_eq!(mem.open(&ev, &spec, seed).await, redis.open(&ev, &spec, seed).await);
        let mut now = OPEN_MS - 3_000;
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut admitted: Vec<UserId> = Vec::new();
        for i in 0..2_000 {
            now += if rng.random_ratio(1, 25) { -rng.random_range(0..200) } else { rng.random_range(0..60) };
            let mut op = random_op(&mut rng, i, policy, now, &spec, &admitted);
            if i == 1_800 {
                op = Op::SellOut { event: "ev".into() };
            }
            // A session end names the user's real session (from the in-memory rooms) unless the op made one up.
            let session_of = match &op {
                Op::End { event, user, .. } | Op::Reopen { event, user, .. } => match mem.place(event, user).await {
                    Ok((Place::Admitted { session, .. }, _)) => Some(session.session_id),
                    _ => None,
                },
                _ => None,
            };
            let (m, r) = (apply(&mem, &op, session_of).await, apply(&redis, &op, session_of).await);
            assert_eq!(m, r, "{policy:?} op {i}: {op:?}");
            if let Answer::Admit(Ok(a)) = &m {
                admitted.extend(a.admitted.iter().map(|(u, _)| u.clone()));
                if !a.expired_ms.is_empty() {
                    *counts.entry("admit (expired some)").or_default() += 1;
                }
            }
            let printed = format!("{m:?}");
            let kind = match (&op, printed.as_str()) {
                (_, m) if m.contains("(Err(") => "refused",
                (Op::Admit { .. }, m) if !m.contains("admitted: []") => "admit (some)",
                (Op::End { .. }, m) if m.contains("Ok(Some") => "end (ended)",
                (Op::Join { .. }, m) if m.contains("AwaitingDraw") => "join (awaiting draw)",
                (Op::Lead { .. }, "Lead(Ok(true))") => "lead (taken)",
                (Op::Lottery { .. }, m) if m.contains("seed: Some") => "lottery (revealed)",
                (Op::Place { .. }, m) if m.contains("SoldOut") => "place (sold out)",
                _ => "other",
            };
            *counts.entry(kind).or_default() += 1;
        }
        for i in 0..650 {
            let op = Op::Place { event: "ev".into(), user: UserId::from(format!("user{i:03}")) };
            assert_eq!(apply(&mem, &op, None).await, apply(&redis, &op, None).await, "{policy:?} final {op:?}");
        }
        eprintln!("{policy:?}: {counts:?}");
        for kind in
            ["admit (some)", "admit (expired some)", "end (ended)", "lead (taken)", "place (sold out)", "refused"]
        {
            assert!(counts.get(kind).is_some_and(|&c| c > 0), "{policy:?}: the run never had {kind}");
        }
        if policy == Policy::Lottery {
            assert!(counts.contains_key("join (awaiting draw)") && counts.contains_key("lottery (revealed)"));
        }
        clear(&p).await;
    }
}
