//! The fault kinds, one module each: a kind's module holds its table (the
//! keys under `faults.<name>`), an example of it and its rows of the knob
//! table. One list, [`fault_kinds!`], registers every kind; from it come
//! [`FaultKind`], [`Faults`] (one optional table per kind), their matches,
//! and the fault rows of [`crate::KNOBS`]. Other crates build their own per-kind
//! registries from the same list (the simulator's strikes), so a kind
//! missing anywhere fails to compile.

use crate::knobs::Knob;
use serde::{Deserialize, Serialize};

/// Every fault kind, in the order swarm testing draws them: append a new
/// kind last, so that earlier kinds' draws stay as they were. One entry per
/// kind: its table's meaning (the docs of its [`Faults`] field), its
/// [`FaultKind`] variant, its name under `faults` (also its module's name,
/// here and in the simulator) and its table's type.
///
/// `fault_kinds!(callback)` calls `callback!` with the entries, each as
/// `#[doc] Variant name Table,`.
#[macro_export]
macro_rules! fault_kinds {
    ($callback:ident) => {
        $callback! {
            /// Users stop past their hold's deadline and resume with their old requests.
            PausedClient paused_client PausedClient,
            /// Old hold tokens and checkout requests are replayed, by their user and by others.
            StaleToken stale_token StaleToken,
            /// Payment callbacks and provider answers arrive late, twice, or out of order.
            DelayedCallback delayed_callback DelayedCallback,
            /// A service host crashes after the store committed, before it answers.
            CrashAfterCommit crash_after_commit CrashAfterCommit,
            /// The payment provider misbehaves.
            Provider provider Provider,
            /// Network partitions and latency.
            Network network Network,
            /// Service hosts' clocks disagree (the store's clock decides).
            ClockSkew clock_skew ClockSkew,
            /// The expiry sweeper stops for a while.
            SweeperStall sweeper_stall SweeperStall,
            /// The seat-map cache goes down, loses its invalidations, or is poisoned.
            Cache cache CacheFaults,
            /// The store is unreachable for a window: every call fails as an outage does.
            StoreOutage store_outage StoreOutage,
            /// The waiting rooms' store (Redis) loses every room at once, as a restart
            /// without persistence does (needs a `[waiting_room]`).
            RoomsLost rooms_lost RoomsLost,
            /// A store write waits before it commits, as one queued behind a slow disk does.
            SlowCommit slow_commit SlowCommit,
        }
    };
}

/// Declares what the list makes: one module per kind, [`FaultKind`],
/// [`Faults`] and the fault rows.
macro_rules! declare_fault_kinds {
    ($($(#[$doc:meta])* $variant:ident $name:ident $table:ident,)+) => {
        $(mod $name;)+
        $(pub use $name::$table;)+

        /// The faults a scenario can configure, in the order swarm testing draws them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum FaultKind {
            $(#[doc = concat!("`faults.", stringify!($name), "`.")] $variant,)+
        }

        impl FaultKind {
            /// Every kind, in the order swarm testing draws them.
            pub const ALL: &'static [FaultKind] = &[$(FaultKind::$variant,)+];

            /// The table name under `faults`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(FaultKind::$variant => stringify!($name),)+
                }
            }

            /// An example of the kind's table with every key set, as TOML.
            pub fn example(self) -> &'static str {
                match self {
                    $(FaultKind::$variant => $name::EXAMPLE,)+
                }
            }
        }

        /// The fault workloads, one optional table per kind; absent means off.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Faults {
            $($(#[$doc])* pub $name: Option<$table>,)+
        }

        impl Faults {
            /// Whether the fault of `kind` is configured.
            pub fn has(&self, kind: FaultKind) -> bool {
                match kind {
                    $(FaultKind::$variant => self.$name.is_some(),)+
                }
            }

            /// Switches the fault of `kind` off.
            pub fn remove(&mut self, kind: FaultKind) {
                match kind {
                    $(FaultKind::$variant => self.$name = None,)+
                }
            }
        }

        /// Every fault kind's knob rows, kind after kind in [`FaultKind::ALL`]'s order.
        pub(crate) fn knobs() -> impl Iterator<Item = &'static Knob> {
            [$($name::KNOBS,)+].into_iter().flatten()
        }
    };
}

fault_kinds!(declare_fault_kinds);

pub use cache::PinnedCacheFault;
pub use network::PinnedLinkFault;

impl FaultKind {
    /// Parses a table name under `faults`.
    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.iter().copied().find(|k| k.as_str() == name)
    }
}

impl Faults {
    /// The configured kinds, in [`FaultKind::ALL`]'s order.
    pub fn kinds(&self) -> Vec<FaultKind> {
        FaultKind::ALL.iter().copied().filter(|k| self.has(*k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_serde_name_is_its_table_name() {
        for kind in FaultKind::ALL {
            assert_eq!(toml::Value::try_from(kind).unwrap(), toml::Value::String(kind.as_str().to_string()));
            assert_eq!(FaultKind::parse(kind.as_str()), Some(*kind));
        }
    }

    #[test]
    fn every_kinds_rows_are_its_own_and_start_with_its_table() {
        for (kind, rows) in FaultKind::ALL.iter().zip(knobs_by_kind()) {
            let table = format!("faults.{}", kind.as_str());
            assert_eq!(rows[0].key, table);
            assert!(rows.iter().all(|r| r.key == table || r.key.starts_with(&format!("{table}."))), "{table}");
        }
    }

    fn knobs_by_kind() -> Vec<&'static [Knob]> {
        macro_rules! rows {
            ($($(#[$doc:meta])* $variant:ident $name:ident $table:ident,)+) => { vec![$($name::KNOBS,)+] };
        }
        fault_kinds!(rows)
    }
}
