//! The admission laws' runs, traced: each life of each service host's
//! waiting room reports its law's runs and the session ends it learnt from
//! here, tagged with the host and the life, for the auditor to recompute.

use crate::world::recorder::Recorder;
use booking::admission::controller::{Decision, Signals};
use booking::admission::law_log::LawLog;
use booking::model::EventId;
use invariants::trace::RoomEvent;

/// The law log of one life of one service host.
#[derive(Debug)]
pub struct TracedLawLog {
    recorder: Recorder,
    instance: String,
    life: u32,
}

impl TracedLawLog {
    /// The log of life `life` (0 first) of host `instance`.
    pub fn new(recorder: Recorder, instance: String, life: u32) -> Self {
        Self { recorder, instance, life }
    }
}

impl LawLog for TracedLawLog {
    fn ran(&self, event_id: &EventId, now_ms: i64, s: &Signals, d: &Decision) {
        self.recorder.room(RoomEvent::LawRan {
            event_id: event_id.clone(),
            instance: self.instance.clone(),
            life: self.life,
            now_ms,
            signals: *s,
            admit: d.admit,
            rate_per_million_s: (d.rate_per_s * 1e6).round() as i64,
            health_ppm: (d.health * 1e6).round() as i64,
            mean_session_us: (d.mean_session_ms * 1e3).round() as i64,
        });
    }

    fn session_ended(&self, event_id: &EventId, duration_ms: u64) {
        self.recorder.room(RoomEvent::LawLearnt {
            event_id: event_id.clone(),
            instance: self.instance.clone(),
            life: self.life,
            duration_ms,
        });
    }
}
