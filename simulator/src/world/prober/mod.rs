//! A prober: a user who walks the API's whole answer space, so that the
//! auditor sees every kind of answer and every boundary of a rule met. It
//! sends requests as written ([`probes`]: every refusal of the surface,
//! from routing to the store's input rules, the webhook's signature, the
//! rate limit), and runs short flows as two users of its own ([`flows`]:
//! a key reused for another hold, another user's hold and order, a token
//! of another event, the per-user cap met exactly, checkouts aimed at one
//! tick before, at and after a hold's deadline). Each request is a traced
//! operation, judged by the auditor's model, not by the prober: it expects
//! nothing.

pub mod flows;
pub mod probe;
mod probes;
pub mod room;

use crate::world::recorder::Recorder;
use crate::world::user::Actor;
use booking::model::{EventId, SeatId};
use invariants::trace::Credential;
pub use probe::Probe;
use rand::Rng;
use serde_json::Value;
use std::time::Duration;

/// What a prober knows of its world.
#[derive(Debug, Clone)]
pub struct ProberKit {
    /// Events and their seats (sorted).
    pub events: Vec<(EventId, Vec<SeatId>)>,
    /// Bearer tokens by credential: an operator's, one scoped to another event, an expired one, a forged one.
    pub admin_token: String,
    /// A token of this prober's user scoped to [`SCOPED_TO`] only (no event of the world).
    pub scoped_token: String,
    /// This prober's user's token, expired.
    pub expired_token: String,
    /// This prober's user's token, signed with another secret.
    pub forged_token: String,
    /// The least message latency, ms.
    pub min_latency_ms: u64,
    /// The simulation's step, ms (a message lands at a tick: aims are in ticks).
    pub tick_ms: u64,
    /// Hold attempts per user per minute the services allow.
    pub hold_attempts_per_minute: u32,
    /// The provider's webhook secret (to sign webhook probes).
    pub webhook_secret: Vec<u8>,
    /// The service's body limit, bytes.
    pub max_body_bytes: usize,
    /// No probe starts after this simulated ms.
    pub active_until_ms: u64,
    /// A prober waiting in a queue gives up at this simulated ms.
    pub give_up_at_ms: GiveUpMs,
    /// The waiting room every event has, if the world has rooms.
    pub room: Option<room::RoomKit>,
    /// The store's outage window, simulated ms (`from`, `to`), if the world has one.
    pub store_outage: Option<(u64, u64)>,
}

/// The one event a prober's scoped credential names: none of the world's.
pub const SCOPED_TO: &str = "elsewhere";

/// When a waiting prober gives up (the end of the settle phase), simulated ms.
pub type GiveUpMs = u64;

/// Pause between two probes, ms (uniform).
const PROBE_GAP_MS: (u64, u64) = (50, 400);

impl Actor {
    /// The `Authorization` header value `credential` stands for.
    fn authorization(&self, credential: &Credential, kit: &ProberKit) -> Option<String> {
        match credential {
            Credential::None => None,
            Credential::User => Some(format!("Bearer {}", self.token)),
            Credential::Admin => Some(format!("Bearer {}", kit.admin_token)),
            Credential::Scoped(_) => Some(format!("Bearer {}", kit.scoped_token)),
            Credential::Expired => Some(format!("Bearer {}", kit.expired_token)),
            Credential::Forged => Some(format!("Bearer {}", kit.forged_token)),
            Credential::Garbage(text) => Some(format!("Bearer {text}")),
            Credential::Header(text) => Some(text.clone()),
        }
    }

    /// Sends `p` to the home host as a traced operation; the answer's status and JSON body, if one came.
    pub(crate) async fn probe(&mut self, p: Probe, kit: &ProberKit) -> Option<(u16, Value)> {
        let auth = self.authorization(&p.credential, kit);
        self.send_probe(p, auth).await
    }

    /// Waits a probe's gap.
    pub(crate) async fn probe_gap(&mut self) {
        let ms = self.rng.random_range(PROBE_GAP_MS.0..=PROBE_GAP_MS.1);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// In the middle of the store's outage, `c` asks for the service's health,
/// a seat map and a hold (each must meet the outage, not a missing answer).
async fn outage_watch(c: &mut Actor, kit: &ProberKit) {
    let Some((from_ms, to_ms)) = kit.store_outage else { return };
    let mid = from_ms + (to_ms - from_ms) / 2;
    let now = Recorder::now_ms().max(0) as u64;
    if mid > now {
        tokio::time::sleep(Duration::from_millis(mid - now)).await;
    }
    let (ev, seats) = kit.events[0].clone();
    let hold = serde_json::json!({ "seat_ids": [seats[0]] }).to_string();
    for p in [
        Probe::user("GET", "/healthz").as_(Credential::None),
        Probe::user("GET", format!("/v1/events/{ev}/seats?state=available")),
        Probe::user("POST", format!("/v1/events/{ev}/holds")).json(hold),
    ] {
        let _ = c.probe(p, kit).await;
    }
}

/// Runs prober `a` (with `b` and `c`, users of its own) through its flows
/// (in front of the room, in a waiting-room world), then every probe in a
/// seeded order until `kit.active_until_ms`, then the rate limit's burst.
pub async fn run(mut a: Actor, mut b: Actor, mut c: Actor, kit: ProberKit, arrival_ms: (u64, u64)) {
    if kit.room.is_none() {
        // In front of a room the prober joins at once (near the front of the line).
        a.think(arrival_ms).await;
    }
    // The flows first, while seats are free; the rate limit's burst last.
    match kit.room {
        Some(room) => room::run(&mut a, &mut b, &mut c, &kit, room).await,
        None => {
            let watch = outage_watch(&mut c, &kit);
            tokio::join!(flows::run_all(&mut a, &mut b, &kit), watch);
        }
    }
    let mut list = probes::all(&kit, &a.user);
    // A seeded order: the probes meet the world in a different state each seed.
    for i in (1..list.len()).rev() {
        let j = a.rng.random_range(0..=i);
        list.swap(i, j);
    }
    for p in list {
        if Recorder::now_ms() >= kit.active_until_ms as i64 {
            return;
        }
        let _ = a.probe(p, &kit).await;
        a.probe_gap().await;
    }
    flows::conflicting_webhooks(&mut a, &kit).await;
    flows::rate_burst(&mut a, &kit).await;
}
