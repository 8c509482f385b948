//! What the waiting room's queue answers must say, from the rooms' trace:
//!
//! - where a user stands (`GET`/`POST …/queue`): `not_joined`;
//!   `awaiting_draw` (joined a lottery before its draw); `waiting` at a
//!   place one more than the users ahead of them in the policy's order not
//!   yet admitted; `admitted`, with an admission token naming the event, the
//!   user, the session and its expiry; `session_ended` (ended, or past its
//!   expiry by the serving host's clock); `sold_out`;
//! - a waiting user's hints: with an admission rate `r` > 0, the expected
//!   wait is `⌈place / r⌉` seconds plus the whole seconds left until the
//!   sale opens, and the expected admission time the answer's moment plus
//!   that wait (with no rate, neither is given); an admitted user's
//!   session expiry is the session's;
//! - when to ask again (`retry_after_s`, within the poll bounds): a lottery
//!   joiner before the draw, the whole seconds until the sale opens; a
//!   waiting user, a quarter of the expected wait (with no rate, of the
//!   larger of the seconds until opening and the place); nobody else is
//!   told one;
//! - a lottery's record: the hex SHA-256 of the room's seed, and after the
//!   draw the seed and who joined before it, in arrival order;
//! - an admission pass: sessions past their expiry end first; then it admits
//!   `min(asked, target − open sessions, waiting)` users (none before the sale
//!   opens or once it sold out); its counts of open sessions and waiting
//!   users are the rooms'.

use super::admission::{Admissions, read_token};
use crate::trace::RoomEvent;
use booking::admission::room::Policy;
use booking::model::{EventId, UserId};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Where a user stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Never joined.
    NotJoined,
    /// Joined a lottery before its draw.
    AwaitingDraw,
    /// Waiting at this place (1: next).
    Waiting(u64),
    /// Admitted, the session open: its id and expiry.
    Admitted(booking::model::SessionId, i64),
    /// Admitted, the session over.
    SessionEnded,
    /// The sale sold out before their turn.
    SoldOut,
}

impl Admissions {
    /// Where `user` stands on `event_id` at `host_now_ms` (the serving host's
    /// clock), `None` when the event has no room.
    pub fn standing(&self, event_id: &EventId, user: &UserId, host_now_ms: i64) -> Option<Standing> {
        let room = self.rooms.get(event_id)?;
        if let Some(s) = self.sessions.get(&(event_id.clone(), user.clone())) {
            let over = s.ended.is_some() || s.expires_at_ms <= host_now_ms;
            return Some(if over { Standing::SessionEnded } else { Standing::Admitted(s.id, s.expires_at_ms) });
        }
        let Some(key) = room.keys.get(user) else {
            return Some(if room.sold_out { Standing::SoldOut } else { Standing::NotJoined });
        };
        // A lottery's first round is those who joined before the draw.
        let before_draw = key.0 == 0;
        Some(if room.sold_out {
            Standing::SoldOut
        } else if room.policy == Policy::Lottery && before_draw && !room.drawn {
            Standing::AwaitingDraw
        } else {
            // The line is sorted in the policy's order (`queue::line_key`).
            let ahead = room.line.ahead_of(key);
            Standing::Waiting(ahead as u64 + 1)
        })
    }

    /// Whether a queue answer's `body` states `want`, for `user` on `event_id`.
    pub fn states(&self, secret: &[u8], event_id: &EventId, user: &UserId, body: &Value, want: &Standing) -> bool {
        let state = body["state"].as_str().unwrap_or("");
        match want {
            Standing::NotJoined => state == "not_joined",
            Standing::AwaitingDraw => state == "awaiting_draw",
            Standing::Waiting(place) => state == "waiting" && body["position"].as_u64() == Some(*place),
            Standing::SessionEnded => state == "session_ended" && body["admission_token"].is_null(),
            Standing::SoldOut => state == "sold_out",
            Standing::Admitted(session, expires) => {
                let claims = body["admission_token"].as_str().and_then(|t| read_token(t, secret).ok());
                state == "admitted"
                    && claims.is_some_and(|c| {
                        c.event_id == *event_id
                            && c.user_id == *user
                            && c.session_id == *session
                            && c.expires_at_ms == *expires
                    })
            }
        }
    }

    /// How many `event_id`'s room has admitted so far.
    pub fn admitted_count(&self, event_id: &EventId) -> usize {
        self.rooms.get(event_id).map_or(0, |r| r.admitted.len())
    }

    /// Whether `event_id`'s lottery has been drawn.
    pub fn drawn(&self, event_id: &EventId) -> bool {
        self.rooms.get(event_id).is_some_and(|r| r.drawn)
    }

