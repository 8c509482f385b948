//! The waiting room's fairness, as its documentation states each policy:
//! arrival order (`fifo`); a pre-sale lottery (`lottery`: who joined before
//! the draw at opening, ordered by SHA-256(seed ‖ user id), ties by user id,
//! the seed revealed after the draw; then later arrivals in arrival order);
//! priority tiers (`priority`: lower tiers first, arrival order within one).
//! Nobody is admitted before the sale opens, or once it sold out; the
//! admissions, in order, are a prefix of the policy's order of the joiners.

use booking::admission::room::Policy;
use booking::model::UserId;
use sha2::{Digest, Sha256};

/// One join, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Join {
    /// The user.
    pub user: UserId,
    /// The tier (priority rooms; 0 otherwise).
    pub tier: u8,
    /// Whether the user joined before the lottery's draw (lottery rooms).
    pub before_draw: bool,
}

/// The lottery's draw of `joiners` under `seed`.
pub fn drawn_order(seed: &[u8; 32], joiners: &[UserId]) -> Vec<UserId> {
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

/// The order `policy` admits `joins` (in arrival order) in; a lottery's
/// seed is `seed_hex` (an unreadable seed leaves the drawn in arrival order).
pub fn policy_order(policy: Policy, seed_hex: &str, joins: &[Join]) -> Vec<UserId> {
    match policy {
        Policy::Fifo => joins.iter().map(|j| j.user.clone()).collect(),
        Policy::Priority => {
            let mut by_tier: Vec<(usize, &Join)> = joins.iter().enumerate().collect();
            by_tier.sort_by_key(|(i, j)| (j.tier, *i));
            by_tier.into_iter().map(|(_, j)| j.user.clone()).collect()
        }
        Policy::Lottery => {
            let seed: Option<[u8; 32]> = hex::decode(seed_hex).ok().and_then(|b| b.try_into().ok());
            let drawn: Vec<UserId> = joins.iter().filter(|j| j.before_draw).map(|j| j.user.clone()).collect();
            let mut order = match seed {
                Some(seed) => drawn_order(&seed, &drawn),
                None => drawn,
            };
            order.extend(joins.iter().filter(|j| !j.before_draw).map(|j| j.user.clone()));
            order
        }
    }
}

/// A joiner's place in `policy`'s order as a sort key: sorting joiners by
/// it gives [`policy_order`] (a lottery's drawn by their hash under the
/// seed `seed_hex`, ties, never met, by arrival), so a line kept sorted by
/// it tells a place without ordering everyone again. `arrival`: the join's
/// index in arrival order.
pub fn line_key(policy: Policy, seed_hex: &str, join: &Join, arrival: usize) -> LineKey {
    match policy {
        Policy::Fifo => (0, [0; 32], arrival),
        Policy::Priority => (join.tier, [0; 32], arrival),
        Policy::Lottery if join.before_draw => {
            let seed: Option<[u8; 32]> = hex::decode(seed_hex).ok().and_then(|b| b.try_into().ok());
            let hash = seed.map_or([0; 32], |seed| {
                let mut h = Sha256::new();
                h.update(seed);
                h.update(join.user.as_bytes());
                h.finalize().into()
            });
            (0, hash, arrival)
        }
        Policy::Lottery => (1, [0; 32], arrival),
    }
}

/// A place in a policy's order: (tier or lottery round, draw hash, arrival).
pub type LineKey = (u8, [u8; 32], usize);

/// The first admission (its index) that breaks `order`, with who the order has there.
pub fn first_out_of_order<'a>(order: &'a [UserId], admitted: &[UserId]) -> Option<(usize, Option<&'a UserId>)> {
    admitted.iter().enumerate().find(|(i, u)| order.get(*i) != Some(u)).map(|(i, _)| (i, order.get(i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(user: UserId, tier: u8, before_draw: bool) -> Join {
        Join { user, tier, before_draw }
    }

    #[test]
    fn each_policy_orders_its_joiners_as_documented() {
        let joins = [j("a".into(), 1, true), j("b".into(), 0, true), j("c".into(), 1, false)];
        assert_eq!(policy_order(Policy::Fifo, "", &joins), ["a", "b", "c"]);
        assert_eq!(policy_order(Policy::Priority, "", &joins), ["b", "a", "c"]);
        let seed = [9u8; 32];
        let lottery = policy_order(Policy::Lottery, &hex::encode(seed), &joins);
        assert_eq!(lottery[2], "c", "late arrivals follow the draw");
        assert_eq!(lottery[..2], drawn_order(&seed, &["a".into(), "b".into()])[..]);
        assert_eq!(first_out_of_order(&lottery, &lottery[..2]), None);
        for policy in [Policy::Fifo, Policy::Priority, Policy::Lottery] {
            let mut keyed: Vec<(LineKey, &str)> = joins
                .iter()
                .enumerate()
                .map(|(i, j)| (line_key(policy, &hex::encode(seed), j, i), j.user.as_str()))
                .collect();
            keyed.sort();
            let by_key: Vec<UserId> = keyed.into_iter().map(|(_, u)| UserId::from(u)).collect();
            assert_eq!(by_key, policy_order(policy, &hex::encode(seed), &joins), "{policy:?}");
        }
        assert_eq!(first_out_of_order(&["a".into(), "b".into()], &["b".into()]), Some((0, Some(&UserId::from("a")))));
    }
}
