//! The knob table against the scenario type: every key has one row, and the
//! table is what validation, swarm draws and the README's key table use.

use scenarios::{Check, FaultKind, KNOBS, Scenario, Swarm, SwarmDraw, Value, find, knob, library, reference};
use serde_reflection::{ContainerFormat, Format, Registry, Tracer, TracerConfig};
use std::collections::BTreeSet;

const README_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/README.md");

/// Every key path of the scenario type, traced from its `Deserialize`:
/// leaves (a `{ min, max }` range and a list count as one) and optional tables.
fn type_keys() -> BTreeSet<String> {
    let mut tracer = Tracer::new(TracerConfig::default());
    tracer.trace_simple_type::<scenarios::Outcome>().expect("the outcome traces");
    tracer.trace_simple_type::<Scenario>().expect("the scenario type traces");
    let registry = tracer.registry().expect("every type traced");
    let mut out = BTreeSet::new();
    walk(&registry, "Scenario", "", &mut out);
    out
}

fn walk(registry: &Registry, type_name: &str, prefix: &str, out: &mut BTreeSet<String>) {
    let Some(ContainerFormat::Struct(fields)) = registry.get(type_name) else { panic!("{type_name} is not a struct") };
    for field in fields {
        let path = if prefix.is_empty() { field.name.clone() } else { format!("{prefix}.{}", field.name) };
        let (optional, format) = match &field.value {
            Format::Option(inner) => (true, inner.as_ref()),
            other => (false, other),
        };
        match format {
            Format::TypeName(t) if t != "RangeMs" && matches!(registry.get(t), Some(ContainerFormat::Struct(_))) => {
                if optional {
                    out.insert(path.clone());
                }
                walk(registry, t, &path, out);
            }
            _ => {
                out.insert(path);
            }
        }
    }
}

#[test]
fn every_key_of_the_scenario_type_has_exactly_one_row() {
    let rows: Vec<&str> = KNOBS.iter().map(|k| k.key).collect();
    let unique: BTreeSet<String> = rows.iter().map(|k| k.to_string()).collect();
    assert_eq!(unique.len(), rows.len(), "a key has two rows");
    let keys = type_keys();
    assert!(keys.len() > 80, "{keys:?}");
    let missing: Vec<_> = keys.difference(&unique).collect();
    let extra: Vec<_> = unique.difference(&keys).collect();
    assert!(missing.is_empty(), "keys of the scenario type without a row in knobs/table.rs: {missing:?}");
    assert!(extra.is_empty(), "rows of knobs/table.rs that are not keys of the scenario type: {extra:?}");
}

#[test]
fn the_readme_key_table_is_rendered_from_the_table() {
    let readme = std::fs::read_to_string(README_PATH).unwrap();
    let rendered = reference::splice(&readme).expect("the README has the knob table's markers");
    if std::env::var_os("HOLDFAST_BLESS").is_some() {
        std::fs::write(README_PATH, &rendered).unwrap();
        return;
    }
    assert!(
        rendered == readme,
        "scenarios/README.md's key table differs from knobs/table.rs: run HOLDFAST_BLESS=1 cargo test -p scenarios"
    );
}

/// A scenario with every key set: the README's example without its fault
/// tables, a waiting room, every fault kind's example table and the
/// optional keys.
fn every_key_set() -> Scenario {
    let readme = std::fs::read_to_string(README_PATH).unwrap();
    let start = readme.find("```toml\n").unwrap() + "```toml\n".len();
    let example = &readme[start..start + readme[start..].find("```").unwrap()];
    let mut s = Scenario::parse(example, "readme.toml").unwrap();
    s.faults = Default::default();
    let faults: String = FaultKind::ALL.iter().map(|k| format!("{}\n", k.example())).collect();
    let text = format!(
        "{}\n[waiting_room]\npolicy = \"priority\"\ntarget_active_sessions = 10\nsession_ttl_ms = 60000\n\
         opens_at_ms = 1000\nprior_session_ms = 5000\nmember_share = 0.2\nbypass_share = 0.1\npoll_max_s = 30\n\n{faults}",
        toml::to_string(&s).unwrap()
    );
    let mut s = Scenario::parse(&text, "every-key.toml").unwrap();
    s.service.max_refund_attempts = Some(5);
    s
}

