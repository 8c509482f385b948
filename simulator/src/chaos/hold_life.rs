//! The store's clock decides a hold's life, judged on the client history
//! with the harness's own clock, which is the database's (one machine; only
//! the `bookingd` and provider processes are skewed: [`super::clock_skew`]):
//!
//! - `hold-lifetime`: every granted hold's deadline is the configured
//!   lifetime after a moment inside its request: it was granted then, by
//!   the store's clock, whatever the serving host's clock says;
//! - `no-early-expiry`: no checkout by the hold's own user, answered before
//!   that deadline, was refused as if the hold were gone (expired, swept,
//!   taken over).
//!
//! That no checkout succeeds after the deadline is judged by
//! [`super::judge::history`] (`no-stale-authority`), from the user's own clock.

use super::client::{Op, Outcome};
use booking::problem_kind::ProblemKind;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Every granted hold lives the configured lifetime by the store's clock.
pub const LIFETIME: &str = "hold-lifetime";
/// No hold is treated as gone before its deadline.
pub const EARLY: &str = "no-early-expiry";
/// How far the harness's and the database's readings of one clock may
/// differ, in ms (both read `CLOCK_REALTIME`; the history's epoch is taken
/// once at the start, its times from the monotonic clock).
pub const TOLERANCE_MS: i64 = 250;
/// The refusals that say a hold is gone.
const GONE: &[ProblemKind] = &[
    ProblemKind::HoldExpired,
    ProblemKind::HoldNotFound,
    ProblemKind::StaleToken,
    ProblemKind::NotHolder,
    ProblemKind::SeatUnavailable,
];

/// What the history keeps of a hold answer: its token, deadline and seat
/// versions (for [`super::seat_maps`]). For [`super::client::Api::send_keeping`].
pub fn hold_fact(body: &Value) -> Option<Value> {
    Some(json!({
        "hold_token": body.get("hold_token")?.as_str()?,
        "expires_at_ms": body.get("expires_at_ms")?.as_i64()?,
        "versions": super::seat_maps::hold_versions(body),
    }))
}

/// A granted hold, from the history.
struct Granted<'a> {
    op: &'a Op,
    expires_at_ms: i64,
}

/// Every granted hold of `ops` (those whose fact was kept), by token.
fn granted(ops: &[Op]) -> BTreeMap<&str, Granted<'_>> {
    ops.iter()
        .filter(|op| op.outcome == Outcome::Status(201) && op.request.ends_with("/holds"))
        .filter_map(|op| {
            let fact = op.detail.as_ref()?;
            let token = fact["hold_token"].as_str()?;
            Some((token, Granted { op, expires_at_ms: fact["expires_at_ms"].as_i64()? }))
        })
        .collect()
}

/// The hold token a checkout request names (`POST /v1/events/E/holds/T/checkout`).
fn checkout_token(request: &str) -> Option<&str> {
    let rest = request.strip_prefix("POST /v1/events/")?.strip_suffix("/checkout")?;
    rest.split_once("/holds/").map(|(_, token)| token)
}

