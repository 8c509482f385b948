//! The JSON bodies of the HTTP API, shared by the service, its clients and
//! the simulator.

use crate::model::{
    Booking, BookingId, CompensationKind, CompensationStatus, EventId, HoldToken, Order, OrderId, OrderStatus, Seat,
    SeatId, SeatState,
};
use crate::store::{HeldSeat, HoldGrant};
use serde::{Deserialize, Serialize};

/// `POST /v1/events` (admin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateEventBody {
    /// The event id.
    pub event_id: EventId,
    /// Its seats, listed: distinct, at most [`MAX_LISTED_SEATS`] (may be
    /// empty when `seat_ranges` name them).
    #[serde(default)]
    pub seat_ids: Vec<SeatId>,
    /// Its seats, as numbered ranges (rows): for events too large to list in
    /// one body. The event's seats are the union of `seat_ids` and every
    /// range's: a seat two ranges (or a range and the list) both name is one seat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub seat_ranges: Vec<SeatRange>,
    /// Price per seat, cents.
    #[serde(deserialize_with = "json_int::de")]
    pub price_cents: i64,
}

/// JSON Schema's `integer` is any number with no fractional part, `700.0`
/// included (the document says `integer`; outside clients and fuzzers send
/// such numbers). serde refuses a float for an integer field, so integer
/// fields of request bodies read through this: an integral number in the
/// type's range is accepted (written as a float, up to 2^53 in magnitude),
/// anything else is the usual 400.
pub(crate) mod json_int {
    use serde::de::{Deserialize, Deserializer, Error};

    /// The largest magnitude of an integral number written as a float
    /// (`5000.0`, `1.5e3`) that is read: 2^53, past which a float no longer
    /// holds every integer (RFC 7493 §2.2), so it may not be the number the
    /// client wrote.
    pub const MAX_FLOAT_INT: f64 = 9_007_199_254_740_992.0;

    /// Reads an integral JSON number into `T`.
    pub fn de<'de, D, T>(d: D) -> Result<T, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<i128>,
    {
        let n = serde_json::Number::deserialize(d)?;
        let wide: Option<i128> = if let Some(v) = n.as_i64() {
            Some(v.into())
        } else if let Some(v) = n.as_u64() {
            Some(v.into())
        } else {
            n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() <= MAX_FLOAT_INT).map(|f| f as i128)
        };
        wide.and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| D::Error::custom(format!("{n} is not an integer in range")))
    }

    /// Reads an optional integral JSON number (`null` or absent: `None`) into `T`.
    pub fn de_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: TryFrom<i128>,
    {
        #[derive(serde::Deserialize)]
        struct Wrapped<T: TryFrom<i128>>(#[serde(deserialize_with = "de")] T);
        Ok(Option::<Wrapped<T>>::deserialize(d)?.map(|Wrapped(v)| v))
    }
}

/// Numbered seats: `prefix` followed by each of the `count` numbers from
/// `first`, zero-padded to `width` digits: `{"prefix": "A-", "first": 1,
/// "count": 3, "width": 2}` is `A-01`, `A-02`, `A-03`. Every bound is a
/// field's own, so the OpenAPI document states them all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatRange {
    /// Text before the number (may be empty): at most
    /// [`MAX_SEAT_RANGE_PREFIX_LEN`] characters of `[A-Za-z0-9_.-]`.
    #[serde(default)]
    pub prefix: String,
    /// The first number, 0..=[`MAX_SEAT_RANGE_FIRST`].
    #[serde(deserialize_with = "json_int::de")]
    pub first: u32,
    /// How many numbers, 1..=[`MAX_SEAT_RANGE_LEN`].
    #[serde(deserialize_with = "json_int::de")]
    pub count: u32,
    /// Zero-pad numbers to this many digits (0..=9; 0: no padding).
    #[serde(default, deserialize_with = "json_int::de")]
    pub width: u8,
}

