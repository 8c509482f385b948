//! An event's seats as `POST /v1/events` names them (the OpenAPI document's
//! `CreateEvent`): the listed `seat_ids`, then each of `seat_ranges` in
//! order, a range `{prefix, first, last, width}` being `prefix` followed by
//! each number from `first` to `last`, zero-padded to `width` digits. A
//! body is refused (`400 bad-request`, before the store) with more than
//! `MAX_SEAT_RANGES` ranges, a range whose `last` is below its `first`,
//! whose `width` is over 9 or whose prefix is longer than
//! `MAX_SEAT_RANGE_PREFIX_LEN` or has other characters than
//! `[A-Za-z0-9_.-]`, or more than `MAX_SEATS_PER_EVENT` seats in all.

use booking::http::api::{MAX_SEAT_RANGE_PREFIX_LEN, MAX_SEAT_RANGES};
use booking::model::{MAX_SEATS_PER_EVENT, SeatId};
use booking::problem_kind::ProblemKind;
use serde_json::Value;

/// One range as the body gives it.
struct Range<'a> {
    prefix: &'a str,
    first: u64,
    last: u64,
    width: u64,
}

/// Reads one range: an object of `prefix` (optional), `first`, `last`, `width` (optional), integers.
fn range(v: &Value) -> Result<Range<'_>, ProblemKind> {
    let obj = v.as_object().ok_or(ProblemKind::BadRequest)?;
    if obj.keys().any(|k| !["prefix", "first", "last", "width"].contains(&k.as_str())) {
        return Err(ProblemKind::BadRequest);
    }
    let int =
        |k: &str| obj.get(k).map(|v| super::integer::of_type::<u32>(v).map(u64::from).ok_or(ProblemKind::BadRequest));
    let prefix = match obj.get("prefix") {
        None => "",
        Some(p) => p.as_str().ok_or(ProblemKind::BadRequest)?,
    };
    let first = int("first").ok_or(ProblemKind::BadRequest)??;
    let last = int("last").ok_or(ProblemKind::BadRequest)??;
    let width = int("width").transpose()?.unwrap_or(0);
    if width > u64::from(u8::MAX) {
        return Err(ProblemKind::BadRequest);
    }
    Ok(Range { prefix, first, last, width })
}

/// Every seat `listed` and `ranges` (the body's `seat_ranges`, if given) name, in order.
pub fn expand(listed: Vec<SeatId>, ranges: Option<&Value>) -> Result<Vec<SeatId>, ProblemKind> {
    let Some(ranges) = ranges else { return Ok(listed) };
    let ranges = ranges.as_array().ok_or(ProblemKind::BadRequest)?;
    let ranges: Vec<Range<'_>> = ranges.iter().map(range).collect::<Result<_, _>>()?;
    if ranges.len() > MAX_SEAT_RANGES {
        return Err(ProblemKind::BadRequest);
    }
    let mut total = listed.len() as u64;
    for r in &ranges {
        let prefix_ok = r.prefix.len() <= MAX_SEAT_RANGE_PREFIX_LEN
            && r.prefix.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if r.last < r.first || r.width > 9 || !prefix_ok {
            return Err(ProblemKind::BadRequest);
        }
        total += r.last - r.first + 1;
    }
    if total > MAX_SEATS_PER_EVENT as u64 {
        return Err(ProblemKind::BadRequest);
    }
    let mut seats = listed;
    for r in &ranges {
        let w = r.width as usize;
        seats.extend((r.first..=r.last).map(|n| SeatId::from(format!("{}{n:0w$}", r.prefix))));
    }
    Ok(seats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranges_expand_in_order_and_each_rule_refuses() {
        let ok = json!([{ "prefix": "A-", "first": 1, "last": 3, "width": 2 }, { "first": 9, "last": 10 }]);
        assert_eq!(expand(vec!["VIP".into()], Some(&ok)).unwrap(), ["VIP", "A-01", "A-02", "A-03", "9", "10"]);
        for bad in [
            json!([{ "first": 5, "last": 4 }]),
            json!([{ "first": 1, "last": 2, "width": 10 }]),
            json!([{ "prefix": "a b", "first": 1, "last": 1 }]),
            json!([{ "prefix": "p".repeat(55), "first": 1, "last": 1 }]),
            json!([{ "first": 0, "last": MAX_SEATS_PER_EVENT }]),
            json!([{ "first": 1 }]),
            json!([{ "first": 1, "last": 1, "color": "red" }]),
        ] {
            assert_eq!(expand(Vec::new(), Some(&bad)), Err(ProblemKind::BadRequest), "{bad}");
        }
        let edge = json!([{ "prefix": "p".repeat(54), "first": 1, "last": 1, "width": 9 }]);
        assert_eq!(expand(Vec::new(), Some(&edge)).unwrap(), [format!("{}000000001", "p".repeat(54))]);
    }
}
