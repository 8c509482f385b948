//! Every fault kind's part in a world, one module per kind, named as its
//! table under `faults`. The modules are declared from the scenario's one
//! list of kinds (`scenarios::fault_kinds!`), so a kind without a module
//! here fails to compile. A kind's module holds what it does to the world
//! through [`Strike`]'s hooks (its nemesis, its wrapper around the store);
//! a kind that strikes inside a host (a user, the provider) says where.

use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::nemesis::Nemesis;
use crate::world::recorder::Recorder;
use crate::world::schedule::FaultSchedule;
use crate::world::sim_clock::SimClock;
use booking::store::Store;
use std::sync::Arc;

/// One fault kind's hooks into a world; each does nothing unless the kind says otherwise.
pub trait Strike: Sync {
    /// The nemesis that carries the kind out from outside the hosts, if it
    /// has one (the world steps it after every turmoil step), from its table
    /// in `cfg.faults` or the seed's `schedule`.
    fn nemesis(&self, _cfg: &WorldConfig, _schedule: &FaultSchedule, _world: &World) -> Option<Box<dyn Nemesis>> {
        None
    }

    /// The shared store as every service host sees it: `store` (already
    /// traced: a call is recorded when the store answers it) with this
    /// kind's wrapper around it, if any. `clock` is the store's.
    fn store(
        &self,
        _cfg: &WorldConfig,
        _seed: u64,
        store: Arc<dyn Store>,
        _clock: &SimClock,
        _recorder: &Recorder,
    ) -> Arc<dyn Store> {
        store
    }

    /// Its policy's line in `replay --plan` (the fault schedule), if it
    /// draws its moments as the run goes and `faults` configures it.
    fn describe(&self, _faults: &scenarios::Faults) -> Option<String> {
        None
    }
}

macro_rules! declare_strikes {
    ($($(#[$doc:meta])* $variant:ident $name:ident $table:ident,)+) => {
        $(pub mod $name;)+

        /// Every kind's hooks, in `scenarios::FaultKind::ALL`'s order (the
        /// order the nemeses act in, after the crashes').
        pub const KINDS: &[&dyn Strike] = &[$(&$name::Kind,)+];
    };
}

scenarios::fault_kinds!(declare_strikes);
