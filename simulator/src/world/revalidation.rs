//! Revalidating seat maps: a user remembers the last map it read of each
//! view (an event's whole map, or its seats in one state) with the map's entity
//! tag, and on a later look may ask `If-None-Match` in one of the forms
//! clients send (RFC 9110 §13.1.2): the tag as given, weak, in a list with a
//! stale tag, among empty list elements and whitespace, a stale tag alone,
//! `*`, a tag past ASCII (obs-text), a list as long as the service reads
//! and one byte longer (the documented bound, as the model states it), and malformed values the service must take as no condition. A `304`
//! says the remembered map is current.
//!
//! The decisions come from a generator of their own, so a user's other
//! choices are the same whether or not it revalidates.

use booking::model::{EventId, SeatId, SeatState};
use invariants::model::http::conditional::MAX_BYTES as MAX_IF_NONE_MATCH_BYTES;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Share of looks at a remembered view sent with `If-None-Match`.
pub const REVALIDATE_SHARE: f64 = 0.75;
/// Views one user remembers at most (the oldest-keyed is forgotten first).
pub const MAX_REMEMBERED_VIEWS: usize = 16;
/// `etag` after a long tag, `len_bytes` long in all.
fn padded(etag: &str, len_bytes: usize) -> String {
    let head = format!("{etag}, \"\"");
    assert!(len_bytes > head.len());
    let v = format!("{etag}, \"{}\"", "p".repeat(len_bytes - head.len()));
    debug_assert_eq!(v.len(), len_bytes);
    v
}

/// A tag no seat map of the library carries now (an event with no seats).
const STALE_TAG: &str = "\"sm-0-0\"";
/// Mixed into a user's seed for its revalidation generator.
const SEED_SALT: u64 = 0x5EE0_3A95_C0DE_7A65;

/// A seat a remembered map showed worth a look: its id and, when held, its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatSeen {
    /// The seat.
    pub seat_id: SeatId,
    /// `None`: available; `Some(ms)`: held until then (store-clock ms).
    pub held_until_ms: Option<i64>,
}

/// The views one user remembers and its revalidation choices.
#[derive(Debug)]
pub struct SeenMaps {
    /// By event and view (`None`: the whole map; a state: `?state=`).
    maps: BTreeMap<(String, Option<SeatState>), (String, Vec<SeatSeen>)>,
    rng: ChaCha8Rng,
}

impl SeenMaps {
    /// Nothing remembered yet; `seed` is the user's.
    pub fn new(seed: u64) -> Self {
        Self { maps: BTreeMap::new(), rng: ChaCha8Rng::seed_from_u64(seed ^ SEED_SALT) }
    }

    /// The `If-None-Match` value to send on a look at the view, if any: only
    /// for a remembered view, [`REVALIDATE_SHARE`] of the time.
    pub fn condition(&mut self, event_id: &EventId, view: Option<SeatState>) -> Option<String> {
        let (etag, _) = self.maps.get(&(event_id.to_string(), view))?;
        let etag = etag.clone();
        self.rng.random_bool(REVALIDATE_SHARE).then(|| form(&mut self.rng, &etag))
    }

    /// Remembers the view's map as read: its entity tag and its seats worth a look.
    pub fn remember(&mut self, event_id: &EventId, view: Option<SeatState>, etag: String, seats: Vec<SeatSeen>) {
        let key = (event_id.to_string(), view);
        if !self.maps.contains_key(&key) && self.maps.len() >= MAX_REMEMBERED_VIEWS {
            self.maps.pop_first();
        }
        self.maps.insert(key, (etag, seats));
    }

    /// The view's remembered seats (after a `304`).
    pub fn seats(&self, event_id: &EventId, view: Option<SeatState>) -> Option<&[SeatSeen]> {
        self.maps.get(&(event_id.to_string(), view)).map(|(_, seats)| seats.as_slice())
    }
}

/// One of the forms a client sends `etag` in, drawn uniformly.
fn form(rng: &mut ChaCha8Rng, etag: &str) -> String {
    let bare = etag.trim_matches('"');
    match rng.random_range(0..14) {
        0 => etag.to_string(),
        1 => format!("W/{etag}"),
        2 => format!("{STALE_TAG}, {etag}"),
        3 => format!(" \t{etag} "),
        4 => STALE_TAG.to_string(),
        5 => "\t* ".to_string(),
        6 => format!(", W/{STALE_TAG},\t, {etag} ,"),
        7 => format!("\"{bare},x\", {etag}"),
        8 => format!("\"{bare}-\u{e9}t\u{e9}\",{etag}"),
        // At the service's bound, and one byte past it (no condition).
        9 => padded(etag, MAX_IF_NONE_MATCH_BYTES),
        10 => padded(etag, MAX_IF_NONE_MATCH_BYTES + 1),
        // Malformed: no condition, a full answer.
        11 => bare.to_string(),
        12 => format!("*, {etag}"),
        _ => format!("{etag}x"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_remembered_views_are_revalidated_and_the_oldest_is_forgotten() {
        let mut maps = SeenMaps::new(7);
        assert_eq!(maps.condition(&"ev0".into(), None), None);
        for i in 0..=MAX_REMEMBERED_VIEWS {
            maps.remember(&EventId::new(format!("ev{i:02}")), None, "\"sm-1-1\"".into(), Vec::new());
        }
        assert!(maps.seats(&"ev00".into(), None).is_none(), "the oldest-keyed view is forgotten");
        assert!(maps.seats(&EventId::new(format!("ev{MAX_REMEMBERED_VIEWS:02}")), None).is_some());
        let sent = (0..200).filter_map(|_| maps.condition(&"ev01".into(), None)).count();
        assert!((100..200).contains(&sent), "about three looks in four revalidate: {sent}");
    }
}
