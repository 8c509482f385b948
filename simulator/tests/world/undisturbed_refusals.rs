//! Goodput: in an undisturbed seed of every scenario (every fault muted),
//! the refusals of each kind clients got are exactly the refusals of that
//! kind the model predicts for the same requests, and every genuine webhook
//! is accepted. A service that refuses well-formed holds, or the provider's
//! genuine webhooks, shows up there even when nothing else goes wrong.

use booking::fault::Plant;
use booking::problem_kind::ProblemKind;
use invariants::checks::RefusalTally;
use scenarios::FaultKind;
use simulator::world::plan::{self, Plan};
use std::collections::BTreeSet;

/// `plan` with every fault muted.
fn undisturbed(mut plan: Plan) -> Plan {
    plan.muted = FaultKind::ALL.to_vec();
    plan
}

/// Runs `plan`'s `seed`; its violations' names and its refusal tally.
fn tally(plan: &Plan, seed: u64) -> (BTreeSet<String>, RefusalTally) {
    let out = simulator::world::run(&plan.world_for(seed), seed);
    drop(std::panic::take_hook());
    assert!(out.error.is_none(), "{} seed {seed} ran: {:?}", plan.name, out.error);
    let (snap, cfg) = *out.judged.expect("a judged run");
    let audit = invariants::checks::audit(&snap, &out.trace, &cfg).expect("an audited deployment");
    (out.violations.iter().map(|v| v.invariant.to_string()).collect(), audit.refusals)
}

#[test]
fn in_an_undisturbed_seed_of_every_scenario_refusals_per_kind_are_the_models() {
    let mut kinds_seen = BTreeSet::new();
    let mut judged = 0;
    for p in plan::library().into_iter().filter(|p| !p.expect_violation) {
        let name = p.name.clone();
        let (violated, t) = tally(&undisturbed(p), 0);
        assert!(violated.is_empty(), "{name} seed 0 undisturbed: {violated:?}");
        assert!(
            t.agrees(),
            "{name} seed 0 undisturbed: refusals (kind, observed, predicted) {:?}; {t:?}",
            t.differences()
        );
        assert_eq!(t.webhooks_refused, 0, "{name}: no clock is skewed, so no genuine webhook is refused");
        kinds_seen.extend(t.observed.keys().copied());
        judged += 1;
    }
    assert!(judged >= 20, "the library's scenarios that pass: {judged}");
    // The undisturbed workload still meets the everyday refusals.
    for kind in
        [ProblemKind::SeatUnavailable, ProblemKind::HoldLimit, ProblemKind::HoldNotFound, ProblemKind::InvalidInput]
    {
        assert!(kinds_seen.contains(&kind), "{kind} refused somewhere: {kinds_seen:?}");
    }
}

#[test]
fn a_service_that_refuses_well_formed_holds_refuses_more_than_predicted() {
    let mut p = undisturbed(plan::find("adjacent-seats").expect("library scenario"));
    p.plant = Some(Plant::HoldNeedsSortedSeats);
    let (violated, t) = tally(&p, 0);
    assert!(violated.contains("legitimate-accepted") && violated.contains("auditor"), "{violated:?}");
    let invalid = t.differences().into_iter().find(|(k, _, _)| *k == ProblemKind::InvalidInput);
    assert!(matches!(invalid, Some((_, observed, predicted)) if observed > predicted), "{:?}", t.differences());
}

#[test]
fn a_service_that_refuses_genuine_webhooks_has_refusals_without_cause() {
    // Its duplicates are what the planted guard refuses: the scenario keeps its faults.
    let mut p = plan::find("duplicate-webhooks").expect("library scenario");
    p.plant = Some(Plant::ReplayedWebhookRefused);
    let (violated, t) = tally(&p, 0);
    assert!(violated.contains("legitimate-accepted"), "{violated:?}");
    assert!(t.webhooks_refused > t.webhooks_refusal_due, "{t:?}");
    assert!(!t.agrees());
}