impl SeatRange {
    /// Ranges naming `prefix` + `0..seats`, zero-padded to `width`, in as few
    /// ranges as [`MAX_SEAT_RANGE_LEN`] allows (`seats` <= 99,000 fits one body).
    pub fn covering(prefix: &str, seats: u32, width: u8) -> Vec<SeatRange> {
        let len = MAX_SEAT_RANGE_LEN as u32;
        (0..seats.div_ceil(len))
            .map(|i| SeatRange { prefix: prefix.into(), first: i * len, count: len.min(seats - i * len), width })
            .collect()
    }
}

/// Longest range prefix: numbers have at most 9 digits, so every id fits 64 characters.
pub const MAX_SEAT_RANGE_PREFIX_LEN: usize = 54;

/// Most ranges one event creation may carry.
pub const MAX_SEAT_RANGES: usize = 99;

/// Most seats one range may name.
pub const MAX_SEAT_RANGE_LEN: usize = 1_000;

/// Largest first number of a range: its last is then at most 999,999,999 (9 digits).
pub const MAX_SEAT_RANGE_FIRST: u32 = 1_000_000_000 - MAX_SEAT_RANGE_LEN as u32;

/// Most seats `seat_ids` may list.
pub const MAX_LISTED_SEATS: usize = 1_000;

// The schema bounds each list and each range, so their sum is bounded by
// construction: a body the schema allows never has too many seats.
const _: () = assert!(MAX_LISTED_SEATS + MAX_SEAT_RANGES * MAX_SEAT_RANGE_LEN == crate::model::MAX_SEATS_PER_EVENT);

/// Why a body's seats cannot be expanded: each a bound the OpenAPI document states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatRangeError {
    /// More ranges than [`MAX_SEAT_RANGES`].
    #[error("at most {MAX_SEAT_RANGES} seat_ranges")]
    TooManyRanges,
    /// More listed seats than [`MAX_LISTED_SEATS`].
    #[error("at most {MAX_LISTED_SEATS} seat_ids (use seat_ranges for more)")]
    TooManyListed,
    /// A range whose count is 0 or over [`MAX_SEAT_RANGE_LEN`], whose first
    /// is over [`MAX_SEAT_RANGE_FIRST`], whose width is over 9, or whose
    /// prefix is too long or has other characters than `[A-Za-z0-9_.-]`.
    #[error(
        "seat range {0}: count 1..={MAX_SEAT_RANGE_LEN}, first 0..={MAX_SEAT_RANGE_FIRST}, width 0..=9, \
         prefix 0..={MAX_SEAT_RANGE_PREFIX_LEN} characters of [A-Za-z0-9_.-]"
    )]
    BadRange(usize),
}

impl CreateEventBody {
    /// Every seat id the body names: `seat_ids`, then each range's seats not
    /// named before, in order. Bounded before anything is allocated: at most
    /// [`MAX_SEATS_PER_EVENT`](crate::model::MAX_SEATS_PER_EVENT) ids. Listed
    /// ids are not validated here (the store does, with the rest of the
    /// request, duplicates in `seat_ids` included).
    pub fn all_seat_ids(&self) -> Result<Vec<SeatId>, SeatRangeError> {
        if self.seat_ranges.len() > MAX_SEAT_RANGES {
            return Err(SeatRangeError::TooManyRanges);
        }
        if self.seat_ids.len() > MAX_LISTED_SEATS {
            return Err(SeatRangeError::TooManyListed);
        }
        for (i, r) in self.seat_ranges.iter().enumerate() {
            let prefix_ok = r.prefix.len() <= MAX_SEAT_RANGE_PREFIX_LEN
                && r.prefix.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
            let count_ok = (1..=MAX_SEAT_RANGE_LEN as u32).contains(&r.count);
            if !count_ok || r.first > MAX_SEAT_RANGE_FIRST || r.width > 9 || !prefix_ok {
                return Err(SeatRangeError::BadRange(i));
            }
        }
        let mut ids = self.seat_ids.clone();
        let mut seen: std::collections::BTreeSet<SeatId> = ids.iter().cloned().collect();
        for r in &self.seat_ranges {
            let w = usize::from(r.width);
            for n in r.first..r.first + r.count {
                let id = SeatId::from(format!("{}{n:0w$}", r.prefix));
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
        }
        assert!(ids.len() <= crate::model::MAX_SEATS_PER_EVENT, "bounded by the schema's bounds");
        Ok(ids)
    }
}

/// One seat as the public seat map shows it: no tokens, no holders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatView {
    /// The seat.
    pub seat_id: SeatId,
    /// Its state.
    pub state: SeatState,
    /// Its version.
    pub version: i64,
    /// When a hold on it expires (informative countdown; the store's clock decides).
    pub hold_expires_at_ms: Option<i64>,
}

