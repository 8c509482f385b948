//! Seat maps on the real stack (served from Redis or PostgreSQL), judged on
//! the client history:
//!
//! - `seat-map-valid`: every `200` seat map is a map of the event asked
//!   for, each seat with a state and a version: a corrupted or poisoned
//!   cache entry is a miss, never an answer;
//! - `cached-read-bound`: no seat map shows a seat at a version older than
//!   one a client had already been shown (by a hold's answer or another map)
//!   more than the cache's entry lifetime, plus [`SLACK_MS`], before the read
//!   was sent (docs/RUNNING_BOOKINGD.md: the lifetime bounds staleness).
//!
//! Versions are the store's, so no clock but the harness's is involved.

use super::client::{Op, Outcome};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Every seat map served is a whole map of its event.
pub const VALID: &str = "seat-map-valid";
/// No seat map is staler than the cache's lifetime allows.
pub const BOUND: &str = "cached-read-bound";
/// What the bound allows beyond the entry lifetime, in ms: an entry is
/// written after the store read it was made from, and on a loaded chaos
/// machine that read may be slow (a pool wait after a restart).
pub const SLACK_MS: u64 = 1_000;

/// `seat_id -> version` of a list of seats (`[{seat_id, version, ..}]`), or
/// `None` when any entry lacks them.
fn versions(seats: &Value) -> Option<BTreeMap<String, i64>> {
    seats
        .as_array()?
        .iter()
        .map(|s| Some((s.get("seat_id")?.as_str()?.to_string(), s.get("version")?.as_i64()?)))
        .collect()
}

/// What the history keeps of a seat-map answer: its event and each seat's
/// version, or `{"malformed": true}` when it is not a seat map. For
/// [`super::client::Api::send_keeping`].
pub fn map_fact(body: &Value) -> Option<Value> {
    let event = body.get("event_id").and_then(Value::as_str);
    let states_ok = body
        .get("seats")
        .and_then(Value::as_array)
        .is_some_and(|seats| seats.iter().all(|s| s.get("state").and_then(Value::as_str).is_some()));
    match (event, versions(body.get("seats").unwrap_or(&Value::Null))) {
        (Some(event), Some(v)) if states_ok && !v.is_empty() => Some(json!({ "event_id": event, "versions": v })),
        _ => Some(json!({ "malformed": true })),
    }
}

/// The versions a hold answer shows of its seats (`seats: [{seat_id, version}]`).
pub fn hold_versions(body: &Value) -> Option<Value> {
    versions(body.get("seats")?).map(|v| json!(v))
}

/// The event a request names (`… /v1/events/E/…`).
fn event_of(request: &str) -> Option<&str> {
    request.split_once("/v1/events/")?.1.split('/').next()
}

/// One client's sight of a seat's version, answered at `end_ms`.
struct Seen<'a> {
    end_ms: u64,
    version: i64,
    op: &'a Op,
}

/// Every `(event, seat)`'s sights in `ops` (granted holds and seat maps), by answer time.
fn sights(ops: &[Op]) -> BTreeMap<(&str, &str), Vec<Seen<'_>>> {
    let mut seen: BTreeMap<(&str, &str), Vec<Seen<'_>>> = BTreeMap::new();
    for op in ops {
        let shown = match (&op.outcome, &op.detail, event_of(&op.request)) {
            (Outcome::Status(201), Some(d), Some(e)) if op.request.ends_with("/holds") => {
                d.get("versions").map(|v| (e, v))
            }
            (Outcome::Status(200), Some(d), Some(e)) if op.request.ends_with("/seats") => {
                d.get("versions").map(|v| (e, v))
            }
            _ => None,
        };
        let Some((event, Some(versions))) = shown.map(|(e, v)| (e, v.as_object())) else { continue };
        for (seat, v) in versions {
            let Some(version) = v.as_i64() else { continue };
            seen.entry((event, seat.as_str())).or_default().push(Seen { end_ms: op.end_ms, version, op });
        }
    }
    for list in seen.values_mut() {
        list.sort_by_key(|s| s.end_ms);
    }
    seen
}

