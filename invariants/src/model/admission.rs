//! Admission tokens and checkout sessions, as the waiting room's
//! documentation states them.
//!
//! A token is `a1.<payload>.<mac>`: base64url without padding, the MAC
//! HMAC-SHA256 over `a1.<payload>` with the admission secret, the payload
//! JSON naming the event, the user, the session, the place and the issue
//! and expiry times. On an event with a waiting room every hold and
//! checkout presents one, checked in this order, each refusal its own
//! kind: none (`admission-required`); not of that form
//! (`admission-malformed`); a MAC that does not verify (`admission-forged`);
//! a payload that is not the claims (`admission-malformed`); another event
//! (`admission-other-event`); another user (`admission-other-user`); past
//! its expiry by the serving host's clock (`admission-expired`); a session
//! that is not the user's open one (`admission-session-ended`). A hold
//! needs an open session; a checkout also passes on the session its own
//! purchase ended, when it is that purchase's retry (the same hold and
//! idempotency key), even past the token's expiry; any other checkout
//! after a purchase is refused.
//!
//! Sessions come from the rooms' trace: admitted, ended by a purchase,
//! reopened when that purchase's order failed, expired by an admission pass
//! whose clock has passed them, and dropped when their user joins again (a
//! new arrival). A release ends nothing.

use crate::trace::{RoomEvent, WorldFact};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use booking::admission::room::SessionEnd;
use booking::admission::waiting_room::PUBLIC_TIER;
use booking::model::{EventId, HoldToken, SessionId, UserId};
use booking::problem_kind::ProblemKind;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;
use std::collections::{BTreeMap, BTreeSet};

/// What a token claims.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Claims {
    /// The event.
    pub event_id: EventId,
    /// The user.
    pub user_id: UserId,
    /// The session.
    pub session_id: SessionId,
    /// When it expires, ms (service clock).
    pub expires_at_ms: i64,
}

/// What a hold or a checkout uses its admission for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Use<'a> {
    /// A hold: needs an open session.
    Hold,
    /// A checkout of `hold_token` under `key`: an open session, or the one
    /// a purchase of the same hold under the same key ended.
    Checkout {
        /// The hold.
        hold_token: HoldToken,
        /// The idempotency key.
        key: &'a str,
    },
}

/// One user's session on one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub(crate) id: SessionId,
    pub(crate) expires_at_ms: i64,
    pub(crate) ended: Option<SessionEnd>,
    /// The last checkout the session made: its hold and key.
    purchase: Option<(HoldToken, String)>,
}

/// An event's room as opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Room {
    /// The fairness rule.
    pub policy: booking::admission::room::Policy,
    /// Sessions open at once at most.
    pub target_active_sessions: u32,
    /// When the sale opens, service-clock ms.
    pub opens_at_ms: i64,
    /// An admission's lifetime, ms.
    pub session_ttl_ms: i64,
    /// Whether the event sold out (nobody else is admitted or may join).
    pub sold_out: bool,
    /// Who joined.
    pub joined: BTreeSet<UserId>,
    /// The lottery's seed (hex).
    pub seed: String,
    /// Whether the sale opened (a lottery's draw happened).
    pub drawn: bool,
    /// The joins, in arrival order.
    pub joins: Vec<crate::model::queue::Join>,
    /// The admissions, in order.
    pub admitted: Vec<UserId>,
    /// The same users as `admitted`, for lookups.
    pub admitted_users: BTreeSet<UserId>,
    /// Each joiner's place in the policy's order (the first join's).
    pub keys: BTreeMap<UserId, crate::model::queue::LineKey>,
    /// The places of those joined and not yet admitted.
    pub line: crate::model::ranked_line::RankedLine<crate::model::queue::LineKey>,
}

