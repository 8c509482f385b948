//! Swarm testing: per seed, switch each configured fault on or off and weight
//! it, so that different seeds explore different fault mixes (a fault that
//! masks another is absent in some seeds). Pure and deterministic: the seed
//! alone decides, through a tiny splitmix64 stream.

use crate::faults::{FaultKind, Faults};
use crate::knobs::{KNOBS, Swarm, Value};
use crate::model::Scenario;
use serde::{Deserialize, Serialize};

/// One step of splitmix64: advances `state` and returns the next output.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform draw in `[0, 1)` from the stream.
fn unit(state: &mut u64) -> f64 {
    (splitmix64(state) >> 11) as f64 / (1u64 << 53) as f64
}

/// Lowest weight a switched-on fault gets.
pub const MIN_SWARM_WEIGHT: f64 = 0.25;

/// Salt that separates the swarm stream from other uses of the seed.
const SWARM_SALT: u64 = 0x5357_4152_4D00_0001; // "SWARM"

/// The per-seed fault mix: for each kind, on with a weight in
/// `[MIN_SWARM_WEIGHT, 1]`, or off. Every kind is drawn (configured or not) so
/// that a kind's draw does not depend on which others the file configures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwarmDraw {
    /// The seed it was drawn from.
    pub seed: u64,
    /// `(kind, weight)` for each kind switched on, in file order; absent kinds are off.
    pub on: Vec<(FaultKind, f64)>,
}

impl SwarmDraw {
    /// Draws the mix for `seed`: each kind on with probability 1/2.
    pub fn new(seed: u64) -> SwarmDraw {
        let mut state = seed ^ SWARM_SALT;
        let mut on = Vec::new();
        for kind in FaultKind::ALL {
            let switch = unit(&mut state);
            let weight = MIN_SWARM_WEIGHT + (1.0 - MIN_SWARM_WEIGHT) * unit(&mut state);
            if switch < 0.5 {
                on.push((*kind, weight));
            }
        }
        SwarmDraw { seed, on }
    }

    /// The weight of `kind`, or `None` when it is off.
    pub fn weight(&self, kind: FaultKind) -> Option<f64> {
        self.on.iter().find(|(k, _)| *k == kind).map(|(_, w)| *w)
    }

    /// Whether this seed's provider is lenient about refunds (see
    /// [`crate::Provider::lenient_refunds`]): drawn from the seed apart from
    /// the mix, so about half of the swarm's seeds let a double refund through
    /// to the checkers.
    pub fn lenient_refunds(&self) -> bool {
        let mut s = self.seed ^ 0x6c65_6e69_656e_7421;
        splitmix64(&mut s) & 1 == 1
    }

    /// The faults of `scenario` with the kinds that are off removed and every
    /// knob of the kinds that are on changed as its row of
    /// [`crate::KNOBS`] says ([`crate::Swarm`]): probabilities multiplied by
    /// their kind's weight, clock skew's maximum too; a lenient provider on
    /// the seeds that draw one. Durations are unchanged.
    pub fn apply(&self, scenario: &Scenario) -> Faults {
        let mut s = scenario.clone();
        for knob in KNOBS.iter() {
            let (get, set) = (knob.access.get, knob.access.set);
            match knob.swarm {
                Swarm::Keep => {}
                Swarm::Switch(kind) => {
                    if self.weight(kind).is_none() && get(&s).is_some() {
                        set(&mut s, Value::Absent);
                    }
                }
                Swarm::Scale(kind) => {
                    if let (Some(w), Some(Value::Share(p))) = (self.weight(kind), get(&s)) {
                        set(&mut s, Value::Share((p * w).clamp(0.0, 1.0)));
                    }
                }
                Swarm::ScaleMs(kind) => {
                    if let (Some(w), Some(Value::Int(ms))) = (self.weight(kind), get(&s)) {
                        set(&mut s, Value::Int(((ms as f64 * w).round() as i64).max(1)));
                    }
                }
                Swarm::Lenient => {
                    if let Some(Value::Flag(lenient)) = get(&s) {
                        set(&mut s, Value::Flag(lenient || self.lenient_refunds()));
                    }
                }
            }
        }
        s.faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_matches_the_reference_stream() {
        // Reference values of splitmix64 seeded with 0.
        let mut s = 0u64;
        assert_eq!(splitmix64(&mut s), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(&mut s), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn draws_are_deterministic_and_vary_by_seed() {
        assert_eq!(SwarmDraw::new(7), SwarmDraw::new(7));
        let distinct: std::collections::BTreeSet<Vec<FaultKind>> =
            (0..64).map(|s| SwarmDraw::new(s).on.iter().map(|(k, _)| *k).collect()).collect();
        assert!(distinct.len() > 16, "only {} distinct mixes in 64 seeds", distinct.len());
        for seed in 0..64 {
            for (_, w) in SwarmDraw::new(seed).on {
                assert!((MIN_SWARM_WEIGHT..=1.0).contains(&w), "weight {w}");
            }
        }
        // Every kind is on in some seed and off in another.
        for kind in FaultKind::ALL {
            let on = (0..64).filter(|s| SwarmDraw::new(*s).weight(*kind).is_some()).count();
            assert!(on > 0 && on < 64, "{kind:?} on in {on} of 64 seeds");
        }
    }
}
