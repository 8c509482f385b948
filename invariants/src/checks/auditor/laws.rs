//! The auditor's admission-law side: every run of every instance's law
//! recomputed by the model's law ([`crate::model::law`]) from what it read,
//! and every pass held to ask for what the law that ran before it decided.
//! The hold readings are checked too: a run reads the holds on its event
//! that its instance's store answered since its last run (each a hold
//! attempt; a refusal for a taken seat, a refused one).

use crate::model::law::{Decided, Law, LawSettings};
use crate::trace::{OpId, RoomEvent};
use booking::model::EventId;
use std::collections::BTreeMap;

/// One law: an event's at one life of one instance.
type LawKey = (String, u32, EventId);

/// Every law the trace showed, as the model runs them.
#[derive(Debug, Default)]
pub(super) struct Laws {
    laws: BTreeMap<LawKey, Law>,
    /// Each room's target sessions.
    targets: BTreeMap<EventId, u32>,
    /// Per event, what the law that ran last decided, until its pass.
    asked: BTreeMap<EventId, u32>,
    /// Per (host, event): holds its store answered since its law last ran (attempts, refused).
    holds: BTreeMap<(u32, EventId), (u64, u64)>,
    /// The host each request was sent to.
    hosts: BTreeMap<OpId, u32>,
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

    /// Request `op_id` was sent to host `host`.
    pub(super) fn sent(&mut self, op_id: OpId, host: u32) {
        self.hosts.insert(op_id, host);
    }

    /// The store answered a hold on `event_id` that request `op_id` asked for (`refused`: a seat was taken).
    pub(super) fn hold_answered(&mut self, op_id: OpId, event_id: &EventId, refused: bool) {
        if let Some(&host) = self.hosts.get(&op_id)
            && self.targets.contains_key(event_id)
        {
            let (attempts, refusals) = self.holds.entry((host, EventId::from(event_id))).or_default();
            *attempts += 1;
            *refusals += u64::from(refused);
        }
    }

    /// Host `host` stopped: what it counted is gone.
    pub(super) fn forget(&mut self, host: u32) {
        self.holds.retain(|(h, _), _| *h != host);
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
        let host = instance.strip_prefix("svc").and_then(|h| h.parse().ok());
        let holds = host.and_then(|h| self.holds.remove(&(h, event_id.clone()))).unwrap_or_default();
        if (signals.hold_attempts, signals.hold_refusals) != holds {
            return Some(format!(
                "{instance}'s admission law read {} hold attempts and {} refusals at {now_ms}; its store answered {} and refused {}",
                signals.hold_attempts, signals.hold_refusals, holds.0, holds.1
            ));
        }
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
            format!("{instance}'s admission law decided {got:?} at {now_ms} under {signals:?}; the law gives {want:?}")
        })
    }
}