/// [`SeatView`] borrowed from the store's seat: what the map shows of it,
/// serialized identically.
#[derive(Serialize)]
struct SeatViewRef<'a> {
    seat_id: &'a str,
    state: SeatState,
    version: i64,
    hold_expires_at_ms: Option<i64>,
}

impl<'a> From<&'a Seat> for SeatViewRef<'a> {
    fn from(s: &'a Seat) -> Self {
        Self {
            seat_id: &s.seat_id,
            state: s.state,
            version: s.version,
            hold_expires_at_ms: if s.state == SeatState::Held { s.hold_expires_at_ms } else { None },
        }
    }
}

impl From<&Seat> for SeatView {
    fn from(s: &Seat) -> Self {
        let v = SeatViewRef::from(s);
        Self {
            seat_id: SeatId::from(v.seat_id),
            state: v.state,
            version: v.version,
            hold_expires_at_ms: v.hold_expires_at_ms,
        }
    }
}

/// `GET /v1/events/{event_id}/seats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatMapView {
    /// The event.
    pub event_id: EventId,
    /// Its seats, sorted.
    pub seats: Vec<SeatView>,
}

impl SeatMapView {
    /// The JSON of the view of `seats` (one event's, sorted), byte for byte
    /// `serde_json::to_vec` of the [`SeatMapView`] built from them, written
    /// straight from the store's seats: no seat id is copied. Seat maps are
    /// the most frequent answer in a rush.
    pub fn json_of(event_id: &EventId, seats: &[Seat]) -> Vec<u8> {
        /// [`SeatMapView`], borrowed.
        #[derive(Serialize)]
        struct MapRef<'a> {
            event_id: &'a str,
            seats: Vec<SeatViewRef<'a>>,
        }
        let seats = seats.iter().map(SeatViewRef::from).collect();
        serde_json::to_vec(&MapRef { event_id, seats }).expect("a seat map serializes")
    }
}

/// The query of `GET /v1/events/{event_id}/seats`. Unknown parameters are
/// refused (400), as is a `state` that is not a seat state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatMapQuery {
    /// Show only the seats in this state (for example `available`: what a
    /// "find me a seat" poller needs during a sold-out rush); all when absent.
    pub state: Option<SeatState>,
}

/// `POST /v1/events/{event_id}/holds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HoldBody {
    /// The selection.
    pub seat_ids: Vec<SeatId>,
}

/// A granted hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldView {
    /// The event.
    pub event_id: EventId,
    /// The token to check out or release with.
    pub hold_token: HoldToken,
    /// The seats with their versions.
    pub seats: Vec<HeldSeat>,
    /// Deadline by the store's clock.
    pub expires_at_ms: i64,
}

impl From<&HoldGrant> for HoldView {
    fn from(g: &HoldGrant) -> Self {
        Self {
            event_id: g.event_id.clone(),
            hold_token: g.hold_token,
            seats: g.seats.clone(),
            expires_at_ms: g.expires_at_ms,
        }
    }
}

/// `DELETE /v1/events/{event_id}/holds/{hold_token}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseView {
    /// Seats released.
    pub released: Vec<SeatId>,
}

/// `POST /v1/events/{event_id}/holds/{hold_token}/checkout`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckoutBody {
    /// The seats of the hold to buy.
    pub seat_ids: Vec<SeatId>,
}

/// The compensation of an order charged without a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompensationView {
    /// Void or refund.
    pub kind: CompensationKind,
    /// Where it is.
    pub status: CompensationStatus,
    /// Attempts so far.
    pub attempts: i32,
    /// Last provider error.
    pub last_error: Option<String>,
}

