//! The probes: requests as written, one per way the surface refuses (and
//! a few that must succeed), each named for what it presents. What each
//! must be answered is the model's to say ([`invariants::model::http`]),
//! not this list's.

use super::{Probe, ProberKit};
use booking::http::api::{
    MAX_LISTED_SEATS, MAX_SEAT_RANGE_FIRST, MAX_SEAT_RANGE_LEN, MAX_SEAT_RANGE_PREFIX_LEN, MAX_SEAT_RANGES,
};
use booking::model::UserId;
use invariants::trace::Credential;
use serde_json::json;

/// A seat id no event has.
const NO_SEAT: &str = "no-such-seat";
/// An event id no scenario creates.
const NO_EVENT: &str = "no-such-event";

/// Every probe of `kit`'s world, for prober `user`.
pub fn all(kit: &ProberKit, user: &UserId) -> Vec<Probe> {
    let mut out = surface(kit);
    out.extend(store_and_operations(kit));
    out.extend(super::flows::webhooks(kit, user));
    if kit.room.is_none() {
        // Joining a room's queue makes the prober a waiting user; without a room, it is refused.
        out.push(Probe::user("POST", format!("/v1/events/{}/queue", kit.events[0].0)));
    }
    out
}

/// The probes' event, its holds' path, and its `i`-th seat (cycling).
fn target(kit: &ProberKit) -> (&str, String, impl Fn(usize) -> String + '_) {
    let (ev, seats) = &kit.events[0];
    (ev.as_str(), format!("/v1/events/{ev}/holds"), move |i: usize| seats[i % seats.len()].to_string())
}

/// A hold's body naming `ids`.
fn hold_body(ids: Vec<String>) -> String {
    json!({ "seat_ids": ids }).to_string()
}

/// The routing, the credentials, the body and the path, each presented wrong.
fn surface(kit: &ProberKit) -> Vec<Probe> {
    let (ev, holds, seat) = target(kit);
    vec![
        // Routing and credentials.
        Probe::user("GET", "/v1/no-such-route"),
        Probe::user("PUT", format!("/v1/events/{ev}/seats")),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).as_(Credential::None),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).as_(Credential::Garbage("not-a-token".into())),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).as_(Credential::Expired),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).as_(Credential::Forged),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).as_(Credential::Header("Basic dXNlcjpwdw==".into())),
        Probe::user("POST", holds.clone())
            .as_(Credential::Scoped(vec![super::SCOPED_TO.into()]))
            .json(hold_body(vec![seat(0)])),
        Probe::user("POST", "/v1/events")
            .json(json!({ "event_id": ev, "seat_ids": [seat(0)], "price_cents": 100 }).to_string()),
        Probe::user("GET", "/v1/admin/unresolved"),
        Probe::user("GET", "/v1/admin/unresolved").as_(Credential::Admin),
        // The body and the path.
        Probe::user("POST", holds.clone()).json("{"),
        Probe::user("POST", holds.clone()).json(json!({ "seat_ids": [seat(0)], "extra": 1 }).to_string()),
        Probe { body: Some(hold_body(vec![seat(0)])), ..Probe::user("POST", holds.clone()) },
        Probe::user("POST", holds.clone()).header("content-type", "text/plain").json(hold_body(vec![seat(0)])),
        Probe::user("POST", holds.clone())
            .json(format!("{{\"seat_ids\":[\"{}\"]}}", "x".repeat(kit.max_body_bytes + 1))),
        Probe::user("POST", "/v1/events/bad!id/holds").json(hold_body(vec![seat(0)])),
        Probe::user("GET", format!("/v1/events/{ev}/seats?state=nope")),
        Probe::user("GET", format!("/v1/events/{ev}/seats?color=red")),
        Probe::user("GET", format!("/v1/events/{ev}/seats?state=available")),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).header("if-none-match", "*"),
        Probe::user("GET", format!("/v1/events/{ev}/seats")).header("if-none-match", "\"sm-0-0\""),
        Probe::user("DELETE", format!("{holds}/not-a-uuid")),
        Probe::user("GET", "/v1/orders/not-a-uuid"),
        Probe::user("GET", format!("/v1/orders/{}", uuid::Uuid::from_u128(0xdead_beef))),
        Probe::user("POST", format!("{holds}/{}/checkout", uuid::Uuid::from_u128(7))).json(hold_body(vec![seat(0)])),
    ]
}

