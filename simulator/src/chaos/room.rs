//! A chaos run's waiting rooms: the scenario's room, scaled to wall time
//! and to the run's users, opened in front of every event through the API
//! as an operator, and the `bookingd` flags that make it turn over within a
//! run (a fast admission tick, a short prior session).

use super::client::Api;
use crate::world::room_user::RoomWorld;
use booking::admission::room::Policy;
use booking::model::EventId;

/// An admission's lifetime in chaos, s (the API's unit): short, so sessions
/// turn over within a run.
pub const SESSION_TTL_S: u32 = 2;
/// The admission law's tick in chaos, ms.
pub const TICK_MS: u64 = 100;
/// Fewest sessions a chaos room targets.
const MIN_TARGET: u32 = 2;

/// The `bookingd serve` flags a room run adds.
pub fn bookingd_args() -> Vec<String> {
    [
        "--admission-tick-ms".to_string(),
        TICK_MS.to_string(),
        "--admission-prior-session-ms".to_string(),
        (i64::from(SESSION_TTL_S) * 1_000).to_string(),
        "--admission-poll-max-s".to_string(),
        "2".to_string(),
    ]
    .to_vec()
}

/// A room as a chaos run opens it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChaosRoom {
    /// The fairness rule.
    pub policy: Policy,
    /// When the sale opens, the system clock's epoch ms.
    pub opens_at_ms: i64,
    /// Sessions open at once at most.
    pub target_active_sessions: u32,
    /// An admission's lifetime, ms.
    pub session_ttl_ms: i64,
    /// Share of users who also try to get past the queue.
    pub bypass_share: f64,
    /// Share of users with a members' credential (tier 0; priority rooms).
    pub member_share: f64,
}

impl ChaosRoom {
    /// The scenario's `room` for `users` users over a flow window of
    /// `duration_ms`, starting at epoch ms `now_ms`: a room that opens later
    /// than its start opens a quarter into the window (so a lottery has
    /// pre-opening joiners); the target is at most a quarter of the users.
    pub fn scaled(room: &RoomWorld, users: usize, duration_ms: u64, now_ms: i64) -> ChaosRoom {
        let opens_in_ms = if room.opens_at_ms > 0 { (duration_ms / 4) as i64 } else { 0 };
        let quarter = u32::try_from(users / 4).unwrap_or(u32::MAX).max(MIN_TARGET);
        ChaosRoom {
            policy: room.policy,
            opens_at_ms: now_ms + opens_in_ms,
            target_active_sessions: room.target_active_sessions.clamp(MIN_TARGET, quarter),
            session_ttl_ms: i64::from(SESSION_TTL_S) * 1_000,
            bypass_share: room.bypass_share.clamp(0.0, 1.0),
            member_share: room.member_share.clamp(0.0, 1.0),
        }
    }

    /// Opens this room in front of `event_id` as the operator `admin` (a bearer token).
    pub async fn open(&self, api: &Api, admin: &str, event_id: &EventId) -> Result<(), String> {
        let policy = serde_json::to_value(self.policy).map_err(|e| e.to_string())?;
        let body = serde_json::json!({
            "policy": policy,
            "opens_at": booking::admission::token::rfc3339_ms(self.opens_at_ms),
            "target_active_sessions": self.target_active_sessions,
            "session_ttl_s": SESSION_TTL_S,
        });
        let headers = [("authorization", format!("Bearer {admin}"))];
        let path = format!("/v1/events/{event_id}/waiting-room");
        let r = api.send("operator", 0, "PUT", &path, &headers, Some(body)).await?;
        if r.status != 200 {
            return Err(format!("open the waiting room of {event_id}: {} {}", r.status, r.body));
        }
        Ok(())
    }
}
