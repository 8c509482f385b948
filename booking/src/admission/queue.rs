//! One event's waiting queue and its fairness policy, in memory: the contract
//! the Redis queue will keep. Pure: times come from the caller.
//!
//! Policies, each with the guarantee it gives:
//! - [`Fairness::Fifo`], arrival order: nobody is admitted before someone
//!   who joined earlier.
//! - [`Fairness::Lottery`], a pre-sale lottery: everyone who joins before the
//!   sale opens gets a random place, drawn once at opening from a seed whose
//!   SHA-256 ([`Queue::commitment`]) is published when the queue opens for
//!   joining and which is revealed after the draw ([`Queue::reveal`]), so
//!   anyone can recompute the order ([`lottery_order`]) and check it; later
//!   arrivals follow in arrival order.
//! - [`Fairness::Priority`], priority access: lower tiers are admitted ahead
//!   of higher ones (tier 0 first: members, then the public), FIFO within a
//!   tier.
//!
//! Positions are answered in O(tiers): each tier keeps its arrivals in order
//! with an admitted prefix.

use crate::model::UserId;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Tiers a priority queue may have at most (tier numbers `0..MAX_TIERS`).
pub const MAX_TIERS: u8 = 8;
/// Users one queue holds at most.
pub const MAX_QUEUE_USERS: usize = 1_000_000;

/// An event's fairness rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fairness {
    /// Arrival order.
    Fifo,
    /// A pre-sale lottery drawn at opening from `seed` (kept secret until then).
    Lottery {
        /// The draw's seed; its SHA-256 is published at queue open.
        seed: [u8; 32],
    },
    /// Tiers ahead of the public, FIFO within a tier.
    Priority,
}

/// Why the queue refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// The tier is `MAX_TIERS` or more, or given on a queue that is not a priority queue.
    #[error("tier {0} is not a tier of this queue")]
    BadTier(u8),
    /// The queue is full.
    #[error("the queue holds {MAX_QUEUE_USERS} users already")]
    Full,
    /// The event sold out: nobody else will be admitted.
    #[error("the event sold out")]
    SoldOut,
    /// The lottery's seed is revealed only after its draw.
    #[error("the lottery is drawn at opening; its seed is revealed after")]
    NotDrawn,
}

/// Where a user stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Waiting: `position` users ahead, counting themselves (1 = next).
    Waiting {
        /// 1-based place in line.
        position: u64,
    },
    /// Waiting for the lottery's draw at opening: no place yet.
    AwaitingDraw,
    /// Admitted already.
    Admitted,
    /// The event sold out before their turn.
    SoldOut,
}

/// One user's entry: the tier (lottery: 0 drawn, 1 later arrivals) and index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    tier: u8,
    index: usize,
}

/// One event's queue.
#[derive(Debug, Clone)]
pub struct Queue {
    fairness: Fairness,
    opens_at_ms: i64,
    drawn: bool,
    sold_out: bool,
    /// Per tier: users in admission order, and how many of them are admitted.
    tiers: Vec<(VecDeque<UserId>, usize)>,
    /// Lottery joiners before opening, in arrival order (drawn at opening).
    pre_draw: Vec<UserId>,
    /// The same users as `pre_draw`, for lookups in O(log n); emptied at the draw.
    pre_draw_members: BTreeSet<UserId>,
    entries: BTreeMap<UserId, Entry>,
}

/// The lottery's order of `joiners` under `seed`: by SHA-256(`seed` ‖ user
/// id), ties (none in practice) by user id. Anyone holding the revealed seed
/// and the list of joiners recomputes it.
pub fn lottery_order(seed: &[u8; 32], joiners: &[UserId]) -> Vec<UserId> {
    let mut keyed: Vec<([u8; 32], &UserId)> = joiners
        .iter()
        .map(|u| {
            let mut h = Sha256::new();
            h.update(seed);
            h.update(u.as_bytes());
            (h.finalize().into(), u)
        })
        .collect();
    keyed.sort();
    keyed.into_iter().map(|(_, u)| u.clone()).collect()
}

impl Queue {
    /// A queue for an event whose sale opens at `opens_at_ms`.
    pub fn new(fairness: Fairness, opens_at_ms: i64) -> Self {
        let tiers = match fairness {
            Fairness::Fifo => 1,
            Fairness::Lottery { .. } => 2,
            Fairness::Priority => MAX_TIERS as usize,
        };
        Self {
            fairness,
            opens_at_ms,
            drawn: false,
            sold_out: false,
            tiers: vec![(VecDeque::new(), 0); tiers],
            pre_draw: Vec::new(),
            pre_draw_members: BTreeSet::new(),
            entries: BTreeMap::new(),
        }
    }

    /// The lottery's commitment, hex SHA-256 of its seed (`None` for other policies).
    pub fn commitment(&self) -> Option<String> {
        match &self.fairness {
            Fairness::Lottery { seed } => Some(hex::encode(Sha256::digest(seed))),
            _ => None,
        }
    }

    /// The lottery's seed, once drawn, and the joiners it ordered, in arrival order.
    pub fn reveal(&self) -> Result<([u8; 32], Vec<UserId>), QueueError> {
        match &self.fairness {
            Fairness::Lottery { seed } if self.drawn => Ok((*seed, self.pre_draw.clone())),
            _ => Err(QueueError::NotDrawn),
        }
    }