/// Judges `ops`, whose times count from `epoch_start_ms` on the system
/// clock, for holds of `hold_ttl_ms`: `(invariant, what)` per finding.
pub fn judge(ops: &[Op], epoch_start_ms: i64, hold_ttl_ms: i64) -> Vec<(&'static str, String)> {
    let holds = granted(ops);
    let mut found = Vec::new();
    for (token, g) in &holds {
        let earliest = epoch_start_ms + g.op.start_ms as i64 + hold_ttl_ms - TOLERANCE_MS;
        let latest = epoch_start_ms + g.op.end_ms as i64 + hold_ttl_ms + TOLERANCE_MS;
        if !(earliest..=latest).contains(&g.expires_at_ms) {
            let off_ms = if g.expires_at_ms < earliest { g.expires_at_ms - earliest } else { g.expires_at_ms - latest };
            found.push((
                LIFETIME,
                format!(
                    "{} was granted hold {token} by bookingd {} between {} and {} ms, expiring {off_ms:+} ms off a {hold_ttl_ms} ms lifetime by the store's clock",
                    g.op.client, g.op.slot, g.op.start_ms, g.op.end_ms
                ),
            ));
        }
    }
    for op in ops {
        let Some(g) = checkout_token(&op.request).and_then(|t| holds.get(t)) else { continue };
        let gone =
            op.problem.as_deref().and_then(|p| p.strip_prefix("urn:holdfast:problem:")).and_then(ProblemKind::parse);
        let answered_epoch_ms = epoch_start_ms + op.end_ms as i64;
        if op.client == g.op.client
            && gone.is_some_and(|k| GONE.contains(&k))
            && answered_epoch_ms < g.expires_at_ms - TOLERANCE_MS
        {
            found.push((
                EARLY,
                format!(
                    "{} was refused ({}) a checkout of its hold by bookingd {} at {} ms, {} ms before the hold's deadline",
                    op.client,
                    gone.map(|k| k.as_str()).unwrap_or_default(),
                    op.slot,
                    op.end_ms,
                    g.expires_at_ms - answered_epoch_ms
                ),
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(client: &str, request: &str, times_ms: (u64, u64), status: u16, detail: Option<Value>) -> Op {
        Op::answered(client, request, times_ms, status, detail)
    }

    fn hold(expires_at_ms: i64) -> Op {
        let fact = hold_fact(&json!({"hold_token": "t1", "expires_at_ms": expires_at_ms}));
        op("user1", "POST /v1/events/e/holds", (100, 140), 201, fact)
    }

    fn refused(end_ms: u64, kind: &str) -> Op {
        let mut o = op("user1", "POST /v1/events/e/holds/t1/checkout", (end_ms - 5, end_ms), 409, None);
        o.problem = Some(format!("urn:holdfast:problem:{kind}"));
        o
    }

    #[test]
    fn a_deadline_off_the_store_clock_is_found_and_one_on_it_is_not() {
        let epoch = 1_000_000;
        for ok in [epoch + 100 + 2_000, epoch + 140 + 2_000, epoch + 90 + 2_000] {
            assert!(judge(&[hold(ok)], epoch, 2_000).is_empty(), "{ok}");
        }
        for bad in [epoch + 100 + 2_000 - 1_000, epoch + 140 + 2_000 + 1_000] {
            let found = judge(&[hold(bad)], epoch, 2_000);
            assert_eq!(found.len(), 1, "{bad}");
            assert_eq!(found[0].0, LIFETIME);
        }
    }

    #[test]
    fn a_refusal_before_the_deadline_is_found_and_one_after_it_is_not() {
        let epoch = 1_000_000;
        let h = hold(epoch + 2_100);
        assert_eq!(judge(&[h.clone(), refused(1_000, "hold-expired")], epoch, 2_000)[0].0, EARLY);
        assert_eq!(judge(&[h.clone(), refused(1_000, "stale-token")], epoch, 2_000)[0].0, EARLY);
        assert!(judge(&[h.clone(), refused(2_200, "hold-expired")], epoch, 2_000).is_empty());
        assert!(judge(&[h.clone(), refused(1_000, "rate-limited")], epoch, 2_000).is_empty());
        let mut other = refused(1_000, "hold-expired");
        other.client = "user1:stale".into();
        assert!(judge(&[h, other], epoch, 2_000).is_empty(), "only the holder's own checkouts are judged");
    }

    #[test]
    fn a_checkout_names_its_token() {
        assert_eq!(checkout_token("POST /v1/events/ev0-ab/holds/tok-1/checkout"), Some("tok-1"));
        assert_eq!(checkout_token("POST /v1/events/ev0-ab/holds"), None);
        assert_eq!(checkout_token("DELETE /v1/events/ev0-ab/holds/tok-1"), None);
    }
}
