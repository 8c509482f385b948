//! One executable state machine per record: [`seat`], [`order`], [`payment`]
//! (the payment operation) and [`compensation`]. Each is a pure function
//! from (before-image, cause, store time, [`Rules`](super::Rules)) to the
//! after-image or a named refusal, with the record's allowed-transition table
//! and its per-state field rules (the ones the migration's CHECK constraints
//! state) asserted inside it.
//!
//! This is the one place a transition is decided:
//! - `MemStore` writes exactly the after-image a machine returns;
//! - `PgStore` keeps its lock-in-seat-order, conditional `UPDATE … RETURNING`
//!   writes, and asserts that what `RETURNING` gave back equals the
//!   after-image the machine computes from the locked before-image
//!   ([`expect_written`]); a mismatch is an invariant breach, never a silent
//!   divergence;
//! - the multi-record checks of `decide` (all-or-nothing holds, the error a
//!   checkout of several seats answers) ask the seat machine seat by seat.
//!
//! The tables are asserted for sound rules only: a bug planted through the
//! fault seam (`fault-injection` builds) is, by design, a store that breaks
//! them, and the invariant checkers, which share none of this code, must
//! catch it. The field rules hold whatever is planted (PostgreSQL's CHECKs
//! would refuse the write otherwise).

pub mod compensation;
pub mod order;
pub mod payment;
pub mod seat;

/// Checks that `written` (what a conditional write returned, any order) is
/// exactly `expected` (the machine's after-images, any order), keyed by
/// `key`. `Err` names the first difference; PgStore turns it into an
/// invariant breach.
pub fn expect_written<T: PartialEq + std::fmt::Debug, K: Ord + std::fmt::Debug>(
    what: &str,
    mut expected: Vec<T>,
    mut written: Vec<T>,
    key: impl Fn(&T) -> K,
) -> Result<(), String> {
    expected.sort_by_key(&key);
    written.sort_by_key(&key);
    if expected.len() != written.len() {
        return Err(format!(
            "{what}: the store wrote {} records, its state machine decided {}",
            written.len(),
            expected.len()
        ));
    }
    for (e, w) in expected.iter().zip(&written) {
        if e != w {
            return Err(format!("{what} {:?}: the store wrote {w:?}, its state machine decided {e:?}", key(e)));
        }
    }
    Ok(())
}

/// Asserts that `seen` (the transitions a machine made when driven through
/// every cause from every state) is exactly `table`, and that `allowed`
/// answers the table for every pair of `all` states: every allowed row
/// reachable, nothing else.
#[cfg(test)]
pub(crate) fn assert_table_is_reached<S: Copy + Ord + std::fmt::Display + std::fmt::Debug>(
    table: &[(S, S)],
    seen: &std::collections::BTreeSet<(S, S)>,
    all: &[S],
    allowed: fn(S, S) -> bool,
) {
    let rows: std::collections::BTreeSet<(S, S)> = table.iter().copied().collect();
    assert_eq!(*seen, rows, "reachable transitions are exactly the table");
    for from in all {
        for to in all {
            assert_eq!(allowed(*from, *to), rows.contains(&(*from, *to)), "{from} -> {to}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expect_written_ignores_order_and_names_the_difference() {
        assert_eq!(expect_written("seat", vec![(1, 'a'), (2, 'b')], vec![(2, 'b'), (1, 'a')], |p| p.0), Ok(()));
        let e = expect_written("seat", vec![(1, 'a')], vec![(1, 'x')], |p| p.0).unwrap_err();
        assert!(e.contains("seat 1") && e.contains("'x'") && e.contains("'a'"), "{e}");
        let e = expect_written("seat", vec![(1, 'a')], vec![], |p| p.0).unwrap_err();
        assert!(e.contains("wrote 0 records") && e.contains("decided 1"), "{e}");
    }
}
