//! The prober in front of a waiting room: the gate and the queue's own
//! refusals, by three users of its own:
//!
//! - holds presenting a token that is not one, and one longer than the
//!   service reads;
//! - the lottery's record (a lottery room's, or a refusal of another's);
//! - the room opened again by an operator, as it is and otherwise;
//! - `a` and `b` join at once (near the front of the line), wait their
//!   turn, then hold aiming at one tick before and at their admission's
//!   expiry (the service's clock);
//! - `c` sends the probes above, then waits for the sale to sell out
//!   (reading the queue, never joining), then tries to join.

use super::{Probe, ProberKit};
use crate::world::recorder::Recorder;
use crate::world::room_user::RoomRun;
use crate::world::sim_clock::EPOCH_MS;
use crate::world::user::Actor;
use base64::Engine as _;
use booking::admission::token::MAX_ADMISSION_TOKEN_LEN;
use booking::model::{EventId, SeatId};
use invariants::trace::{ClientOp, Credential};
use serde_json::json;
use std::time::Duration;

/// How often `c` reads the queue while waiting for the sale to sell out, ms.
const SOLD_OUT_POLL_MS: u64 = 5_000;

/// The room every event of a prober's world has.
#[derive(Debug, Clone, Copy)]
pub struct RoomKit {
    /// The policy's name (`fifo`, `lottery`, `priority`).
    pub policy: &'static str,
    /// When the sale opens, store ms.
    pub opens_at_ms: i64,
    /// The target of active sessions.
    pub target_active_sessions: u32,
    /// An admission's lifetime, ms.
    pub session_ttl_ms: i64,
}

/// The expiry (service-clock ms) an admission token claims.
fn expiry_of(token: &str) -> Option<i64> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()?["expires_at_ms"].as_i64()
}

/// An admission token of `len` bytes (> 47) in the token's form, `a1.<payload>.<tag>`,
/// whose tag (32 zero bytes) no secret signs.
fn forged_of_len(len: usize) -> String {
    const TAG: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"; // 43 chars: 32 bytes, unpadded
    format!("a1.{}.{TAG}", "A".repeat(len - 4 - TAG.len()))
}

/// The gate's and the room's refusals; see the module doc.
pub async fn run(a: &mut Actor, b: &mut Actor, c: &mut Actor, kit: &ProberKit, room: RoomKit) {
    let (ev, seats) = kit.events[0].clone();
    let hold = json!({ "seat_ids": [seats[0]] }).to_string();
    let room_body = |target: u32| {
        let opens_at = booking::admission::token::rfc3339_ms(room.opens_at_ms);
        json!({ "policy": room.policy, "opens_at": opens_at, "target_active_sessions": target, "session_ttl_s": room.session_ttl_ms / 1000 })
            .to_string()
    };
    let probes = [
        Probe::user("POST", format!("/v1/events/{ev}/holds"))
            .json(hold.clone())
            .header("admission-token", "not-an-admission"),
        Probe::user("POST", format!("/v1/events/{ev}/holds"))
            .json(hold.clone())
            .header("admission-token", "a".repeat(3_000)),
        // A token's length at its limit (read, then refused as forged) and one byte past it (refused unread).
        Probe::user("POST", format!("/v1/events/{ev}/holds"))
            .json(hold.clone())
            .header("admission-token", forged_of_len(MAX_ADMISSION_TOKEN_LEN)),
        Probe::user("POST", format!("/v1/events/{ev}/holds"))
            .json(hold)
            .header("admission-token", forged_of_len(MAX_ADMISSION_TOKEN_LEN + 1)),
        Probe::user("GET", format!("/v1/events/{ev}/queue/lottery")),
        Probe::user("PUT", format!("/v1/events/{ev}/waiting-room"))
            .as_(Credential::Admin)
            .json(room_body(room.target_active_sessions)),
        Probe::user("PUT", format!("/v1/events/{ev}/waiting-room"))
            .as_(Credential::Admin)
            .json(room_body(room.target_active_sessions + 1)),
    ];
    let run = RoomRun {
        bypass_share: 0.0,
        give_up_at_ms: kit.give_up_at_ms,
        session_ttl_ms: u64::try_from(room.session_ttl_ms).expect("a session lifetime is positive"),
    };
    let c_part = async {
        for p in probes {
            let _ = c.probe(p, kit).await;
            c.probe_gap().await;
        }
        join_sold_out(c, kit, &ev).await;
    };
    tokio::join!(hold_at_expiry(a, kit, &ev, &seats, &run, -1), hold_at_expiry(b, kit, &ev, &seats, &run, 0), c_part);
}

/// `u` waits its turn, then holds a seat arriving `d` ms after its admission's expiry.
async fn hold_at_expiry(u: &mut Actor, kit: &ProberKit, ev: &EventId, seats: &[SeatId], run: &RoomRun, d: i64) {
    let Some(token) = u.wait_in_queue(ev, run).await else { return };
    let Some(expires_at_ms) = expiry_of(&token) else { return };
    let at = expires_at_ms + (d - 1) * kit.tick_ms as i64;
    let now = EPOCH_MS + Recorder::now_ms();
    if at > now {
        tokio::time::sleep(Duration::from_millis((at - now) as u64)).await;
    }
    u.admission = Some(token);
    let seat = seats[(d + 1) as usize % seats.len()].clone();
    let _ = u.call(ClientOp::Hold { event_id: EventId::from(ev), seat_ids: vec![seat], admission: None }, 1).await;
    u.admission = None;
}

/// `c` reads the queue until the sale sold out, then tries to join it.
async fn join_sold_out(c: &mut Actor, kit: &ProberKit, ev: &EventId) {
    while Recorder::now_ms() < kit.active_until_ms as i64 {
        let read = c.probe(Probe::user("GET", format!("/v1/events/{ev}/queue")), kit).await;
        if read.is_some_and(|(_, body)| body["state"] == "sold_out") {
            let _ = c.probe(Probe::user("POST", format!("/v1/events/{ev}/queue")), kit).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(SOLD_OUT_POLL_MS)).await;
    }
}