/// An order as its buyer sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderView {
    /// The order.
    pub order_id: OrderId,
    /// The event.
    pub event_id: EventId,
    /// Where it is.
    pub status: OrderStatus,
    /// The seats.
    pub seat_ids: Vec<SeatId>,
    /// Amount, cents.
    pub amount_cents: i64,
    /// After this instant an unresolved payment may be released.
    pub payment_deadline_at_ms: i64,
    /// Why it was released or failed, if it was.
    pub resolution_reason: Option<String>,
    /// Its bookings (confirmed orders).
    pub booking_ids: Vec<BookingId>,
    /// Its compensation, if it was charged without a ticket.
    pub compensation: Option<CompensationView>,
    /// True when this answer came from an idempotent retry.
    pub replayed: bool,
}

impl OrderView {
    /// Builds the view of `order` with its `bookings` and compensation.
    pub fn new(order: &Order, bookings: &[Booking], compensation: Option<CompensationView>, replayed: bool) -> Self {
        Self {
            order_id: order.order_id,
            event_id: order.event_id.clone(),
            status: order.status,
            seat_ids: order.seat_ids.clone(),
            amount_cents: order.amount_cents,
            payment_deadline_at_ms: order.payment_deadline_at_ms,
            resolution_reason: order.resolution_reason.clone(),
            booking_ids: bookings.iter().filter(|b| b.order_id == order.order_id).map(|b| b.booking_id).collect(),
            compensation,
            replayed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_seat_map_serializes_exactly_as_the_view() {
        let seat = |id: &str, state, exp| Seat {
            event_id: "e1".into(),
            seat_id: id.into(),
            state,
            version: 3,
            hold_token: Some(HoldToken::from_u128(7)),
            holder_id: Some("alice".into()),
            hold_expires_at_ms: exp,
            order_id: None,
            booking_id: None,
        };
        let seats = vec![
            seat("1A", SeatState::Available, None),
            seat("1B", SeatState::Held, Some(9_000)),
            seat("1C", SeatState::PaymentPending, Some(9_000)),
            seat("1\"D", SeatState::Sold, None),
        ];
        let view = SeatMapView { event_id: "e\u{e9}1".into(), seats: seats.iter().map(SeatView::from).collect() };
        assert_eq!(SeatMapView::json_of(&"e\u{e9}1".into(), &seats), serde_json::to_vec(&view).unwrap());
        assert_eq!(view.seats[1].hold_expires_at_ms, Some(9_000));
        assert_eq!(view.seats[2].hold_expires_at_ms, None, "only a held seat shows a countdown");
        assert_eq!(SeatMapView::json_of(&"e1".into(), &[]), br#"{"event_id":"e1","seats":[]}"#);
    }
}

#[cfg(test)]
mod seat_range_tests {
    use super::*;

    fn body(seat_ids: Vec<SeatId>, ranges: Vec<SeatRange>) -> CreateEventBody {
        CreateEventBody { event_id: "e".into(), seat_ids, seat_ranges: ranges, price_cents: 1 }
    }

    fn range(prefix: &str, first: u32, count: u32, width: u8) -> SeatRange {
        SeatRange { prefix: prefix.into(), first, count, width }
    }

    #[test]
    fn integral_floats_are_integers_as_json_schema_says() {
        let b: CreateEventBody = serde_json::from_str(
            r#"{"event_id":"e","seat_ranges":[{"first":1.0,"count":3,"width":2.0}],"price_cents":4500.0}"#,
        )
        .unwrap();
        assert_eq!((b.price_cents, b.seat_ranges[0].first, b.seat_ranges[0].width), (4500, 1, 2));
        let priced =
            |p: &str| serde_json::from_str::<CreateEventBody>(&format!(r#"{{"event_id":"e","price_cents":{p}}}"#));
        assert_eq!(priced("9007199254740992.0").unwrap().price_cents, 1 << 53, "2^53 written as a float");
        assert_eq!(priced("-9007199254740992.0").unwrap().price_cents, -(1 << 53));
        assert!(priced("9007199254740994.0").is_err(), "past 2^53 a float may not be the integer written");
        assert_eq!(priced("9007199254740994").unwrap().price_cents, (1 << 53) + 2, "written as an integer");
        for bad in [r#"1.5"#, r#"-1"#, r#"4294967296"#, r#"1e300"#] {
            let json = format!(r#"{{"event_id":"e","seat_ranges":[{{"first":{bad},"count":3}}],"price_cents":1}}"#);
            assert!(serde_json::from_str::<CreateEventBody>(&json).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges_expand_after_the_listed_seats_zero_padded() {
        let b = body(vec!["VIP".into()], vec![range("A-", 1, 3, 2), range("", 9, 2, 0)]);
        assert_eq!(b.all_seat_ids().unwrap(), ["VIP", "A-01", "A-02", "A-03", "9", "10"]);
    }

    /// Overlap is no error: JSON Schema cannot state it, so a body the schema
    /// allows is never refused for it. A seat named twice is one seat.
    #[test]
    fn seats_named_twice_are_one_seat() {
        let b = body(
            vec!["A-02".into(), "x".into()],
            vec![range("A-", 1, 3, 2), range("A-0", 2, 3, 0), range("", 9, 1, 0)],
        );
        assert_eq!(b.all_seat_ids().unwrap(), ["A-02", "x", "A-01", "A-03", "A-04", "9"]);
    }

    #[test]
    fn every_bound_of_a_range_is_its_own_and_refused() {
        let bad = |r| body(vec![], vec![r]).all_seat_ids();
        assert_eq!(bad(range("A", 5, 0, 0)), Err(SeatRangeError::BadRange(0)));
        assert_eq!(bad(range("A", 1, MAX_SEAT_RANGE_LEN as u32 + 1, 0)), Err(SeatRangeError::BadRange(0)));
        assert_eq!(bad(range("A", MAX_SEAT_RANGE_FIRST + 1, 1, 0)), Err(SeatRangeError::BadRange(0)));
        assert_eq!(bad(range("A", 1, 2, 10)), Err(SeatRangeError::BadRange(0)));
        assert_eq!(bad(range(&"p".repeat(55), 1, 2, 0)), Err(SeatRangeError::BadRange(0)));
        assert_eq!(bad(range("a b", 1, 2, 0)), Err(SeatRangeError::BadRange(0)));
        let last = bad(range(&"p".repeat(54), MAX_SEAT_RANGE_FIRST, MAX_SEAT_RANGE_LEN as u32, 9)).unwrap();
        assert_eq!(last.last().unwrap().len(), 63, "the largest number has 9 digits: every id fits 64");
        let many = (0..=MAX_SEAT_RANGES as u32).map(|i| range("r", i, 1, 0)).collect();
        assert_eq!(body(vec![], many).all_seat_ids(), Err(SeatRangeError::TooManyRanges));
        let listed: Vec<SeatId> = (0..=MAX_LISTED_SEATS).map(|i| SeatId::from(format!("l{i}"))).collect();
        assert_eq!(body(listed, vec![]).all_seat_ids(), Err(SeatRangeError::TooManyListed));
    }

    #[test]
    fn the_largest_body_the_schema_allows_is_a_full_event() {
        let listed: Vec<SeatId> = (0..MAX_LISTED_SEATS).map(|i| SeatId::from(format!("l{i}"))).collect();
        let rows = (0..MAX_SEAT_RANGES as u32).map(|r| range(&format!("R{r}-"), 1, MAX_SEAT_RANGE_LEN as u32, 4));
        let full = body(listed, rows.collect());
        assert_eq!(full.all_seat_ids().unwrap().len(), crate::model::MAX_SEATS_PER_EVENT);
    }

    #[test]
    fn covering_names_every_seat_once_in_fewest_ranges() {
        assert!(SeatRange::covering("s", 0, 5).is_empty());
        let two = SeatRange::covering("s", 1_001, 5);
        assert_eq!((two.len(), two[1].first, two[1].count), (2, 1_000, 1));
        let ids = body(vec![], SeatRange::covering("s", 2_500, 5)).all_seat_ids().unwrap();
        assert_eq!((ids.len(), ids[0].as_str(), ids[2_499].as_str()), (2_500, "s00000", "s02499"));
    }
}