    /// Whether a lottery record's `body` is `event_id`'s: its commitment, and
    /// the seed and joiners once drawn (`drawn`: whether it was when the record was read).
    pub fn lottery_states(&self, event_id: &EventId, body: &Value, drawn: bool) -> bool {
        let Some(room) = self.rooms.get(event_id) else { return false };
        let seed = hex::decode(&room.seed).unwrap_or_default();
        let commitment = hex::encode(Sha256::digest(&seed));
        if body["commitment"].as_str() != Some(commitment.as_str()) {
            return false;
        }
        if !drawn {
            return body["seed"].is_null() && body["joiners"].is_null();
        }
        let joiners: Vec<&str> = room.joins.iter().filter(|j| j.before_draw).map(|j| j.user.as_str()).collect();
        let shown: Option<Vec<&str>> = body["joiners"].as_array().map(|a| a.iter().filter_map(Value::as_str).collect());
        body["seed"].as_str() == Some(room.seed.as_str()) && shown == Some(joiners)
    }

    /// An admission pass against the rule (see the module doc).
    pub(crate) fn judge_pass(&self, e: &RoomEvent) -> Option<String> {
        let RoomEvent::Pass { event_id, asked, admitted, active, waiting, now_ms, .. } = e else { return None };
        let room = self.rooms.get(event_id)?;
        let open = self
            .sessions
            .iter()
            .filter(|((ev, _), s)| ev == event_id && s.ended.is_none() && s.expires_at_ms > *now_ms)
            .count() as u32;
        let left = room.line.len() as u64;
        let seen = self.this_pass.get(event_id).copied().unwrap_or(0);
        let may = !room.sold_out && *now_ms >= room.opens_at_ms;
        let before = open.saturating_sub(seen);
        let due = if may {
            (*asked).min(room.target_active_sessions.saturating_sub(before)).min((left + u64::from(seen)) as u32)
        } else {
            0
        };
        if (*active, *waiting, *admitted) != (open, left, seen) || seen != due {
            return Some(format!(
                "a pass of {event_id} asked for {asked}: it admitted {admitted} ({seen} traced), left {active} open and {waiting} waiting; the rooms' rule gives {due} admitted, {open} open, {left} waiting"
            ));
        }
        None
    }

    /// Whether a queue answer's `retry_after_s` (see the module doc) agrees
    /// with a serving moment in `[from_ms, to_ms]`, within the poll bounds `(min_s, max_s)`.
    pub fn retry_agrees(body: &Value, from_ms: i64, to_ms: i64, (min_s, max_s): (u64, u64)) -> bool {
        let told = body["retry_after_s"].as_u64();
        let clamp = |s: u64| s.clamp(min_s, max_s);
        let opens_at_ms = body["opens_at"].as_str().and_then(super::rfc3339_ms);
        let until_open_s = |now_ms: i64| opens_at_ms.map_or(0, |o| (o - now_ms).max(0) as u64 / 1000);
        // The rule at the latest and the earliest serving moment: the answer lies between.
        let within =
            |rule: &dyn Fn(i64) -> u64| told.is_some_and(|t| (clamp(rule(to_ms))..=clamp(rule(from_ms))).contains(&t));
        match body["state"].as_str() {
            Some("awaiting_draw") => within(&until_open_s),
            Some("waiting") => match (body["expected_wait_s"].as_u64(), body["position"].as_u64()) {
                (Some(wait_s), _) => told == Some(clamp(wait_s / 4)),
                (None, Some(place)) => within(&|now_ms| until_open_s(now_ms).max(place) / 4),
                (None, None) => false,
            },
            _ => body["retry_after_s"].is_null(),
        }
    }

    /// Whether a waiting answer's hints (see the module doc) agree with a
    /// serving moment in `[from_ms, to_ms]` (the serving host's clock).
    pub fn hints_agree(body: &Value, from_ms: i64, to_ms: i64) -> bool {
        let Some(place) = body["position"].as_u64() else { return true };
        let rate = body["admission_rate_per_s"].as_f64().unwrap_or(0.0);
        let Some(opens_at_ms) = body["opens_at"].as_str().and_then(super::rfc3339_ms) else { return false };
        if rate <= 0.0 {
            return body["expected_wait_s"].is_null() && body["expected_admission_at"].is_null();
        }
        let Some(wait_s) = body["expected_wait_s"].as_u64() else { return false };
        let until_open_s = |now_ms: i64| (opens_at_ms - now_ms).max(0) as u64 / 1000;
        let queue_s = (place as f64 / rate).ceil() as u64;
        let wait_ok = (queue_s + until_open_s(to_ms)..=queue_s + until_open_s(from_ms)).contains(&wait_s);
        let at = body["expected_admission_at"].as_str().and_then(super::rfc3339_ms);
        let wait_ms = wait_s as i64 * 1000;
        wait_ok && at.is_some_and(|at| (from_ms + wait_ms..=to_ms + wait_ms).contains(&at))
    }
}
