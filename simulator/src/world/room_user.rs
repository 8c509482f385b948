//! A user in front of a waiting room: arrives, joins the event's queue, and
//! waits cheaply (one small task, asleep for as long as the service says)
//! until admitted or told the event sold out; then, with the admission
//! token, looks, holds and checks out as any user does, after the fault
//! phase too (an admission is a turn to buy), and polls once more just before
//! the run gives up (a late sell-out is told to everyone). Half of those who
//! let their admission lapse (released or abandoned their hold) come back
//! once it has expired and join again, at the back. A share of users
//! also try to get past the queue: holds without a token, with a forged,
//! borrowed or other-event one, and with their own after its session ended.
//! Joins and polls are traced operations (the auditor holds their answers to
//! the rooms' state); what the user learnt is traced too (`RoomEvent::Told`),
//! and so is every hold and checkout.

use crate::world::recorder::Recorder;
use crate::world::user::{Actor, UserParams};
use booking::model::{EventId, SeatId, UserId};
use booking::problem_kind::ProblemKind;
use invariants::trace::{ClientOp, OpResult, RoomEvent};
use rand::Rng;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Polls one waiting user makes at most.
pub const MAX_POLLS: u32 = 10_000;
/// Wait after a lost answer to a join or poll, ms (uniform, end exclusive).
pub const POLL_RETRY_MS: (u64, u64) = (1_000, 3_000);
/// Extra wait added to each `Retry-After`, ms (uniform, end exclusive): clients do not poll in lockstep.
pub const POLL_JITTER_MS: (u64, u64) = (0, 1_000);
/// A waiting user's last poll comes this long before it gives up, ms, whatever
/// `Retry-After` said: a sale that sold out late is still told to everyone.
pub const LAST_POLL_BEFORE_GIVE_UP_MS: u64 = 5_000;
/// Admission tokens remembered for borrowing (bounded).
pub const MAX_SHARED_ADMISSIONS: usize = 4_096;

/// Admission tokens users were given, shared by a world's users: the pool a
/// bypassing user borrows from (a leaked link).
pub type SharedAdmissions = Arc<Mutex<Vec<(UserId, EventId, String)>>>;

/// A world's waiting room: one in front of every event, opened before the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RoomWorld {
    /// The fairness rule.
    pub policy: booking::admission::room::Policy,
    /// Sessions open at once at most.
    pub target_active_sessions: u32,
    /// An admission's lifetime, ms.
    pub session_ttl_ms: i64,
    /// When the sale opens, simulated ms after the start.
    pub opens_at_ms: u64,
    /// The law's prior mean session, ms.
    pub prior_session_ms: u64,
    /// Share of users with a members' credential (tier 0; priority rooms).
    pub member_share: f64,
    /// Share of users who try to get past the queue.
    pub bypass_share: f64,
    /// Longest wait a waiting client is told, s.
    pub poll_max_s: u64,
}

/// The tier a member's credential grants (the first: members before the public).
pub const MEMBER_TIER: u8 = 0;

/// How a world's users meet its waiting room.
#[derive(Debug, Clone, Copy)]
pub struct RoomRun {
    /// Share of users who also try to get past the queue.
    pub bypass_share: f64,
    /// Simulated ms after which a user still waiting stops polling (the run is ending).
    pub give_up_at_ms: u64,
    /// An admission's lifetime, ms: a user who let theirs lapse comes back after it.
    pub session_ttl_ms: u64,
}

/// Share of users who let their admission lapse without buying (released or
/// abandoned their hold) and come back once it has expired, joining again
/// at the back of the line (the rooms' record then holds a rejoin).
pub const COMEBACK_SHARE: f64 = 0.5;

/// Share of buyers who, their checkout accepted, send it again once their
/// admission has expired (an answer lost, asked about late): the purchase's
/// retry passes the gate past the expiry and answers the same order.
pub const LATE_RETRY_SHARE: f64 = 0.05;

/// How an admitted user's turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Turn {
    /// A purchase, a refusal by the gate, nothing left to buy, or the run ending.
    Over,
    /// They released or abandoned their hold: the admission lapses unused.
    Lapsed,
}

/// Where a poll left the user.
enum Standing {
    Admitted(String),
    SoldOut,
    Wait(u64),
}

fn standing_of(body: &Value) -> Option<Standing> {
    match body["state"].as_str()? {
        "admitted" => Some(Standing::Admitted(body["admission_token"].as_str()?.to_string())),
        "sold_out" => Some(Standing::SoldOut),
        "waiting" | "awaiting_draw" => Some(Standing::Wait(body["retry_after_s"].as_u64().unwrap_or(2) * 1_000)),
        // Not joined (a lost join), or a session that ended: join (again).
        _ => None,
    }
}

