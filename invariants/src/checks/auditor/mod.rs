//! `auditor`: the reference model ([`crate::model`]) replayed over the
//! trace, TigerBeetle's auditor in spirit. Every store call is replayed in
//! commit order (the trace records each at its linearization point,
//! refusals and reads included) and its answer and writes compared with the
//! model's; every answer a client received is compared with what the model
//! says the request must get from those calls and the service's own rules;
//! every money record is held to the provider's ledger; the store's final
//! records are compared with the model's. Where the model cannot know the
//! moment a rule met a request (a refusal before the store), it keeps the
//! set of answers that moment allows.
//!
//! One violation per subject (the first disagreement: the rest tend to
//! follow from it), at most [`MAX_REPORTED`] in all.

mod counters;
mod laws;
mod ops;
mod provider_reads;
mod records;
mod refusals;
mod reopen;
mod sell_out;

use crate::model::http::rate::Limiter;
use crate::model::money::Ledger;
use crate::model::store::StoreModel;
use crate::model::{Finding, ModelConfig, admission::Admissions};
use crate::trace::{FaultEvent, OpId, TraceKind, WorldFact};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{EventId, Snapshot};
use std::collections::{BTreeMap, BTreeSet};

pub use refusals::RefusalTally;

/// Most auditor violations reported for one run (the last one says how many more there were).
pub const MAX_REPORTED: usize = 40;

/// Replays the trace through the reference model; `cfg.audit` names the
/// deployment (no audit without it).
pub fn check_auditor(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    audit(snap, trace, cfg).map(|a| a.violations).unwrap_or_default()
}

/// What one audit found: its violations and the run's refusals per kind.
#[derive(Debug)]
pub struct Audit {
    /// The auditor's violations, as [`check_auditor`] reports them.
    pub violations: Vec<Violation>,
    /// Refusals per kind, as answered and as the model predicted them.
    pub refusals: RefusalTally,
}

/// Replays the trace through the reference model; `None` when `cfg.audit`
/// names no deployment.
pub fn audit(snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Option<Audit> {
    let model_cfg = cfg.audit.as_ref()?;
    let mut a = Auditor::new(model_cfg, trace);
    for e in trace {
        a.step(e);
    }
    let refusals = a.refusals.clone();
    Some(Audit { violations: a.finish(snap), refusals })
}

/// The auditor's state while it walks one trace.
struct Auditor<'a> {
    cfg: &'a ModelConfig,
    store: StoreModel,
    admissions: Admissions,
    limiter: Limiter,
    /// The provider's ledger (`None`: the trace has none, money is not judged).
    ledger: Option<Ledger>,
    /// Writes the store reported since its last call (they belong to the next one).
    writes: Vec<&'a TraceEvent>,
    /// Client requests sent and not yet answered.
    ops: BTreeMap<OpId, ops::OpRecord<'a>>,
    findings: Vec<(Finding, Vec<u64>)>,
    subjects: BTreeSet<Subject>,
    dropped: usize,
    /// Whether the store is unreachable now (a store outage fault).
    store_down: bool,
    /// Whether the waiting rooms' store is unreachable now (the rooms-down fault).
    rooms_down: bool,
    /// How many times the rooms' store went down so far.
    rooms_downs: u64,
    /// The service's counters as the store's answers predict them.
    tally: counters::Tally,
    /// Every instance's admission laws, as the model runs them.
    laws: laws::Laws,
    /// The sell-outs rooms' passes owe.
    sell_out: sell_out::SellOut,
    /// What the provider answered status reads.
    reads: provider_reads::ProviderReads,
    /// Refusals per kind, as answered and as predicted.
    refusals: RefusalTally,
}

impl<'a> Auditor<'a> {
    fn new(cfg: &'a ModelConfig, trace: &[TraceEvent]) -> Self {
        Self {
            cfg,
            store: StoreModel::new(),
            admissions: Admissions::default(),
            limiter: Limiter::default(),
            ledger: Ledger::recorded(trace).then(|| Ledger::of(trace)),
            writes: Vec::new(),
            ops: BTreeMap::new(),
            findings: Vec::new(),
            subjects: BTreeSet::new(),
            dropped: 0,
            store_down: false,
            rooms_down: false,
            rooms_downs: 0,
            tally: counters::Tally::default(),
            laws: laws::Laws::default(),
            sell_out: sell_out::SellOut::default(),
            reads: provider_reads::ProviderReads::default(),
            refusals: RefusalTally::default(),
        }
    }

    /// Notes `f`, witnessed by `seqs`, unless its subject already has a finding.
    fn report(&mut self, f: Finding, seqs: Vec<u64>) {
        if !self.subjects.insert(f.subject.clone()) {
            return;
        }
        if self.findings.len() >= MAX_REPORTED {
            self.dropped += 1;
            return;
        }
        self.findings.push((f, seqs));
    }