impl Room {
    /// The room an `Opened` event opens.
    ///
    /// Precondition: `e` is [`RoomEvent::Opened`] (asserted).
    fn opened(e: &RoomEvent) -> Room {
        let RoomEvent::Opened { policy, target_active_sessions, opens_at_ms, session_ttl_ms, seed, .. } = e else {
            panic!("Room::opened of {e:?}");
        };
        Room {
            policy: *policy,
            target_active_sessions: *target_active_sessions,
            opens_at_ms: *opens_at_ms,
            session_ttl_ms: *session_ttl_ms,
            sold_out: false,
            joined: BTreeSet::new(),
            seed: seed.clone(),
            drawn: false,
            joins: Vec::new(),
            admitted: Vec::new(),
            admitted_users: BTreeSet::new(),
            keys: BTreeMap::new(),
            line: crate::model::ranked_line::RankedLine::new(),
        }
    }

    /// `user` joins (at `now_ms`, service clock): in the line at their
    /// policy's place, unless they joined or were admitted before; a
    /// `rejoin` (their session ended) is a new arrival.
    fn join(&mut self, user: &UserId, tier: u8, now_ms: i64, rejoin: bool) {
        self.drawn |= now_ms >= self.opens_at_ms;
        let before_draw = self.policy == booking::admission::room::Policy::Lottery && !self.drawn;
        let join = crate::model::queue::Join { user: user.clone(), tier, before_draw };
        let key = crate::model::queue::line_key(self.policy, &self.seed, &join, self.joins.len());
        if rejoin || (!self.keys.contains_key(user) && !self.admitted_users.contains(user)) {
            self.keys.insert(user.clone(), key);
            self.line.insert(key);
        }
        self.joins.push(join);
        self.joined.insert(user.clone());
    }
}

/// The settings the world asked a room for: (policy, target, opening, session lifetime).
pub type Asked = (booking::admission::room::Policy, u32, i64, i64);

/// The tier a user waits in under `policy`: their credential's
/// (`credential`) in a priority room, the public's without one; 0 in any other.
pub fn granted_tier(policy: booking::admission::room::Policy, credential: Option<u8>) -> u8 {
    match policy {
        booking::admission::room::Policy::Priority => credential.unwrap_or(PUBLIC_TIER),
        _ => 0,
    }
}

/// The rooms and sessions the trace has shown so far.
#[derive(Debug, Default)]
pub struct Admissions {
    /// The tiers the world's credentials grant (absent: the public).
    pub(crate) credentials: BTreeMap<UserId, u8>,
    /// The rooms the world asked for, by event.
    asked: BTreeMap<EventId, Asked>,
    pub(crate) rooms: BTreeMap<EventId, Room>,
    pub(crate) sessions: BTreeMap<(EventId, UserId), Session>,
    /// Admissions seen since each room's last pass.
    pub(crate) this_pass: BTreeMap<EventId, u32>,
}

/// Reads a token's claims, checking its form and MAC with `secret`.
pub fn read_token(token: &str, secret: &[u8]) -> Result<Claims, ProblemKind> {
    let malformed = ProblemKind::AdmissionMalformed;
    let (signed, tag) = token.rsplit_once('.').ok_or(malformed)?;
    let payload = signed.strip_prefix("a1.").ok_or(malformed)?;
    let tag = B64.decode(tag).map_err(|_| malformed)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(signed.as_bytes());
    mac.verify_slice(&tag).map_err(|_| ProblemKind::AdmissionForged)?;
    let bytes = B64.decode(payload).map_err(|_| malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| malformed)
}

impl Admissions {
    /// Takes in what the world made: the credentials it issued and the rooms
    /// it asked for are the truth the rooms are held to, whatever the
    /// service says it assigned or opened.
    pub fn world(&mut self, fact: &WorldFact) {
        match fact {
            WorldFact::Credential { user, tier } => {
                self.credentials.insert(user.clone(), *tier);
            }
            WorldFact::RoomAsked { event_id, policy, target_active_sessions, opens_at_ms, session_ttl_ms } => {
                let asked = (*policy, *target_active_sessions, *opens_at_ms, *session_ttl_ms);
                self.asked.insert(event_id.clone(), asked);
            }
            WorldFact::Prober { .. } | WorldFact::Misuse { .. } | WorldFact::WebhookRefused { .. } => {}
        }
    }