impl Actor {
    /// Sends one queue request (`POST` joins, `GET` polls) to the home host,
    /// as a traced operation (the auditor reads the answer).
    async fn queue_call(&mut self, method: &'static str, event_id: &EventId) -> Option<Standing> {
        let probe = crate::world::prober::probe::Probe::user(method, format!("/v1/events/{event_id}/queue"));
        // Boxed: a waiting user's task stays small between polls (the
        // client's request future is large, and an async fn is as large as
        // its largest await).
        match Box::pin(self.request(probe)).await {
            Some((200, body)) => standing_of(&body),
            Some((409, _)) => Some(Standing::SoldOut),
            _ => None,
        }
    }

    /// Waits in `event_id`'s queue: the admission token, or `None` when sold out or given up.
    pub(crate) async fn wait_in_queue(&mut self, event_id: &EventId, run: &RoomRun) -> Option<String> {
        let mut joined = false;
        for _ in 0..MAX_POLLS {
            if Recorder::now_ms() >= run.give_up_at_ms as i64 {
                return None;
            }
            let standing = self.queue_call(if joined { "GET" } else { "POST" }, event_id).await;
            let told =
                |admitted| RoomEvent::Told { event_id: EventId::from(event_id), user: self.user.clone(), admitted };
            let wait_ms = match standing {
                Some(Standing::Admitted(token)) => {
                    self.recorder.room(told(true));
                    return Some(token);
                }
                Some(Standing::SoldOut) => {
                    self.recorder.room(told(false));
                    return None;
                }
                Some(Standing::Wait(ms)) => {
                    joined = true;
                    ms + self.rng.random_range(POLL_JITTER_MS.0..POLL_JITTER_MS.1)
                }
                None => {
                    joined = false;
                    self.rng.random_range(POLL_RETRY_MS.0..POLL_RETRY_MS.1)
                }
            };
            let now_ms = u64::try_from(Recorder::now_ms()).unwrap_or(0);
            let last_poll_ms = run.give_up_at_ms.saturating_sub(LAST_POLL_BEFORE_GIVE_UP_MS);
            if now_ms >= last_poll_ms {
                return None; // that was the last poll
            }
            tokio::time::sleep(Duration::from_millis(wait_ms.min(last_poll_ms - now_ms))).await;
        }
        None
    }

    /// Runs a waiting-room user: arrives, waits for admission, maybe tries
    /// bypasses, then looks, holds and checks out until its session ends
    /// (a purchase, a refusal by the gate) or `max_flows`.
    pub async fn run_in_room(mut self, p: UserParams, run: RoomRun, shared: SharedAdmissions) {
        self.think(p.arrival_ms).await;
        let event = self.rng.random_range(0..p.events.len());
        let bypass = self.rng.random_bool(run.bypass_share);
        let event_id = p.events[event].0.clone();
        let Some(admission) = self.wait_in_queue(&event_id, &run).await else { return };
        // The buyer's part is boxed: only admitted users pay for its (large) future.
        let turn = Box::pin(self.buy(&p, event, bypass, admission, &shared, &run)).await;
        if turn == Turn::Lapsed && self.rng.random_bool(COMEBACK_SHARE) {
            tokio::time::sleep(Duration::from_millis(run.session_ttl_ms)).await;
            let Some(admission) = self.wait_in_queue(&event_id, &run).await else { return };
            Box::pin(self.buy(&p, event, false, admission, &shared, &run)).await;
        }
    }