/// Judges the seat maps of `ops` against an entry lifetime of
/// `cache_ttl_ms`: `(invariant, what)` per finding, one per answer.
pub fn judge(ops: &[Op], cache_ttl_ms: u64) -> Vec<(&'static str, String)> {
    let seen = sights(ops);
    let mut found = Vec::new();
    for op in ops.iter().filter(|op| op.outcome == Outcome::Status(200) && op.request.ends_with("/seats")) {
        let Some(event) = event_of(&op.request) else { continue };
        let Some(fact) = &op.detail else { continue };
        if fact.get("malformed").is_some() || fact["event_id"].as_str() != Some(event) {
            found.push((
                VALID,
                format!(
                    "{} was served a seat map of {event} that is not one by bookingd {} at {} ms",
                    op.client, op.slot, op.end_ms
                ),
            ));
            continue;
        }
        let Some(cutoff_ms) = op.start_ms.checked_sub(cache_ttl_ms + SLACK_MS) else { continue };
        let stale = fact["versions"].as_object().into_iter().flatten().find_map(|(seat, v)| {
            let shown = v.as_i64()?;
            let newest = seen
                .get(&(event, seat.as_str()))?
                .iter()
                .take_while(|s| s.end_ms <= cutoff_ms)
                .max_by_key(|s| s.version)?;
            (newest.version > shown).then(|| (seat.clone(), shown, newest))
        });
        if let Some((seat, shown, newest)) = stale {
            found.push((
                BOUND,
                format!(
                    "{} was shown seat {event}/{seat} at version {shown} by bookingd {} at {} ms, though {} had been shown version {} at {} ms, more than {} ms before",
                    op.client, op.slot, op.start_ms, newest.op.client, newest.version, newest.end_ms, cache_ttl_ms + SLACK_MS
                ),
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(request: &str, times_ms: (u64, u64), status: u16, detail: Option<Value>) -> Op {
        Op::answered("user1", request, times_ms, status, detail)
    }

    fn map(start_ms: u64, version: i64) -> Op {
        let body = json!({"event_id": "e", "seats": [{"seat_id": "1A", "state": "held", "version": version}]});
        op("GET /v1/events/e/seats", (start_ms, start_ms + 5), 200, map_fact(&body))
    }

    fn hold(end_ms: u64, version: i64) -> Op {
        let versions = hold_versions(&json!({"seats": [{"seat_id": "1A", "version": version}]}));
        op("POST /v1/events/e/holds", (end_ms - 5, end_ms), 201, Some(json!({ "versions": versions })))
    }

    #[test]
    fn a_map_older_than_the_bound_is_found_and_one_within_it_is_not() {
        let ttl = 1_000;
        let bound = ttl + SLACK_MS;
        assert!(judge(&[hold(100, 3), map(100 + bound - 1, 2)], ttl).is_empty(), "within the bound");
        assert!(judge(&[hold(100, 3), map(100 + bound, 3)], ttl).is_empty(), "fresh");
        let found = judge(&[hold(100, 3), map(100 + bound, 2)], ttl);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, BOUND);
        let found = judge(&[map(0, 4), map(100 + bound, 2)], ttl);
        assert_eq!(found.len(), 1, "another map's sight counts too");
    }

    #[test]
    fn a_map_that_is_not_one_is_found() {
        for body in [
            Value::Null,
            json!({"event_id": "e", "seats": []}),
            json!({"event_id": "f", "seats": [{"seat_id": "1A", "state": "held", "version": 1}]}),
        ] {
            let found = judge(&[op("GET /v1/events/e/seats", (0, 5), 200, map_fact(&body))], 1_000);
            assert_eq!(found.len(), 1, "{body}");
            assert_eq!(found[0].0, VALID);
        }
        assert!(judge(&[map(0, 1)], 1_000).is_empty());
        assert_eq!(event_of("GET /v1/events/ev0-1/seats"), Some("ev0-1"));
    }
}