    /// The tier `user` waits in under `policy`: their credential's in a
    /// priority room (the public's without one), 0 in any other.
    pub fn tier_of(&self, policy: booking::admission::room::Policy, user: &UserId) -> u8 {
        granted_tier(policy, self.credentials.get(user).copied())
    }

    /// Takes in what the rooms did.
    pub fn observe(&mut self, e: &RoomEvent) {
        match e {
            RoomEvent::Opened { event_id, .. } => {
                let mut room = Room::opened(e);
                if let Some(&(policy, target, opens_at_ms, ttl_ms)) = self.asked.get(event_id) {
                    (room.policy, room.target_active_sessions) = (policy, target);
                    (room.opens_at_ms, room.session_ttl_ms) = (opens_at_ms, ttl_ms);
                }
                self.rooms.insert(event_id.clone(), room);
            }
            RoomEvent::Joined { event_id, user, now_ms, .. } => {
                // A join by a user who had a session is a new arrival (the rooms join them only once it is over).
                let rejoin = self.sessions.remove(&(event_id.clone(), user.clone())).is_some();
                let tier = self.rooms.get(event_id).map(|r| self.tier_of(r.policy, user));
                if let (Some(room), Some(tier)) = (self.rooms.get_mut(event_id), tier) {
                    room.join(user, tier, *now_ms, rejoin);
                }
            }
            RoomEvent::Reopened { event_id, user, session_id } => {
                if let Some(s) = self.sessions.get_mut(&(event_id.clone(), user.clone()))
                    && s.id == *session_id
                {
                    s.ended = None;
                    s.purchase = None;
                }
            }
            RoomEvent::SoldOut { event_id } => {
                if let Some(room) = self.rooms.get_mut(event_id) {
                    room.sold_out = true;
                }
            }
            RoomEvent::Admitted { event_id, user, session_id, expires_at_ms } => {
                if let Some(room) = self.rooms.get_mut(event_id) {
                    room.admitted.push(user.clone());
                    room.admitted_users.insert(user.clone());
                    if let Some(key) = room.keys.get(user) {
                        room.line.remove(key);
                    }
                }
                *self.this_pass.entry(event_id.clone()).or_default() += 1;
                let s = Session { id: *session_id, expires_at_ms: *expires_at_ms, ended: None, purchase: None };
                self.sessions.insert((event_id.clone(), user.clone()), s);
            }
            RoomEvent::Ended { event_id, user, session_id, how } => {
                if let Some(s) = self.sessions.get_mut(&(event_id.clone(), user.clone()))
                    && s.id == *session_id
                    && s.ended.is_none()
                {
                    s.ended = Some(*how);
                }
            }
            RoomEvent::Pass { event_id, now_ms, .. } => self.pass(event_id, *now_ms),
            RoomEvent::Told { .. } | RoomEvent::LawRan { .. } | RoomEvent::LawLearnt { .. } => {}
        }
    }

    /// An admission pass on `event_id` at the serving host's `now_ms`: a
    /// lottery is drawn once the sale opened; sessions past their expiry end.
    fn pass(&mut self, event_id: &EventId, now_ms: i64) {
        self.this_pass.remove(event_id);
        if let Some(room) = self.rooms.get_mut(event_id) {
            room.drawn |= now_ms >= room.opens_at_ms;
        }
        for ((ev, _), s) in self.sessions.iter_mut() {
            if ev == event_id && s.ended.is_none() && s.expires_at_ms <= now_ms {
                s.ended = Some(SessionEnd::Expired);
            }
        }
    }

    /// A checkout of `hold_token` under `key` by `user` opened an order on
    /// `event_id` (the purchase that ends the session).
    pub fn purchased(&mut self, event_id: &EventId, user: &UserId, hold_token: HoldToken, key: &str) {
        if let Some(s) = self.sessions.get_mut(&(event_id.clone(), user.clone()))
            && s.ended.is_none()
        {
            s.purchase = Some((hold_token, key.to_string()));
        }
    }

