//! The checkers and the model judge by the world's own truth. Every fact the
//! world records about what it made (`WorldFact`: the credentials it issued,
//! the rooms it asked for, its probers, its deliberate misuses, its
//! provider's genuine webhooks) is altered, one kind at a time, in passing
//! seeds' traces, as a service that acted on a wrong value of it would look;
//! the altered trace must fail. A checker or a model that took the fact from
//! the service's own word (the tier the rooms say they assigned, the room
//! they say they opened, a user's name) would not see the difference.
//! `alter` matches every kind of fact: a new kind does not compile until it
//! says how it is tested.

use invariants::Invariant;
use invariants::trace::{TraceEvent, TraceKind, WorldFact};
use simulator::world::plan;
use std::collections::BTreeSet;

/// How a fact is altered: changed, dropped, dropped with every fact of its
/// kind, or a new fact put next to it.
enum Alteration {
    Changed(WorldFact),
    Dropped,
    DroppedWithItsKind,
    Inserted(WorldFact),
}

/// The alteration of `fact` a judge of the world's truth must notice.
fn alter(fact: &WorldFact) -> Alteration {
    match fact {
        // The world says this member is of the public: the service's
        // member tier is then one it invented.
        WorldFact::Credential { user, tier } => {
            Alteration::Changed(WorldFact::Credential { user: user.clone(), tier: tier + 1 })
        }
        // The world asked for one session fewer than the room opened with.
        WorldFact::RoomAsked { event_id, policy, target_active_sessions, opens_at_ms, session_ttl_ms } => {
            Alteration::Changed(WorldFact::RoomAsked {
                event_id: event_id.clone(),
                policy: *policy,
                target_active_sessions: target_active_sessions - 1,
                opens_at_ms: *opens_at_ms,
                session_ttl_ms: *session_ttl_ms,
            })
        }
        // Without the facts, the probers' malformed requests are users'.
        WorldFact::Prober { .. } => Alteration::DroppedWithItsKind,
        // Without the fact, the misuse's refusal is a good request's.
        WorldFact::Misuse { .. } => Alteration::Dropped,
        WorldFact::WebhookRefused { .. } => Alteration::Dropped,
    }
}

/// A refusal of the provider's genuine webhook, on host 0.
fn webhook_refused(trace: &[TraceEvent]) -> WorldFact {
    let payment_op_id = trace
        .iter()
        .find_map(|e| match &e.kind {
            TraceKind::Payment(invariants::trace::PaymentEvent::Charged { payment_op_id, .. }) => Some(*payment_op_id),
            _ => None,
        })
        .expect("a seed with a charge");
    WorldFact::WebhookRefused { payment_op_id, kind: "payment_succeeded".into(), host: 0, status: 400 }
}

/// `trace` with the fact at `at` altered, seqs renumbered.
fn altered(trace: &[TraceEvent], at: usize, how: Alteration) -> Vec<TraceEvent> {
    let mut out = trace.to_vec();
    match how {
        Alteration::Changed(f) => out[at].kind = TraceKind::World(f),
        Alteration::Dropped => {
            out.remove(at);
        }
        Alteration::DroppedWithItsKind => {
            let kind = match &trace[at].kind {
                TraceKind::World(f) => kind_of(f),
                _ => unreachable!("facts only"),
            };
            out.retain(|e| !matches!(&e.kind, TraceKind::World(f) if kind_of(f) == kind));
        }
        Alteration::Inserted(f) => {
            out.insert(at + 1, TraceEvent { seq: 0, at_ms: trace[at].at_ms, kind: TraceKind::World(f) })
        }
    }
    for (seq, e) in out.iter_mut().enumerate() {
        e.seq = seq as u64;
    }
    out
}

/// The judges that read each kind of fact: each must notice its alteration.
fn judges_of(kind: &str) -> &'static [Invariant] {
    match kind {
        "credential" | "room-asked" => &[Invariant::AdmissionOrder, Invariant::Auditor],
        "webhook-refused" => &[Invariant::LegitimateAccepted, Invariant::Auditor],
        _ => &[Invariant::LegitimateAccepted],
    }
}

/// The kind of a fact, for the tally of kinds tested.
fn kind_of(f: &WorldFact) -> &'static str {
    match f {
        WorldFact::Credential { .. } => "credential",
        WorldFact::RoomAsked { .. } => "room-asked",
        WorldFact::Prober { .. } => "prober",
        WorldFact::Misuse { .. } => "misuse",
        WorldFact::WebhookRefused { .. } => "webhook-refused",
    }
}

/// Judges the alteration of the first `per_kind` facts of each of `kinds`
/// in a passing seed of `scenario` (where the facts of those kinds bear on
/// what happened); returns the kinds tested.
fn every_fact_counts(scenario: &str, kinds: &[&str], per_kind: usize) -> BTreeSet<&'static str> {
    let p = plan::find(scenario).expect("library scenario");
    let out = simulator::world::run(&p.world_for(0), 0);
    drop(std::panic::take_hook());
    assert!(out.violations.is_empty(), "{scenario} seed 0 passes: {:?}", out.violations);
    let (snap, cfg) = *out.judged.expect("judged");
    let mut tested = BTreeSet::new();
    let mut seen: Vec<&'static str> = Vec::new();
    let facts: Vec<(usize, WorldFact)> = out
        .trace
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            TraceKind::World(f) => Some((i, f.clone())),
            _ => None,
        })
        .collect();
    // A webhook refusal is never in a passing seed: put one after the first fact.
    let inserted = facts.first().map(|(i, _)| (*i, Alteration::Inserted(webhook_refused(&out.trace))));
    let alterations =
        facts.iter().map(|(i, f)| (*i, alter(f), kind_of(f))).chain(inserted.map(|(i, a)| (i, a, "webhook-refused")));
    for (at, how, kind) in alterations {
        if !kinds.contains(&kind) || seen.iter().filter(|k| **k == kind).count() >= per_kind {
            continue;
        }
        seen.push(kind);
        let trace = altered(&out.trace, at, how);
        let noticed: BTreeSet<Invariant> =
            invariants::check_all(&snap, &trace, &cfg).iter().map(|v| v.invariant).collect();
        for judge in judges_of(kind) {
            assert!(noticed.contains(judge), "{scenario}: the {kind} fact at seq {at} altered; {judge} did not notice");
        }
        tested.insert(kind);
    }
    tested
}

#[test]
fn every_fact_of_the_world_is_one_the_judges_hold_the_service_to() {
    let mut tested = every_fact_counts("priority-members", &["credential", "room-asked", "webhook-refused"], 3);
    tested.extend(every_fact_counts("api-surface", &["prober"], 1));
    tested.extend(every_fact_counts("adjacent-seats", &["misuse"], 3));
    let every: BTreeSet<&str> = ["credential", "room-asked", "prober", "misuse", "webhook-refused"].into();
    assert_eq!(tested, every, "every kind of fact was altered in some seed");
}
