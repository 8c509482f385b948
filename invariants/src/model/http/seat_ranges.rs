//! An event's seats as `POST /v1/events` names them (the OpenAPI document's
//! `CreateEvent`): the listed `seat_ids`, then each of `seat_ranges` in
//! order, a range `{prefix, first, count, width}` being `prefix` followed by
//! each of the `count` numbers from `first`, zero-padded to `width` digits;
//! a seat already named is not named again. A body is refused (`400
//! bad-request`, before the store) with more than `MAX_LISTED_SEATS` listed
//! seats or `MAX_SEAT_RANGES` ranges, or a range whose `count` is outside
//! 1..=`MAX_SEAT_RANGE_LEN`, whose `first` is over `MAX_SEAT_RANGE_FIRST`,
//! whose `width` is over 9 or whose prefix is longer than
//! `MAX_SEAT_RANGE_PREFIX_LEN` or has other characters than
//! `[A-Za-z0-9_.-]`: every one a bound the schema states.

use booking::http::api::{
    MAX_LISTED_SEATS, MAX_SEAT_RANGE_FIRST, MAX_SEAT_RANGE_LEN, MAX_SEAT_RANGE_PREFIX_LEN, MAX_SEAT_RANGES,
};
use booking::model::SeatId;
use booking::problem_kind::ProblemKind;
use serde_json::Value;

/// One range as the body gives it.
struct Range<'a> {
    prefix: &'a str,
    first: u64,
    count: u64,
    width: u64,
}

/// Reads one range: an object of `prefix` (optional), `first`, `count`, `width` (optional), integers.
fn range(v: &Value) -> Result<Range<'_>, ProblemKind> {
    let obj = v.as_object().ok_or(ProblemKind::BadRequest)?;
    if obj.keys().any(|k| !["prefix", "first", "count", "width"].contains(&k.as_str())) {
        return Err(ProblemKind::BadRequest);
    }
    let int =
        |k: &str| obj.get(k).map(|v| super::integer::of_type::<u32>(v).map(u64::from).ok_or(ProblemKind::BadRequest));
    let prefix = match obj.get("prefix") {
        None => "",
        Some(p) => p.as_str().ok_or(ProblemKind::BadRequest)?,
    };
    let first = int("first").ok_or(ProblemKind::BadRequest)??;
    let count = int("count").ok_or(ProblemKind::BadRequest)??;
    let width = int("width").transpose()?.unwrap_or(0);
    if width > u64::from(u8::MAX) {
        return Err(ProblemKind::BadRequest);
    }
    Ok(Range { prefix, first, count, width })
}

/// Every seat `listed` and `ranges` (the body's `seat_ranges`, if given)
/// name, in order, each once (duplicates within `listed` are kept: the store refuses them).
pub fn expand(listed: Vec<SeatId>, ranges: Option<&Value>) -> Result<Vec<SeatId>, ProblemKind> {
    if listed.len() > MAX_LISTED_SEATS {
        return Err(ProblemKind::BadRequest);
    }
    let Some(ranges) = ranges else { return Ok(listed) };
    let ranges = ranges.as_array().ok_or(ProblemKind::BadRequest)?;
    let ranges: Vec<Range<'_>> = ranges.iter().map(range).collect::<Result<_, _>>()?;
    if ranges.len() > MAX_SEAT_RANGES {
        return Err(ProblemKind::BadRequest);
    }
    for r in &ranges {
        let prefix_ok = r.prefix.len() <= MAX_SEAT_RANGE_PREFIX_LEN
            && r.prefix.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        let count_ok = r.count >= 1 && r.count <= MAX_SEAT_RANGE_LEN as u64;
        if !count_ok || r.first > u64::from(MAX_SEAT_RANGE_FIRST) || r.width > 9 || !prefix_ok {
            return Err(ProblemKind::BadRequest);
        }
    }
    let mut seen: std::collections::BTreeSet<String> = listed.iter().map(|s| s.as_str().to_string()).collect();
    let mut seats = listed;
    for r in &ranges {
        let w = r.width as usize;
        for n in r.first..r.first + r.count {
            let id = format!("{}{n:0w$}", r.prefix);
            if seen.insert(id.clone()) {
                seats.push(SeatId::from(id));
            }
        }
    }
    Ok(seats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranges_expand_in_order_once_each_and_each_rule_refuses() {
        let ok = json!([{ "prefix": "A-", "first": 1, "count": 3, "width": 2 }, { "first": 9, "count": 2 }]);
        assert_eq!(expand(vec!["VIP".into()], Some(&ok)).unwrap(), ["VIP", "A-01", "A-02", "A-03", "9", "10"]);
        let twice = json!([{ "prefix": "A-", "first": 1, "count": 2 }, { "prefix": "A-", "first": 2, "count": 2 }]);
        assert_eq!(expand(vec!["A-1".into()], Some(&twice)).unwrap(), ["A-1", "A-2", "A-3"]);
        for bad in [
            json!([{ "first": 5, "count": 0 }]),
            json!([{ "first": 5, "count": MAX_SEAT_RANGE_LEN + 1 }]),
            json!([{ "first": MAX_SEAT_RANGE_FIRST + 1, "count": 1 }]),
            json!([{ "first": 1, "count": 2, "width": 10 }]),
            json!([{ "prefix": "a b", "first": 1, "count": 1 }]),
            json!([{ "prefix": "p".repeat(55), "first": 1, "count": 1 }]),
            json!([{ "first": 1 }]),
            json!([{ "first": 1, "last": 1 }]),
            json!([{ "first": 1, "count": 1, "color": "red" }]),
        ] {
            assert_eq!(expand(Vec::new(), Some(&bad)), Err(ProblemKind::BadRequest), "{bad}");
        }
        let listed = (0..=MAX_LISTED_SEATS).map(|i| SeatId::from(format!("l{i}"))).collect();
        assert_eq!(expand(listed, None), Err(ProblemKind::BadRequest));
        let edge = json!([{ "prefix": "p".repeat(54), "first": 1, "count": 1, "width": 9 }]);
        assert_eq!(expand(Vec::new(), Some(&edge)).unwrap(), [format!("{}000000001", "p".repeat(54))]);
    }
}
