//! The rare situations the workload makes on purpose, counted from the
//! trace, so a scenario can require them (`expect.must_happen`) and a
//! workload change that stops making them turns CI red:
//!
//! - `unsorted-hold-granted`: a multi-seat hold sent in click order (not the
//!   seats' own) was granted;
//! - `idempotency-key-shared`: a checkout was accepted under a key another
//!   user's accepted checkout used before (a key is the sender's own);
//! - `cap-per-event`: a hold was granted while its holder's live seats over
//!   every event, this hold's included, passed the cap (only a cap counted
//!   per event grants it: the holder is near the cap in two events);
//! - `member-overtook`: a member was admitted while a public user who had
//!   joined the same room earlier still waited (tiers disagreeing with
//!   arrival order; the tier is the world's credential's, not the service's word);
//! - `session-reopened`: a room buyer told its order failed then asked the
//!   queue and was told it is admitted again (a purchase that came to
//!   nothing gives the session back).

use crate::paths::{Path, PathCounts};
use crate::store_call::StoreCall;
use crate::trace::{ClientOp, OpResult, RoomEvent, TraceEvent, TraceKind, WorldFact};
use booking::model::{HoldToken, OrderStatus};
use std::collections::{BTreeMap, BTreeSet};

/// Adds the rare situations `trace` shows to `out`.
pub(crate) fn count_rare(trace: &[TraceEvent], out: &mut PathCounts) {
    let mut w = RareWalk::default();
    for e in trace {
        match &e.kind {
            TraceKind::World(WorldFact::Credential { user, .. }) => {
                w.members.insert(user);
            }
            TraceKind::Invoke { op_id, client, op, .. } => w.invoked(*op_id, client, op),
            TraceKind::Ok { op_id, result, .. } => w.ok(*op_id, result),
            TraceKind::Fail { op_id, .. } | TraceKind::Unknown { op_id, .. } => {
                w.open.remove(op_id);
            }
            TraceKind::Store { store_now_ms, call, .. } => w.store(*store_now_ms, call),
            TraceKind::Room(RoomEvent::Joined { event_id, user, .. }) => w.joined(event_id, user, e.seq),
            TraceKind::Room(RoomEvent::Admitted { event_id, user, .. }) => w.admitted(event_id, user),
            _ => {}
        }
    }
    for (path, n) in w.out {
        *out.entry(path).or_insert(0) += n;
    }
}

/// A live hold: its event, holder, seat count and deadline (store clock).
type LiveHold<'a> = (&'a str, &'a str, usize, i64);

/// What [`count_rare`] keeps while it walks.
#[derive(Default)]
struct RareWalk<'a> {
    out: BTreeMap<Path, u64>,
    /// Users the world issued a member's credential.
    members: BTreeSet<&'a str>,
    /// Open holds sent unsorted, and open checkouts: op id -> (client, op).
    open: BTreeMap<u64, (&'a str, &'a ClientOp)>,
    /// Each accepted idempotency key's first sender.
    keys: BTreeMap<&'a str, &'a str>,
    /// Granted holds not released, by token.
    live: BTreeMap<HoldToken, LiveHold<'a>>,
    /// Per room, those waiting: user -> the seq of their join.
    waiting: BTreeMap<&'a str, BTreeMap<&'a str, u64>>,
    /// Users told their order failed, not yet answered by the queue since.
    failed_buyers: BTreeSet<&'a str>,
}

impl<'a> RareWalk<'a> {
    fn bump(&mut self, p: Path) {
        *self.out.entry(p).or_insert(0) += 1;
    }

    fn invoked(&mut self, op_id: u64, client: &'a str, op: &'a ClientOp) {
        let keep = match op {
            ClientOp::Hold { seat_ids, .. } => !seat_ids.is_sorted(),
            ClientOp::Checkout { .. } | ClientOp::OrderStatus { .. } => true,
            ClientOp::Request { method, path, .. } => {
                method == "GET" && path.ends_with("/queue") && self.failed_buyers.contains(client)
            }
            _ => false,
        };
        if keep {
            self.open.insert(op_id, (client, op));
        }
    }

    fn ok(&mut self, op_id: u64, result: &'a OpResult) {
        let Some((client, op)) = self.open.remove(&op_id) else { return };
        match (op, result) {
            (ClientOp::Hold { .. }, OpResult::Held { .. }) => self.bump(Path::UnsortedHoldGranted),
            (ClientOp::Checkout { idempotency_key, .. }, OpResult::CheckedOut { .. }) => {
                let first = *self.keys.entry(idempotency_key).or_insert(client);
                if first != client {
                    self.bump(Path::IdempotencyKeyShared);
                }
            }
            (ClientOp::OrderStatus { .. }, OpResult::OrderStatus { status: OrderStatus::Failed, .. }) => {
                self.failed_buyers.insert(client);
            }
            (ClientOp::Request { .. }, OpResult::Answered { body: Some(body), .. })
                if self.failed_buyers.remove(client) =>
            {
                let state = serde_json::from_str::<serde_json::Value>(body).ok().map(|b| b["state"].clone());
                if state.is_some_and(|s| s == "admitted") {
                    self.bump(Path::SessionReopened);
                }
            }
            _ => {}
        }
    }

    /// A store call at `now_ms`: grants and releases move the live holds.
    fn store(&mut self, now_ms: i64, call: &'a StoreCall) {
        match call {
            StoreCall::AcquireHold { req, answer: Ok(g) } => {
                let holder = req.holder_id.as_str();
                self.live.retain(|_, h| h.3 > now_ms);
                let held: usize =
                    self.live.values().filter(|h| h.1 == holder).map(|h| h.2).sum::<usize>() + g.seats.len();
                if req.max_held_seats.is_some_and(|cap| held > cap as usize) {
                    self.bump(Path::CapPerEvent);
                }
                self.live.insert(g.hold_token, (req.event_id.as_str(), holder, g.seats.len(), g.expires_at_ms));
            }
            StoreCall::ReleaseHold { req, answer: Ok(_) } => {
                self.live.remove(&req.hold_token);
            }
            _ => {}
        }
    }

    fn joined(&mut self, event_id: &'a str, user: &'a str, seq: u64) {
        self.waiting.entry(event_id).or_default().entry(user).or_insert(seq);
    }

    /// `user` admitted on `event_id`: a member ahead of an earlier public joiner overtook.
    fn admitted(&mut self, event_id: &'a str, user: &'a str) {
        let Some(room) = self.waiting.get_mut(event_id) else { return };
        let Some(joined_at) = room.remove(user) else { return };
        let members = &self.members;
        let overtook = members.contains(user) && room.iter().any(|(u, &at)| at < joined_at && !members.contains(u));
        if overtook {
            self.bump(Path::MemberOvertook);
        }
    }
}