    fn step(&mut self, e: &'a TraceEvent) {
        if counters::may_cut_work(&e.kind) {
            self.tally.disturb();
        }
        match &e.kind {
            TraceKind::SeatChange(_) | TraceKind::OrderChange(_) | TraceKind::CompensationChange(_) => {
                self.writes.push(e)
            }
            TraceKind::Store { op_id, store_now_ms, call } => self.store_call(e.seq, *op_id, *store_now_ms, call),
            TraceKind::Room(r) => {
                if matches!(r, crate::trace::RoomEvent::Admitted { .. }) {
                    self.tally.admitted();
                }
                if let Some((event_id, what, read)) = self.sell_out.room(r) {
                    self.report(Finding::new(Subject::Room { event_id }, what), vec![read, e.seq]);
                }
                if let Some(what) = self.laws.observe(&self.cfg.admission_law, r) {
                    let event_id = EventId::from(r.event_id());
                    self.report(Finding::new(Subject::Room { event_id }, what), vec![e.seq]);
                }
                if let Some(what) = self.admissions.judge(r, self.cfg.epoch_ms + e.at_ms) {
                    let event_id = match r {
                        crate::trace::RoomEvent::Admitted { event_id, .. } => event_id.clone(),
                        _ => EventId::default(),
                    };
                    self.report(Finding::new(Subject::Room { event_id }, what), vec![e.seq]);
                }
                self.admissions.observe(r);
            }
            TraceKind::World(fact) => self.world(e.seq, fact),
            TraceKind::Payment(crate::trace::PaymentEvent::Read { payment_op_id, status }) => {
                self.reads.read(*payment_op_id, status.as_deref())
            }
            TraceKind::Invoke { op_id, client, op, host } => self.invoke(e, *op_id, client, op, *host),
            TraceKind::Ok { op_id, .. } | TraceKind::Fail { op_id, .. } | TraceKind::Unknown { op_id, .. } => {
                self.complete(e, *op_id)
            }
            TraceKind::ServiceCounters(got) => {
                for (counter, what) in self.tally.judge(got) {
                    let name = format!("metrics {counter}");
                    self.report(Finding::new(Subject::Call { name }, what), vec![e.seq]);
                }
            }
            TraceKind::Fault { kind: FaultEvent::StoreDown, .. } => self.store_down = true,
            TraceKind::Fault { kind: FaultEvent::StoreRestored, .. } => self.store_down = false,
            TraceKind::Fault { kind: FaultEvent::RoomsDown, .. } => {
                self.rooms_down = true;
                self.rooms_downs += 1;
                self.sell_out.excuse();
            }
            TraceKind::Fault { kind: FaultEvent::RoomsLost, .. } => {
                self.rooms_down = false;
                self.sell_out.excuse();
            }
            TraceKind::Fault { kind: FaultEvent::CrashAfterCommit | FaultEvent::HostRestarted, detail } => {
                self.sell_out.excuse();
                if let Some(host) = host_of(detail) {
                    self.limiter.forget(host);
                    self.laws.forget(host);
                }
            }
            _ => {}
        }
    }

    /// A fact the world made: the truth the rooms are held to; a refusal
    /// of the provider's genuine webhook is a wrong answer.
    fn world(&mut self, seq: u64, fact: &WorldFact) {
        if let WorldFact::WebhookRefused { payment_op_id, kind, host, status } = fact {
            let due = super::legitimate::webhook_refusal_due(&self.cfg.host_skew_ms, *host);
            self.refusals.webhook_refused(due);
            if !due {
                let what = format!("svc{host} refused the provider's genuine {kind} webhook with {status}");
                self.report(Finding::new(Subject::PaymentOp { payment_op_id: *payment_op_id }, what), vec![seq]);
            }
        }
        self.admissions.world(fact);
    }

    fn finish(mut self, snap: &Snapshot) -> Vec<Violation> {
        for (event_id, what) in self.admissions.out_of_order() {
            self.report(Finding::new(Subject::Room { event_id }, what), Vec::new());
        }
        for f in records::compare_final(&self.store, snap) {
            self.report(f, Vec::new());
        }
        if let Some(ledger) = &self.ledger {
            let comps = self.store.compensations.values().map(|c| (c.compensation_id, c.payment_op_id)).collect();
            for f in ledger.judge_refunds(&comps) {
                self.report(f, Vec::new());
            }
        }
        let mut out: Vec<Violation> = self
            .findings
            .into_iter()
            .map(|(f, seqs)| Violation::new(Invariant::Auditor, f.subject, f.detail, seqs))
            .collect();
        if self.dropped > 0 {
            let subject = Subject::Call { name: "auditor".into() };
            out.push(Violation::new(
                Invariant::Auditor,
                subject,
                format!("{} more disagreements not shown", self.dropped),
                vec![],
            ));
        }
        out
    }
}