    /// Whether `user`'s session on `event_id` was ended by the checkout of
    /// `hold_token` under `key`: the order the waiting room reads (before
    /// answering the user) to learn whether that purchase failed.
    pub fn ended_by(&self, event_id: &EventId, user: &UserId, hold_token: HoldToken, key: &str) -> bool {
        self.sessions.get(&(event_id.clone(), user.clone())).is_some_and(|s| {
            matches!(s.ended, Some(SessionEnd::Purchased { .. }))
                && s.purchase.as_ref().is_some_and(|(t, k)| *t == hold_token && k == key)
        })
    }

    /// Whether `event_id` has a waiting room.
    pub fn has_room(&self, event_id: &EventId) -> bool {
        self.rooms.contains_key(event_id)
    }

    /// What the rooms' admissions break of the rules, judged at `now_ms`
    /// (store-clock ms) for `e`: nobody admitted before the sale opens or once it sold out.
    pub fn judge(&self, e: &RoomEvent, now_ms: i64) -> Option<String> {
        if let RoomEvent::Pass { .. } = e {
            return self.judge_pass(e);
        }
        let RoomEvent::Admitted { event_id, user, .. } = e else { return None };
        let room = self.rooms.get(event_id)?;
        if room.sold_out {
            return Some(format!("{user} was admitted after {event_id} sold out"));
        }
        (now_ms < room.opens_at_ms).then(|| format!("{user} was admitted before {event_id}'s sale opened"))
    }

    /// Each room's first admission out of its policy's order: (event, what).
    pub fn out_of_order(&self) -> Vec<(EventId, String)> {
        let mut out = Vec::new();
        for (event_id, room) in &self.rooms {
            let order = crate::model::queue::policy_order(room.policy, &room.seed, &room.joins);
            if let Some((i, want)) = crate::model::queue::first_out_of_order(&order, &room.admitted) {
                let want = want.map_or("nobody", UserId::as_str);
                out.push((
                    event_id.clone(),
                    format!(
                        "admission #{} went to {}; the {:?} policy has {want} there",
                        i + 1,
                        room.admitted[i],
                        room.policy
                    ),
                ));
            }
        }
        out
    }

    /// `event_id`'s room, if it has one.
    pub fn room(&self, event_id: &EventId) -> Option<&Room> {
        self.rooms.get(event_id)
    }