    /// An admitted user's part: maybe bypass attempts, then flows until the
    /// session ends. An admission is a turn to buy, so it is used even after
    /// the fault phase, until `run.give_up_at_ms`: a user who idled it away
    /// would hold up everyone behind them for a whole session lifetime.
    async fn buy(
        &mut self,
        p: &UserParams,
        event: usize,
        bypass: bool,
        admission: String,
        shared: &SharedAdmissions,
        run: &RoomRun,
    ) -> Turn {
        let buy_until_ms = run.give_up_at_ms;
        let (event_id, seats) = p.events[event].clone();
        {
            let mut pool = shared.lock().expect("shared admissions poisoned");
            if pool.len() < MAX_SHARED_ADMISSIONS {
                pool.push((self.user.clone(), event_id.clone(), admission.clone()));
            }
        }
        if bypass {
            self.try_bypasses(p, &event_id, &seats, &admission, shared).await;
        }
        self.admission = Some(admission.clone());
        for _ in 0..p.max_flows {
            if Recorder::now_ms() >= buy_until_ms as i64 {
                return Turn::Over;
            }
            self.think(p.think_ms).await;
            let Some(available) = self.browse(&event_id, false).await else { continue };
            if available.is_empty() {
                return Turn::Over; // nothing left to buy: the session expires unused
            }
            let seat_ids = self.pick_seats(p, &seats, &available);
            match self.call(ClientOp::Hold { event_id: event_id.clone(), seat_ids, admission: None }, 1).await {
                Ok(OpResult::Held { hold_token, seat_ids, .. }) => {
                    if !self.rng.random_bool(p.checkout_share) {
                        if !self.rng.random_bool(p.abandon_share) {
                            let release = ClientOp::Release { event_id: event_id.clone(), hold_token };
                            let _ = self.call(release, p.max_attempts).await;
                        }
                        return Turn::Lapsed; // released or abandoned: the session expires unused
                    }
                    let accepted = self.check_out(p, 0, &event_id, hold_token, &seat_ids).await;
                    if self.after_purchase(&event_id, accepted, bypass, run).await {
                        continue; // the order came to nothing: the session is open again
                    }
                    return Turn::Over;
                }
                Err(Some(kind)) if kind.is_admission_refusal() => return Turn::Over,
                _ => {}
            }
        }
        Turn::Over
    }

    /// After a checkout (its order polled until settled): where the purchase
    /// left the session, asked of the queue. Open again (the order came to
    /// nothing: a decline, say), the buyer goes on buying with the admission
    /// the queue answered: `true`. Ended, maybe the accepted checkout is
    /// sent again once the admission expired, and for a bypassing user the
    /// spent admission is tried on a free seat: `false`.
    async fn after_purchase(
        &mut self,
        event_id: &EventId,
        accepted: Option<ClientOp>,
        bypass: bool,
        run: &RoomRun,
    ) -> bool {
        if let Some(Standing::Admitted(admission)) = self.queue_call("GET", event_id).await {
            self.admission = Some(admission);
            return true;
        }
        if let Some(checkout) = accepted
            && self.rng.random_bool(LATE_RETRY_SHARE)
        {
            // A buyer whose answer was lost asks again once the
            // admission has expired: the order's answer, not a refusal.
            tokio::time::sleep(Duration::from_millis(run.session_ttl_ms)).await;
            let _ = self.call(checkout, 1).await;
        }
        if bypass
            && let Some(available) = self.browse(event_id, true).await
            && let Some(seat) = available.first()
        {
            // The spent admission again, on a free seat: refused, its session ended with the purchase.
            let hold = ClientOp::Hold { event_id: event_id.clone(), seat_ids: vec![seat.clone()], admission: None };
            let _ = self.call(hold, 1).await;
        }
        false
    }

    /// Holds without a token, with a forged one, with another user's, and
    /// (with two events or more) with this one on another event: each must be
    /// refused by the gate, before the store.
    async fn try_bypasses(
        &mut self,
        p: &UserParams,
        event_id: &EventId,
        seats: &[SeatId],
        admission: &str,
        shared: &SharedAdmissions,
    ) {
        let hold_on = |event: &EventId, seats: &[SeatId]| ClientOp::Hold {
            event_id: EventId::from(event),
            seat_ids: vec![seats[0].clone()],
            admission: None,
        };
        self.admission = None;
        let _: Result<_, Option<ProblemKind>> = self.call(hold_on(event_id, seats), 1).await;
        // The payload altered, the signature kept.
        let mut forged = admission.as_bytes().to_vec();
        forged[5] = if forged[5] == b'A' { b'B' } else { b'A' };
        self.admission = String::from_utf8(forged).ok();
        let _ = self.call(hold_on(event_id, seats), 1).await;
        let borrowed = {
            let pool = shared.lock().expect("shared admissions poisoned");
            pool.iter().rev().find(|(u, e, _)| *u != self.user && e == event_id).map(|(_, _, t)| t.clone())
        };
        if let Some(token) = borrowed {
            self.admission = Some(token);
            let _ = self.call(hold_on(event_id, seats), 1).await;
        }
        if let Some((other, other_seats)) = p.events.iter().find(|(e, _)| e != event_id) {
            self.admission = Some(admission.to_string());
            let _ = self.call(hold_on(other, other_seats), 1).await;
        }
        self.admission = None;
    }
}