/// A value `check` refuses, given the scenario's current value.
fn refused(check: Check, s: &Scenario, now: &Value) -> Option<Value> {
    match (check, now) {
        (Check::Count { max, .. } | Check::Duration { max, .. }, Value::Int(_)) => Some(Value::Int(max.of(s) + 1)),
        (Check::Probability, _) => Some(Value::Share(1.5)),
        (Check::Range { max }, Value::Range(_)) => {
            Some(Value::Range(scenarios::RangeMs { min: max.of(s), max: max.of(s) + 1 }))
        }
        (Check::Name { .. }, _) => Some(Value::Name("no-such-name".into())),
        (Check::Names { .. }, _) => Some(Value::Names(vec!["no-such-name".into()])),
        _ => None,
    }
}

#[test]
fn the_loader_refuses_what_each_row_refuses_naming_its_key() {
    let base = every_key_set();
    let mut refused_rows = 0;
    for knob in KNOBS.iter() {
        let Some(now) = (knob.access.get)(&base) else {
            assert!(matches!(knob.check, Check::Special(_)), "{}: not set by every_key_set()", knob.key);
            continue;
        };
        let Some(bad) = refused(knob.check, &base, &now) else { continue };
        let mut s = base.clone();
        (knob.access.set)(&mut s, bad);
        let text = toml::to_string(&s).unwrap();
        let e = Scenario::parse(&text, "my.toml").expect_err(knob.key).to_string();
        assert!(e.contains(&format!("`{}", knob.key)), "{}: refused for another key: {e}", knob.key);
        refused_rows += 1;
    }
    assert!(refused_rows > 60, "{refused_rows} rows refused");
}

#[test]
fn every_row_reads_back_what_it_writes_over_the_library() {
    for s in library().into_iter().chain([every_key_set()]) {
        for knob in KNOBS.iter() {
            let Some(v) = (knob.access.get)(&s).filter(|v| *v != Value::Table) else { continue };
            let mut t = s.clone();
            (knob.access.set)(&mut t, v.clone());
            assert_eq!(t, s, "{}: {} wrote something else than it read ({v:?})", s.name, knob.key);
        }
    }
}

#[test]
fn each_swarm_row_belongs_to_its_own_fault_table() {
    for k in KNOBS.iter() {
        let kind = match k.swarm {
            Swarm::Switch(kind) => {
                assert_eq!(k.key, format!("faults.{}", kind.as_str()));
                continue;
            }
            Swarm::Scale(kind) | Swarm::ScaleMs(kind) => kind,
            Swarm::Keep | Swarm::Lenient => continue,
        };
        assert!(k.key.starts_with(&format!("faults.{}.", kind.as_str())), "{} scales with {kind:?}", k.key);
    }
    // Every fault kind's table is switched by its row.
    for kind in FaultKind::ALL {
        let row = knob(&format!("faults.{}", kind.as_str())).expect("a row per fault table");
        assert_eq!(row.swarm, Swarm::Switch(*kind));
    }
}

#[test]
fn a_swarm_seed_scales_every_probability_its_row_scales() {
    let swarm = find("swarm").unwrap();
    for seed in 0..16 {
        let draw = SwarmDraw::new(seed);
        let mut drawn = swarm.clone();
        drawn.faults = swarm.faults_for_seed(seed);
        for k in KNOBS.iter() {
            let Swarm::Scale(kind) = k.swarm else { continue };
            let (Some(Value::Share(base)), after) = ((k.access.get)(&swarm), (k.access.get)(&drawn)) else { continue };
            match draw.weight(kind) {
                Some(w) => assert_eq!(after, Some(Value::Share((base * w).clamp(0.0, 1.0))), "{} seed {seed}", k.key),
                None => assert_eq!(after, None, "{} seed {seed}: its table is off", k.key),
            }
        }
    }
}
