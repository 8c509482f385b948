//! The auditor's admission-law side: every run of every instance's law
//! recomputed by the model's law ([`crate::model::law`]) from what it read,
//! and every pass held to ask for what the law that ran before it decided.

use crate::model::law::{Decided, Law, LawSettings};
use crate::trace::RoomEvent;
use std::collections::BTreeMap;

/// One law: an event's at one life of one instance.
type LawKey = (String, u32, String);

/// Every law the trace showed, as the model runs them.
#[derive(Debug, Default)]
pub(super) struct Laws {
    laws: BTreeMap<LawKey, Law>,
    /// Each room's target sessions.
    targets: BTreeMap<String, u32>,
    /// Per event, what the law that ran last decided, until its pass.
    asked: BTreeMap<String, u32>,
}

impl Laws {
    /// Takes in a room event; a disagreement with the model, if any.
    pub(super) fn observe(&mut self, s: &LawSettings, r: &RoomEvent) -> Option<String> {
        match r {
            RoomEvent::Opened { event_id, target_active_sessions, .. } => {
                self.targets.insert(event_id.clone(), *target_active_sessions);
                None
            }
            RoomEvent::LawLearnt { event_id, instance, life, duration_ms } => {
                let key = (instance.clone(), *life, event_id.clone());
                self.laws.entry(key).or_insert_with(|| Law::new(s)).learnt(s, *duration_ms);
                None
            }
            RoomEvent::LawRan { .. } => self.ran(s, r),
            RoomEvent::Pass { event_id, asked, .. } => match self.asked.remove(event_id) {
                Some(decided) if decided != *asked => {
                    Some(format!("a pass asked for {asked} admissions; the law that ran before it decided {decided}"))
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn ran(&mut self, s: &LawSettings, r: &RoomEvent) -> Option<String> {
        let RoomEvent::LawRan {
            event_id,
            instance,
            life,
            now_ms,
            signals,
            admit,
            rate_per_million_s,
            health_ppm,
            mean_session_us,
        } = r
        else {
            return None;
        };
        self.asked.insert(event_id.clone(), *admit);
        let Some(target) = self.targets.get(event_id).copied() else {
            return Some(format!("{instance}'s admission law ran for {event_id}, which has no room"));
        };
        let key = (instance.clone(), *life, event_id.clone());
        let want = self.laws.entry(key).or_insert_with(|| Law::new(s)).run(s, target, *now_ms, signals);
        let got = Decided {
            admit: *admit,
            rate_per_million_s: *rate_per_million_s,
            health_ppm: *health_ppm,
            mean_session_us: *mean_session_us,
        };
        (!got.agrees(&want)).then(|| {
            format!(
                "{instance}'s admission law decided {got:?} at {now_ms} under {signals:?}; the law gives {want:?}"
            )
        })
    }
}