/// The store's input rules and records, operations and the waiting room's endpoints.
fn store_and_operations(kit: &ProberKit) -> Vec<Probe> {
    let (ev, holds, seat) = target(kit);
    vec![
        // The store's input rules and records.
        Probe::user("POST", format!("/v1/events/{NO_EVENT}/holds")).json(hold_body(vec![seat(0)])),
        Probe::user("POST", holds.clone()).json(hold_body(vec![NO_SEAT.into()])),
        Probe::user("POST", holds.clone()).json(hold_body((0..9).map(|i| format!("{NO_SEAT}-{i}")).collect())),
        Probe::user("POST", holds.clone()).json(hold_body(vec![seat(0), seat(0)])),
        Probe::user("POST", holds.clone()).json(hold_body(vec![])),
        Probe::user("POST", holds.clone()).json(hold_body(vec!["x".repeat(65)])),
        Probe::user("POST", "/v1/events")
            .as_(Credential::Admin)
            .json(json!({ "event_id": ev, "seat_ids": [seat(0)], "price_cents": 100 }).to_string()),
        // An event's seats by range: each rule at its edge and past it; overlap is one seat.
        created(ranged(json!([
            { "prefix": "A-", "first": 1, "count": 3, "width": 2 },
            { "prefix": "A-", "first": 2, "count": 3, "width": 2 },
            { "first": 9, "count": 2 },
            { "prefix": "p".repeat(MAX_SEAT_RANGE_PREFIX_LEN), "first": MAX_SEAT_RANGE_FIRST, "count": MAX_SEAT_RANGE_LEN, "width": 9 },
        ]))),
        created(ranged(json!([{ "prefix": "p".repeat(MAX_SEAT_RANGE_PREFIX_LEN + 1), "first": 1, "count": 1 }]))),
        created(ranged(json!([{ "prefix": "a b", "first": 1, "count": 1 }]))),
        created(ranged(json!([{ "first": 5, "count": 0 }]))),
        created(ranged(json!([{ "first": 5, "count": MAX_SEAT_RANGE_LEN + 1 }]))),
        created(ranged(json!([{ "first": MAX_SEAT_RANGE_FIRST + 1, "count": 1 }]))),
        created(ranged(json!([{ "first": 1, "count": 1, "width": 10 }]))),
        created(ranged(json!([{ "first": 1, "last": 1 }]))),
        created(ranged(json!((0..=MAX_SEAT_RANGES).map(|i| json!({ "first": i, "count": 1 })).collect::<Vec<_>>()))),
        // One listed seat more than a body may list.
        created(json!({ "event_id": "listed", "seat_ids": (0..=MAX_LISTED_SEATS).map(|i| format!("l{i}")).collect::<Vec<_>>(), "price_cents": 100 }).to_string()),
        // Integers written as floats: integral ones up to 2^53, and past it.
        created(ranged(json!([{ "prefix": "F-", "first": 1.0, "count": 2, "width": 2.0 }]))),
        created(priced("a", "5000.0")),
        created(priced("b", "4.5e3")),
        created(priced("c", "100.5")),
        created(priced("d", "9007199254740992.0")),
        created(priced("e", "9007199254740994.0")),
        created(priced("f", "1e19")),
        created(priced("g", "10000000000000000000")),
        created(priced("h", "-1.0")),
        // Operations and the waiting room's endpoints.
        Probe::user("GET", "/healthz").as_(Credential::None),
        Probe::user("GET", "/livez").as_(Credential::None),
        Probe::user("GET", "/readyz").as_(Credential::None),
        Probe::user("GET", "/metrics").as_(Credential::None),
        Probe::user("GET", "/openapi.json").as_(Credential::None),
        Probe::user("GET", format!("/v1/events/{ev}/queue")),
        Probe::user("GET", format!("/v1/events/{ev}/queue/lottery")),
        Probe::user("PUT", format!("/v1/events/{ev}/waiting-room")).json(room_body("not a time", 10)),
        Probe::user("PUT", format!("/v1/events/{ev}/waiting-room"))
            .as_(Credential::Admin)
            .json(room_body("not a time", 10)),
        Probe::user("PUT", format!("/v1/events/{ev}/waiting-room"))
            .as_(Credential::Admin)
            .json(room_body("2026-01-01T00:00:00Z", 0)),
        Probe::user("PUT", format!("/v1/events/{NO_EVENT}/waiting-room"))
            .as_(Credential::Admin)
            .json(room_body("2026-01-01T00:00:00Z", 10)),
    ]
}

/// A `CreateEvent` body of `ranges` (and one listed seat) for the event `ranged`.
fn ranged(ranges: serde_json::Value) -> String {
    json!({ "event_id": "ranged", "seat_ids": ["VIP"], "seat_ranges": ranges, "price_cents": 100 }).to_string()
}

/// A `CreateEvent` body for the event `priced-<name>` with `price_cents` written as `price`.
fn priced(name: &str, price: &str) -> String {
    format!(r#"{{"event_id":"priced-{name}","seat_ids":["VIP"],"price_cents":{price}}}"#)
}

/// An operator's event creation with `body`.
fn created(body: String) -> Probe {
    Probe::user("POST", "/v1/events").as_(Credential::Admin).json(body)
}

fn room_body(opens_at: &str, target: u32) -> String {
    json!({ "policy": "fifo", "opens_at": opens_at, "target_active_sessions": target }).to_string()
}