/// The host index of a fault's detail (`svc<i> ...`), if it names a service host.
fn host_of(detail: &str) -> Option<u32> {
    detail.split_whitespace().next()?.strip_prefix("svc")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{RoomEvent, Trace};
    use booking::admission::room::Policy;
    use booking::model::UserId;

    /// A deployment of one host, its model's settings small and round.
    pub(super) fn cfg() -> Config {
        let audit = ModelConfig {
            epoch_ms: 0,
            hold_ttl_ms: 1_000,
            payment_ttl_ms: 1_000,
            max_held_seats_per_user: Some(8),
            hold_attempts_per_minute: 60,
            host_skew_ms: vec![0],
            min_latency_ms: 1,
            admission_secret: b"0123456789abcdef".to_vec(),
            webhook_secret: b"0123456789abcdef".to_vec(),
            max_body_bytes: 1_024,
            max_compensation_attempts: 3,
            max_compensation_unknown_attempts: 6,
            queue_poll_s: (2, 60),
            admission_law: Default::default(),
        };
        Config::new(10_000, 10_000).with_audit(audit)
    }

    fn room_trace(events: &[(i64, RoomEvent)]) -> Vec<TraceEvent> {
        let mut t = Trace::default();
        for (at_ms, e) in events {
            t.record(*at_ms, TraceKind::Room(e.clone())).unwrap();
        }
        t.into_events()
    }

    fn admitted(user: UserId) -> RoomEvent {
        RoomEvent::Admitted {
            event_id: "ev".into(),
            user,
            session_id: booking::model::SessionId::nil(),
            expires_at_ms: 9_000,
        }
    }

    #[test]
    fn admissions_out_of_order_before_opening_or_after_sell_out_are_found() {
        let opened = RoomEvent::Opened {
            event_id: "ev".into(),
            policy: Policy::Fifo,
            target_active_sessions: 5,
            opens_at_ms: 1_000,
            session_ttl_ms: 8_000,
            seed: String::new(),
        };
        let joined = |user: UserId, at: i64| RoomEvent::Joined { event_id: "ev".into(), user, tier: 0, now_ms: at };
        let details = |events: &[(i64, RoomEvent)]| -> Vec<String> {
            check_auditor(&Snapshot::default(), &room_trace(events), &cfg()).into_iter().map(|v| v.detail).collect()
        };
        let fair = [
            (0, opened.clone()),
            (0, joined("a".into(), 0)),
            (0, joined("b".into(), 0)),
            (1_000, admitted("a".into())),
            (1_000, admitted("b".into())),
        ];
        assert_eq!(details(&fair), Vec::<String>::new());
        let unfair = [
            (0, opened.clone()),
            (0, joined("a".into(), 0)),
            (0, joined("b".into(), 0)),
            (1_000, admitted("b".into())),
        ];
        assert!(details(&unfair)[0].contains("admission #1 went to b"), "{:?}", details(&unfair));
        let early = [(0, opened.clone()), (0, joined("a".into(), 0)), (999, admitted("a".into()))];
        assert!(details(&early)[0].contains("before ev's sale opened"));
        let sold = [
            (0, opened),
            (0, joined("a".into(), 0)),
            (1_000, RoomEvent::SoldOut { event_id: "ev".into() }),
            (1_000, admitted("a".into())),
        ];
        assert!(details(&sold)[0].contains("after ev sold out"));
    }

    #[test]
    fn a_store_refusal_only_a_bug_provokes_is_found() {
        let refused = |kind| crate::store_call::StoreCall::ReleaseUnresolved {
            payment_op_id: booking::model::PaymentOpId::nil(),
            reason: "payment unresolved at its deadline".into(),
            answer: Err(crate::store_call::Refusal { kind, message: String::new() }),
        };
        let details = |kind| -> Vec<String> {
            let mut t = Trace::default();
            let call = refused(kind);
            t.record(5, TraceKind::Store { op_id: None, store_now_ms: 5, call: Box::new(call) }).unwrap();
            check_auditor(&Snapshot::default(), &t.into_events(), &cfg()).into_iter().map(|v| v.detail).collect()
        };
        let early = details(booking::problem_kind::ProblemKind::DeadlineNotPassed);
        assert!(
            early.iter().any(|d| d.contains("deadline-not-passed, which a sound service never provokes")),
            "{early:?}"
        );
        let resolved = details(booking::problem_kind::ProblemKind::OrderNotOpen);
        assert!(!resolved.iter().any(|d| d.contains("never provokes")), "{resolved:?}");
    }
}
