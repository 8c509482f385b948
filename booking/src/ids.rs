//! Id sources. Simulated code builds every UUID from seeded bytes
//! ([`SeededIds`]); production uses the OS's randomness ([`RandomIds`]).

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Mutex;
use uuid::Uuid;

/// A source of unique ids.
pub trait IdSource: Send + Sync + 'static {
    /// A fresh id, never returned before by this source.
    fn next_uuid(&self) -> Uuid;
}

/// Deterministic ids from a seed: the same seed gives the same sequence.
#[derive(Debug)]
pub struct SeededIds {
    rng: Mutex<ChaCha8Rng>,
}

impl SeededIds {
    /// A source whose sequence is decided by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)) }
    }
}

impl IdSource for SeededIds {
    fn next_uuid(&self) -> Uuid {
        let mut bytes = [0u8; 16];
        self.rng.lock().expect("id rng poisoned").fill_bytes(&mut bytes);
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

/// Random v4 ids from the OS. Production only: never in simulated code.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomIds;

impl IdSource for RandomIds {
    #[allow(clippy::disallowed_methods)] // the production id module
    fn next_uuid(&self) -> Uuid {
        Uuid::new_v4()
    }
}
