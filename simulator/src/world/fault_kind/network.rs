//! Link faults: the schedule's cuts (messages dropped) and holds (messages
//! queued until the fault ends), each started at its time during the fault
//! phase and ended at its end, or when the fault phase ends.

use super::Strike;
use crate::world::build::World;
use crate::world::config::WorldConfig;
use crate::world::fault_params::{LinkFault, LinkMode};
use crate::world::nemesis::{Nemesis, Stage};
use crate::world::schedule::FaultSchedule;
use invariants::trace::FaultEvent;

/// Starts and ends the scheduled link faults.
pub struct LinkNemesis {
    /// The schedule's link faults, by start time.
    scheduled: Vec<LinkFault>,
    /// Index of the next one to start.
    next: usize,
    /// Those under way.
    active: Vec<LinkFault>,
}

impl LinkNemesis {
    /// Carries out `scheduled` (sorted by start time).
    pub fn new(scheduled: Vec<LinkFault>) -> Self {
        assert!(scheduled.windows(2).all(|w| w[0].start_ms <= w[1].start_ms), "link faults in time order");
        Self { scheduled, next: 0, active: Vec::new() }
    }
}

impl Nemesis for LinkNemesis {
    fn act(&mut self, stage: &mut Stage<'_, '_>) {
        let at = stage.now_ms as i64;
        if !stage.faults_over {
            while let Some(l) = self.scheduled.get(self.next).filter(|l| l.start_ms <= stage.now_ms) {
                let (a, b) = (l.a.as_str(), l.b.as_str());
                let word = match l.mode {
                    LinkMode::Held => {
                        stage.sim.hold(a, b);
                        "held"
                    }
                    LinkMode::Cut => {
                        stage.sim.partition(a, b);
                        "cut"
                    }
                };
                stage.recorder.fault_at(at, FaultEvent::PartitionStarted, format!("{a} <-> {b} {word}"));
                self.active.push(l.clone());
                self.next += 1;
            }
        }
        let (now_ms, faults_over) = (stage.now_ms, stage.faults_over);
        let sim = &mut *stage.sim;
        let recorder = stage.recorder;
        self.active.retain(|l| {
            if l.end_ms > now_ms && !faults_over {
                return true;
            }
            match l.mode {
                LinkMode::Held => sim.release(l.a.as_str(), l.b.as_str()),
                LinkMode::Cut => sim.repair(l.a.as_str(), l.b.as_str()),
            }
            recorder.fault_at(at, FaultEvent::PartitionRepaired, format!("{} <-> {}", l.a, l.b));
            false
        });
    }
}

/// `faults.network`'s part in a world: its nemesis.
impl Strike for scenarios::Network {
    fn nemesis(_cfg: &WorldConfig, schedule: &FaultSchedule, _world: &World) -> Option<Box<dyn Nemesis>> {
        Some(Box::new(LinkNemesis::new(schedule.link_faults.clone())))
    }
}