    /// The gate's answer for `user` presenting `token` on `event_id` at
    /// `host_now_ms` (the serving host's clock): the session admitted, or
    /// the refusal. Precondition: the event has a room.
    pub fn gate(
        &self,
        secret: &[u8],
        event_id: &EventId,
        user: &UserId,
        token: Option<&str>,
        what: &Use<'_>,
        host_now_ms: i64,
    ) -> Result<SessionId, ProblemKind> {
        let claims = read_token(token.ok_or(ProblemKind::AdmissionRequired)?, secret)?;
        if claims.event_id != *event_id {
            return Err(ProblemKind::AdmissionOtherEvent);
        }
        if claims.user_id != *user {
            return Err(ProblemKind::AdmissionOtherUser);
        }
        let session = self.sessions.get(&(event_id.clone(), user.clone()));
        let session = session.filter(|s| s.id == claims.session_id);
        let retry = session.is_some_and(|s| match (&s.ended, what) {
            (Some(SessionEnd::Purchased { .. }), Use::Checkout { hold_token, key }) => {
                s.purchase.as_ref().is_some_and(|(t, k)| t == hold_token && k == key)
            }
            _ => false,
        });
        if claims.expires_at_ms <= host_now_ms && !retry {
            return Err(ProblemKind::AdmissionExpired);
        }
        let open = session.is_some_and(|s| s.ended.is_none());
        if open || retry { Ok(claims.session_id) } else { Err(ProblemKind::AdmissionSessionEnded) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use booking::model::OrderId;

    fn token(secret: &[u8], claims: &str) -> String {
        let signed = format!("a1.{}", B64.encode(claims));
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
        mac.update(signed.as_bytes());
        format!("{signed}.{}", B64.encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn each_bad_token_gets_its_own_refusal_in_order() {
        let secret = b"0123456789abcdef0123";
        let sid = SessionId::from_u128(5);
        let claims = format!(
            r#"{{"event_id":"ev","user_id":"u","session_id":"{sid}","position":1,"issued_at_ms":0,"expires_at_ms":100}}"#
        );
        let good = token(secret, &claims);
        let mut a = Admissions::default();
        a.observe(&RoomEvent::Opened {
            event_id: "ev".into(),
            policy: booking::admission::room::Policy::Fifo,
            target_active_sessions: 1,
            opens_at_ms: 0,
            session_ttl_ms: 100,
            seed: String::new(),
        });
        a.observe(&RoomEvent::Admitted {
            event_id: "ev".into(),
            user: "u".into(),
            session_id: sid,
            expires_at_ms: 100,
        });
        let (ev, ev2) = (EventId::from("ev"), EventId::from("ev2"));
        let (u, v) = (UserId::from("u"), UserId::from("v"));
        let gate = |a: &Admissions, t: Option<&str>, ev: &EventId, u: &UserId, now: i64, what: Use| {
            a.gate(secret, ev, u, t, &what, now)
        };
        let retry = || Use::Checkout { hold_token: HoldToken::from_u128(1), key: "k" };
        let other = || Use::Checkout { hold_token: HoldToken::from_u128(1), key: "k2" };
        assert_eq!(gate(&a, Some(&good), &ev, &u, 99, Use::Hold), Ok(sid));
        assert_eq!(gate(&a, None, &ev, &u, 0, Use::Hold), Err(ProblemKind::AdmissionRequired));
        assert_eq!(gate(&a, Some("nope"), &ev, &u, 0, Use::Hold), Err(ProblemKind::AdmissionMalformed));
        assert_eq!(
            gate(&a, Some(&token(b"another-secret-000000", &claims)), &ev, &u, 0, Use::Hold),
            Err(ProblemKind::AdmissionForged)
        );
        assert_eq!(gate(&a, Some(&token(secret, "{}")), &ev, &u, 0, Use::Hold), Err(ProblemKind::AdmissionMalformed));
        assert_eq!(gate(&a, Some(&good), &ev2, &u, 0, Use::Hold), Err(ProblemKind::AdmissionOtherEvent));
        assert_eq!(gate(&a, Some(&good), &ev, &v, 0, Use::Hold), Err(ProblemKind::AdmissionOtherUser));
        assert_eq!(gate(&a, Some(&good), &ev, &u, 100, Use::Hold), Err(ProblemKind::AdmissionExpired));
        a.purchased(&ev, &u, HoldToken::from_u128(1), "k");
        a.observe(&RoomEvent::Ended {
            event_id: "ev".into(),
            user: "u".into(),
            session_id: sid,
            how: SessionEnd::Purchased { order_id: OrderId::from_u128(1), key_id: uuid::Uuid::from_u128(2) },
        });
        assert_eq!(gate(&a, Some(&good), &ev, &u, 0, Use::Hold), Err(ProblemKind::AdmissionSessionEnded));
        assert_eq!(gate(&a, Some(&good), &ev, &u, 0, retry()), Ok(sid), "a purchase's retry");
        assert_eq!(
            gate(&a, Some(&good), &ev, &u, 0, other()),
            Err(ProblemKind::AdmissionSessionEnded),
            "another checkout"
        );
        assert_eq!(gate(&a, Some(&good), &ev, &u, 100, retry()), Ok(sid), "a purchase's retry past the expiry");
        assert_eq!(gate(&a, Some(&good), &ev, &u, 100, other()), Err(ProblemKind::AdmissionExpired));
        assert_eq!(gate(&a, Some(&good), &ev, &u, 100, Use::Hold), Err(ProblemKind::AdmissionExpired));
    }
}
