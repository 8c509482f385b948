//! A lost room rebuilt from the authority's record ([`RoomJournal`]): the
//! rule that decides who stands where, free of I/O.
//!
//! The rule (docs/WAITING_ROOM.md, "Waiting rooms survive their store"):
//! - sessions the authority recorded come back as they were: an open one
//!   stays open until its expiry (its token keeps admitting), a purchase
//!   stays a purchase, one past its expiry is expired;
//! - everyone else who joined waits again in their original order: by tier,
//!   then by the time and sequence of their latest recorded join (FIFO and
//!   priority rooms keep their lines);
//! - a lottery keeps its pre-opening joiners in arrival order (by first
//!   join) and, once open, redraws them from the same seed, which gives the
//!   same order; later arrivals follow them by join order;
//! - a sold-out room stays sold out.
//!
//! What can be lost: a join or an admission whose authority record failed
//! (the join was answered with an error, so the user joins again; an
//! admission not recorded is waiting again at its old place), the admission
//! law's rate (it restarts from its prior) and the order of two joins on
//! different instances within the same millisecond.

use super::Policy;
use super::{RoomSpec, Session, SessionEnd};
use crate::admission::queue::lottery_order;
use crate::model::UserId;
use std::collections::BTreeSet;

/// One user's record in an event's room, as the authority keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalUser {
    /// The user.
    pub user_id: UserId,
    /// Their tier (priority rooms; 0 otherwise).
    pub tier: u8,
    /// Their first join, ms, and its sequence number (the lottery's arrival order).
    pub first_joined: (i64, i64),
    /// Their latest join (a new arrival after a session ended), ms, and its sequence number.
    pub joined: (i64, i64),
    /// Their session since the latest join, if admitted, and its recorded purchase.
    pub session: Option<(Session, Option<SessionEnd>)>,
}

/// Everything the authority keeps about one event's room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomJournal {
    /// The room's configuration.
    pub spec: RoomSpec,
    /// Whether the event sold out.
    pub sold_out: bool,
    /// Every user who joined, in any order.
    pub users: Vec<JournalUser>,
}

/// A room's state to rebuild, in the shape both stores keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoomImage {
    /// The configuration.
    pub spec: RoomSpec,
    /// The lottery's seed (the service's, as at opening).
    pub seed: [u8; 32],
    /// Whether the event sold out.
    pub sold_out: bool,
    /// Whether the lottery is drawn (always false for other policies).
    pub drawn: bool,
    /// The lottery's pre-opening joiners in arrival order (empty for other policies).
    pub pre_draw: Vec<UserId>,
    /// Users admitted since their latest join, with their tier in the queue
    /// (lottery: 0 drawn, 1 later arrival), session and end.
    pub sessions: Vec<(UserId, u8, Session, Option<SessionEnd>)>,
    /// Users waiting, in admission order, with their tier in the queue
    /// (empty for an undrawn lottery: its joiners are `pre_draw`).
    pub waiting: Vec<(UserId, u8)>,
}

impl RoomImage {
    /// The image of `journal` at `now_ms`, the lottery seeded with `seed`.
    pub fn of(journal: &RoomJournal, seed: [u8; 32], now_ms: i64) -> Self {
        let spec = journal.spec;
        let lottery = spec.policy == Policy::Lottery;
        let mut users: Vec<&JournalUser> = journal.users.iter().collect();
        users.sort_by_key(|u| (u.first_joined, u.user_id.clone()));
        let pre_draw: Vec<UserId> = if lottery {
            users.iter().filter(|u| u.first_joined.0 < spec.opens_at_ms).map(|u| u.user_id.clone()).collect()
        } else {
            Vec::new()
        };
        let drawn = lottery && now_ms >= spec.opens_at_ms;
        // A lottery user is in the draw's tier while their latest join is their pre-opening one.
        let drawn_tier: BTreeSet<&str> = users
            .iter()
            .filter(|u| lottery && u.first_joined.0 < spec.opens_at_ms && u.joined == u.first_joined)
            .map(|u| u.user_id.as_str())
            .collect();
        let tier_of = |u: &JournalUser| match spec.policy {
            Policy::Lottery => u8::from(!drawn_tier.contains(u.user_id.as_str())),
            Policy::Fifo => 0,
            Policy::Priority => u.tier,
        };
        let sessions = users
            .iter()
            .filter_map(|u| {
                let (session, end) = u.session?;
                let end = end.or((session.expires_at_ms <= now_ms).then_some(SessionEnd::Expired));
                Some((u.user_id.clone(), tier_of(u), session, end))
            })
            .collect();
        let mut waiting: Vec<&JournalUser> = users.iter().copied().filter(|u| u.session.is_none()).collect();
        waiting.sort_by_key(|u| (tier_of(u), u.joined, u.user_id.clone()));
        let mut waiting: Vec<(UserId, u8)> = waiting.into_iter().map(|u| (u.user_id.clone(), tier_of(u))).collect();
        if lottery && !drawn {
            waiting.clear();
        } else if lottery {
            let draw = lottery_order(&seed, &pre_draw);
            let in_draw: BTreeSet<&str> = waiting.iter().filter(|(_, t)| *t == 0).map(|(u, _)| u.as_str()).collect();
            let mut drawn_line: Vec<(UserId, u8)> =
                draw.into_iter().filter(|u| in_draw.contains(u.as_str())).map(|u| (u, 0)).collect();
            drawn_line.extend(waiting.into_iter().filter(|(_, t)| *t == 1));
            waiting = drawn_line;
        }
        Self { spec, seed, sold_out: journal.sold_out, drawn, pre_draw, sessions, waiting }
    }
}

#[cfg(test)]
mod tests;