    /// `user_id` joins at `now_ms` in `tier` (priority queues; 0 otherwise).
    /// Joining again changes nothing and answers the standing.
    pub fn join(&mut self, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Standing, QueueError> {
        if self.has(user_id) {
            return Ok(self.standing(user_id));
        }
        if self.sold_out {
            return Err(QueueError::SoldOut);
        }
        if (tier != 0 && self.fairness != Fairness::Priority) || tier >= MAX_TIERS {
            return Err(QueueError::BadTier(tier));
        }
        if self.entries.len() + self.pre_draw.len() >= MAX_QUEUE_USERS {
            return Err(QueueError::Full);
        }
        self.open_if_due(now_ms);
        match self.fairness {
            Fairness::Lottery { .. } if !self.drawn => {
                self.pre_draw.push(user_id.clone());
                self.pre_draw_members.insert(user_id.clone());
            }
            Fairness::Lottery { .. } => self.push(1, user_id),
            Fairness::Fifo | Fairness::Priority => self.push(tier, user_id),
        }
        Ok(self.standing(user_id))
    }

    /// `user_id`, admitted before, joins again at `now_ms` as a new arrival
    /// (at the back of `tier`'s line; a lottery's later arrivals after the
    /// draw). Precondition: their standing is [`Standing::Admitted`].
    pub fn rejoin(&mut self, user_id: &UserId, tier: u8, now_ms: i64) -> Result<Standing, QueueError> {
        assert_eq!(self.find(user_id), Some(Standing::Admitted), "only an admitted user joins again");
        let old = self.entries.remove(user_id).expect("an admitted user has an entry");
        match self.join(user_id, tier, now_ms) {
            Ok(standing) => Ok(standing),
            Err(e) => {
                self.entries.insert(user_id.clone(), old);
                Err(e)
            }
        }
    }

    /// A queue rebuilt as it stood: the lottery's pre-opening joiners
    /// (`pre_draw`, arrival order) and whether it was drawn, the users
    /// `admitted` before (per tier, in order) and those `waiting` (admission
    /// order), each with their tier. Preconditions: tiers in range, nobody twice.
    pub fn restored(
        fairness: Fairness,
        opens_at_ms: i64,
        drawn: bool,
        pre_draw: &[UserId],
        admitted: &[(UserId, u8)],
        waiting: &[(UserId, u8)],
    ) -> Self {
        let mut q = Self::new(fairness, opens_at_ms);
        q.pre_draw = pre_draw.to_vec();
        q.drawn = drawn && matches!(q.fairness, Fairness::Lottery { .. });
        if !q.drawn {
            q.pre_draw_members = pre_draw.iter().cloned().collect();
        }
        for (user, tier) in admitted {
            q.push(*tier, user);
            q.tiers[*tier as usize].1 += 1;
        }
        for (user, tier) in waiting {
            assert!(!q.entries.contains_key(user), "a user stands once");
            q.push(*tier, user);
        }
        q
    }

    fn push(&mut self, tier: u8, user_id: &UserId) {
        let (line, _) = &mut self.tiers[tier as usize];
        self.entries.insert(user_id.clone(), Entry { tier, index: line.len() });
        line.push_back(user_id.clone());
    }

    /// Draws the lottery once the sale has opened (`now_ms >= opens_at_ms`).
    pub fn open_if_due(&mut self, now_ms: i64) {
        if let Fairness::Lottery { seed } = &self.fairness
            && !self.drawn
            && now_ms >= self.opens_at_ms
        {
            let order = lottery_order(seed, &self.pre_draw);
            self.drawn = true;
            self.pre_draw_members = BTreeSet::new();
            for u in order {
                self.push(0, &u);
            }
        }
    }

    /// Where `user_id` stands. Precondition for a meaningful answer: [`Queue::has`] it
    /// (a user who never joined reads `AwaitingDraw`, or `SoldOut` once sold out).
    pub fn standing(&self, user_id: &UserId) -> Standing {
        self.find(user_id).unwrap_or(if self.sold_out { Standing::SoldOut } else { Standing::AwaitingDraw })
    }

    /// Where `user_id` stands if they joined, with one lookup: `None` for a
    /// user who never joined.
    pub fn find(&self, user_id: &UserId) -> Option<Standing> {
        if let Some(e) = self.entries.get(user_id) {
            let (_, admitted) = &self.tiers[e.tier as usize];
            if e.index < *admitted {
                return Some(Standing::Admitted);
            }
            if self.sold_out {
                return Some(Standing::SoldOut);
            }
            let ahead: usize = self.tiers[..e.tier as usize].iter().map(|(line, a)| line.len() - a).sum();
            return Some(Standing::Waiting { position: (ahead + e.index - admitted + 1) as u64 });
        }
        self.pre_draw_members.contains(user_id).then_some(if self.sold_out {
            Standing::SoldOut
        } else {
            Standing::AwaitingDraw
        })
    }

    /// Whether `user_id` joined.
    pub fn has(&self, user_id: &UserId) -> bool {
        self.entries.contains_key(user_id) || self.pre_draw_members.contains(user_id)
    }

    /// Users waiting now (drawn or not).
    pub fn waiting(&self) -> usize {
        self.tiers.iter().map(|(line, a)| line.len() - a).sum::<usize>()
            + if self.drawn { 0 } else { self.pre_draw.len() }
    }

    /// Admits up to `n` users at `now_ms`, in the policy's order: nobody
    /// before the sale opens, nobody once it sold out.
    pub fn admit(&mut self, n: u32, now_ms: i64) -> Vec<UserId> {
        self.open_if_due(now_ms);
        if now_ms < self.opens_at_ms || self.sold_out {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (line, admitted) in &mut self.tiers {
            while out.len() < n as usize && *admitted < line.len() {
                out.push(line[*admitted].clone());
                *admitted += 1;
            }
        }
        out
    }

    /// The event sold out: every waiting user now reads [`Standing::SoldOut`].
    pub fn sold_out(&mut self) {
        self.sold_out = true;
    }
}

#[cfg(test)]
mod tests;
