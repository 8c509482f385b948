//! Order and compensation transitions are checked in a world: an all-faults
//! seed's trace carries both kinds of change and passes their tables, and a
//! planted give-up that hides its order as a plain failure is reported as a
//! `compensating -> failed` order transition.

use booking::fault::Plant;
use invariants::{Invariant, TraceKind};
use simulator::world::plan;

#[test]
fn an_all_faults_seed_checks_order_and_compensation_transitions() {
    let p = plan::find("all-faults").expect("library scenario");
    let out = simulator::world::run(&p.world_for(0), 0);
    drop(std::panic::take_hook());
    let count = |f: fn(&TraceKind) -> bool| out.trace.iter().filter(|e| f(&e.kind)).count();
    assert!(count(|k| matches!(k, TraceKind::OrderChange(_))) > 100);
    assert!(count(|k| matches!(k, TraceKind::CompensationChange(_))) > 10);
    assert!(out.violations.is_empty(), "{:?}", out.violations);
}

#[test]
fn a_give_up_that_hides_its_order_is_an_order_transition_violation() {
    let mut p = plan::find("refund-failures").expect("library scenario");
    p.plant = Some(Plant::parse("refund-give-up-hides-order").expect("catalog entry"));
    let out = simulator::world::run(&p.world_for(0), 0);
    drop(std::panic::take_hook());
    let hidden: Vec<_> = out.violations.iter().filter(|v| v.invariant == Invariant::OrderTransition).collect();
    assert!(!hidden.is_empty(), "{:?}", out.violations);
    assert!(hidden.iter().all(|v| v.detail == "compensating -> failed is not an allowed transition"), "{hidden:?}");
}
