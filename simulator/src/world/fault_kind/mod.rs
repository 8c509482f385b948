//! Every fault kind's part in a world, one module per kind, named as its
//! table under `faults`. The modules are declared from the scenario's one
//! list of kinds (`scenarios::fault_kinds!`), so a kind without a module
//! here fails to compile. A kind's module holds what it does to the world
//! through [`Strike`]'s hooks (its nemesis, its wrapper around the store,
//! its plan line), implemented on the kind's own table type;
//! a kind that strikes inside a host (a user, the provider) says where.

use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::nemesis::Nemesis;
use crate::world::recorder::Recorder;
use crate::world::schedule::FaultSchedule;
use booking::store::Store;
use std::sync::Arc;

/// One fault kind's hooks into a world, implemented by the kind's own table
/// type (`scenarios::SlowCommit` for `faults.slow_commit`); each does
/// nothing unless the kind says otherwise.
pub trait Strike {
    /// The nemesis that carries the kind out from outside the hosts, if it
    /// has one (the world steps it after every turmoil step), from its table
    /// in `cfg.faults` or the seed's `schedule`.
    fn nemesis(_cfg: &WorldConfig, _schedule: &FaultSchedule, _world: &World) -> Option<Box<dyn Nemesis>> {
        None
    }

    /// The shared store as every service host sees it: `store` (already
    /// traced: a call is recorded when the store answers it) with this
    /// kind's wrapper around it, if any.
    fn store(_cfg: &WorldConfig, _seed: u64, store: Arc<dyn Store>, _recorder: &Recorder) -> Arc<dyn Store> {
        store
    }

    /// Its line in `replay --plan` (the fault schedule), if `faults`
    /// configures it and the schedule's own fields do not show it.
    fn describe(_faults: &scenarios::Faults) -> Option<String> {
        None
    }
}

macro_rules! declare_strikes {
    ($($(#[$doc:meta])* $variant:ident $name:ident $table:ident,)+) => {
        $(pub mod $name;)+

        /// Every kind's nemesis, in `scenarios::FaultKind::ALL`'s order (the
        /// order they act in, after the crashes').
        pub fn nemeses(cfg: &WorldConfig, schedule: &FaultSchedule, world: &World) -> Vec<Box<dyn Nemesis>> {
            let mut all = Vec::new();
            $(all.extend(<scenarios::$table as Strike>::nemesis(cfg, schedule, world));)+
            all
        }

        /// The shared store with every kind's wrapper around it, in that order.
        pub fn store(
            cfg: &WorldConfig,
            seed: u64,
            store: Arc<dyn Store>,
            recorder: &Recorder,
        ) -> Arc<dyn Store> {
            $(let store = <scenarios::$table as Strike>::store(cfg, seed, store, recorder);)+
            store
        }

        /// The policy lines every kind describes itself, in that order.
        pub fn policies(faults: &scenarios::Faults) -> Vec<String> {
            let mut all = Vec::new();
            $(all.extend(<scenarios::$table as Strike>::describe(faults));)+
            all
        }
    };
}

scenarios::fault_kinds!(declare_strikes);
