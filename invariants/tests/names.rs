//! The scenarios crate mirrors names and limits of this crate and of the
//! booking core (to stay free of them); these tests keep the copies equal.

use invariants::{Classification, Invariant};

#[test]
fn scenario_invariant_names_are_the_invariants() {
    let ours: Vec<&str> = Invariant::ALL.iter().map(|i| i.as_str()).collect();
    assert_eq!(ours, scenarios::INVARIANT_NAMES);
}

#[test]
fn scenario_classification_names_are_the_classifications() {
    let ours: Vec<&str> = Classification::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(ours, scenarios::CLASSIFICATION_NAMES);
}

#[test]
fn scenario_limits_are_the_booking_limits() {
    use booking::model as m;
    assert_eq!(scenarios::MAX_HOLD_TTL_MS, m::MAX_HOLD_TTL_MS);
    assert_eq!(scenarios::MAX_PAYMENT_TTL_MS, m::MAX_PAYMENT_TTL_MS);
    assert_eq!(scenarios::MAX_SEATS_PER_HOLD, m::MAX_SEATS_PER_HOLD as i64);
    assert_eq!(scenarios::MAX_SEATS_PER_EVENT, m::MAX_SEATS_PER_EVENT as i64);
}

#[test]
fn scenario_path_names_are_the_paths() {
    let ours: Vec<&str> = invariants::paths::Path::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(ours, scenarios::PATH_NAMES);
}

#[test]
fn scenario_commit_point_names_are_the_commit_points() {
    let ours: Vec<&str> = booking::fault::CommitPoint::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(ours, scenarios::COMMIT_POINT_NAMES);
}
