//! The waiting room as the service runs it: opens rooms, answers joins and
//! status polls (with when to ask again), issues admission tokens to
//! admitted users, checks them before a hold or checkout touches the store,
//! ends sessions on purchase and release, and runs the admission law once a
//! tick for every room whose lease this instance holds.
//!
//! The rooms themselves ([`Rooms`]: memory or Redis) are shared by every
//! instance. Which events have a room is the authority's word
//! ([`RoomRecords`]: PostgreSQL), never the rooms': while the rooms' store is
//! down, every call on a room's event fails closed (`Unavailable`), and a
//! room the rooms' store lost is rebuilt from the record by the first call
//! that finds it gone ([`RoomImage`]). The law's state (its mean-session estimate, health, credit) is
//! the leader's. A lease moving to another instance restarts the law there
//! from the prior: admission stays under the target either way, because the
//! rooms cap every pass at `target − active`.

use super::controller::{AdmissionController, AdmissionParams, Decision, Signals};
use super::law_log::{LawLog, TracingLawLog};
use super::provider_health::ProviderHealth;
use super::records::{MemRoomRecords, RoomRecords};
use super::room::{Gauge, Place, RoomError, RoomImage, RoomSpec, Rooms, Session, SessionEnd};
use super::token::{AdmissionClaims, AdmissionError, AdmissionSigner, rfc3339_ms};
use crate::clock::Clock;
use crate::model::{EventId, OrderStatus, SeatState, UserId};
use crate::store::Store;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The tier of users whose credential names none, in a priority room (the public: last).
pub const PUBLIC_TIER: u8 = super::queue::MAX_TIERS - 1;

/// Tunables of the waiting room. Every limit has a unit in its name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WaitingRoomConfig {
    /// How often the admission law runs, ms, >= 1.
    pub tick_ms: u64,
    /// How long a tick's lease lasts, ms (a crashed leader is replaced after it), > `tick_ms`.
    pub lease_ms: i64,
    /// Fewest seconds a waiting client is told to wait before asking again, >= 1.
    pub poll_min_s: u64,
    /// Most seconds a waiting client is told to wait before asking again, >= `poll_min_s`.
    pub poll_max_s: u64,
    /// Mean session duration assumed before any session ended, ms (the brief: 90 s).
    pub prior_session_ms: u64,
}

impl Default for WaitingRoomConfig {
    fn default() -> Self {
        Self { tick_ms: 1_000, lease_ms: 3_000, poll_min_s: 2, poll_max_s: 60, prior_session_ms: 90_000 }
    }
}

impl WaitingRoomConfig {
    /// Whether every field is in range.
    pub fn valid(&self) -> bool {
        self.tick_ms >= 1
            && self.lease_ms > self.tick_ms as i64
            && self.poll_min_s >= 1
            && self.poll_max_s >= self.poll_min_s
            && self.prior_session_ms >= 1
    }
}

/// What a waiting room is built from.
pub struct WaitingRoomParts {
    /// The shared rooms.
    pub rooms: Arc<dyn Rooms>,
    /// The authority's record of the rooms.
    pub records: Arc<dyn RoomRecords>,
    /// The admission secret, >= 16 bytes (signs tokens, derives lottery seeds).
    pub secret: Vec<u8>,
    /// Tunables.
    pub config: WaitingRoomConfig,
    /// This instance's name among those sharing the rooms (the admission lease's holder).
    pub instance: String,
    /// Who watches the admission laws' runs.
    pub law_log: Arc<dyn LawLog>,
}

impl WaitingRoomParts {
    /// Rooms in this process's memory (one instance, the simulator, tests).
    pub fn in_memory(secret: &[u8]) -> Self {
        Self {
            rooms: Arc::new(super::room::MemRooms::new()),
            records: Arc::new(MemRoomRecords::new()),
            secret: secret.to_vec(),
            config: WaitingRoomConfig::default(),
            instance: "local".to_string(),
            law_log: Arc::new(TracingLawLog),
        }
    }
}

/// Why a waiting-room call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitingRoomError {
    /// The admission token does not admit.
    #[error(transparent)]
    Admission(#[from] AdmissionError),
    /// The rooms (or their record) refused.
    #[error(transparent)]
    Room(#[from] RoomError),
    /// The authority's record of the rooms could not answer (the store is down).
    #[error("waiting-room record unavailable: {0}")]
    Record(String),
}

/// A record call's result: the store being unavailable is the store's
/// failure (`Record`), not the rooms'.
fn recorded<T>(r: Result<T, RoomError>) -> Result<T, WaitingRoomError> {
    r.map_err(|e| match e {
        RoomError::Unavailable(why) => WaitingRoomError::Record(why),
        other => WaitingRoomError::Room(other),
    })
}

/// What a hold or checkout is asking the gate for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A hold: needs an open session.
    Hold,
    /// A checkout, named `key_id` by its hold and idempotency key ([`super::room::key_id`]):
    /// needs an open session, or one that this checkout's purchase ended (a retry).
    Checkout {
        /// The checkout's idempotency key, named.
        key_id: uuid::Uuid,
    },
}

/// A user's view of the queue (the body of the queue endpoints).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueStatus {
    /// The event.
    pub event_id: EventId,
    /// `not_joined`, `awaiting_draw`, `waiting`, `admitted`, `session_ended` or `sold_out`.
    pub state: &'static str,
    /// 1-based place in line (`waiting`).
    pub position: Option<u64>,
    /// Expected wait, s (`waiting`, once the rate is known).
    pub expected_wait_s: Option<u64>,
    /// Expected admission time, RFC 3339 (`waiting`, once the rate is known).
    pub expected_admission_at: Option<String>,
    /// Ask again after this many seconds (`awaiting_draw`, `waiting`); also the `Retry-After` header.
    pub retry_after_s: Option<u64>,
    /// The admission token to present on holds and checkouts (`admitted`).
    pub admission_token: Option<String>,
    /// When the admission expires, RFC 3339 (`admitted`, `session_ended`).
    pub admission_expires_at: Option<String>,
    /// When the sale opens, RFC 3339.
    pub opens_at: String,
    /// Users waiting now.
    pub waiting: u64,
    /// Checkout sessions open now.
    pub active_sessions: u32,
    /// The admission rate now, per second.
    pub admission_rate_per_s: f64,
}

/// The law's state for one room on this instance.
#[derive(Debug)]
struct Law {
    controller: AdmissionController,
    last_tick_ms: Option<i64>,
    active: u32,
    sold_out: bool,
}

/// One room's admission pass.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// The event.
    pub event_id: EventId,
    /// The law's decision.
    pub decision: Decision,
    /// Who was admitted, in order.
    pub admitted: Vec<(UserId, Session)>,
    /// Sessions ended by expiry in this pass (abandoned).
    pub expired: u32,
    /// Sessions open after the pass.
    pub active: u32,
    /// Users waiting after the pass.
    pub waiting: u64,
    /// Whether the event sold out (now or before).
    pub sold_out: bool,
}

/// The service's waiting room.
pub struct WaitingRoom {
    rooms: Arc<dyn Rooms>,
    records: Arc<dyn RoomRecords>,
    signer: AdmissionSigner,
    seed_key: Hmac<Sha256>,
    clock: Arc<dyn Clock>,
    instance: String,
    config: WaitingRoomConfig,
    provider: Arc<ProviderHealth>,
    /// Rooms the record showed this instance: a recorded room never changes
    /// or goes, so they are kept; an event not here is asked of the record every time.
    known: Mutex<BTreeMap<EventId, RoomSpec>>,
    /// Turns true once this instance has seen a room: its ticks start then.
    any_room: tokio::sync::watch::Sender<bool>,
    laws: Mutex<BTreeMap<EventId, Law>>,
    law_log: Arc<dyn LawLog>,
    /// The fault seam (planted bugs of the gate).
    faults: crate::fault::FaultSeam,
    /// Per room: hold attempts and refusals since the last tick (this instance's).
    holds: Mutex<BTreeMap<EventId, (u64, u64)>>,
}

impl std::fmt::Debug for WaitingRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitingRoom").field("instance", &self.instance).finish_non_exhaustive()
    }
}

impl WaitingRoom {
    /// A waiting room over `parts`, judging time by `clock`, reading the
    /// provider through `provider`. Preconditions: the secret is >= 16 bytes and the config valid.
    pub fn new(
        parts: WaitingRoomParts,
        clock: Arc<dyn Clock>,
        provider: Arc<ProviderHealth>,
        faults: crate::fault::FaultSeam,
    ) -> Self {
        assert!(parts.config.valid(), "waiting-room config out of range: {:?}", parts.config);
        let mut seed_key = Hmac::<Sha256>::new_from_slice(&parts.secret).expect("hmac takes any key length");
        seed_key.update(b"holdfast lottery seed\0");
        Self {
            rooms: parts.rooms,
            records: parts.records,
            signer: AdmissionSigner::new(&parts.secret),
            seed_key,
            clock,
            instance: parts.instance,
            faults,
            config: parts.config,
            provider,
            known: Mutex::new(BTreeMap::new()),
            any_room: tokio::sync::watch::Sender::new(false),
            laws: Mutex::new(BTreeMap::new()),
            law_log: parts.law_log,
            holds: Mutex::new(BTreeMap::new()),
        }
    }

    /// The config.
    pub fn config(&self) -> &WaitingRoomConfig {
        &self.config
    }

    /// The lottery seed of `event_id`: secret (derived from the admission
    /// secret) until the draw reveals it, and the same on every instance.
    fn seed(&self, event_id: &EventId) -> [u8; 32] {
        let mut mac = self.seed_key.clone();
        mac.update(event_id.as_bytes());
        mac.finalize().into_bytes().into()
    }

    /// Opens `event_id`'s room with `spec` (idempotent for an equal spec):
    /// recorded by the authority first, then opened in the rooms; answers
    /// the lottery's commitment for a lottery.
    pub async fn open(&self, event_id: &EventId, spec: &RoomSpec) -> Result<Option<String>, WaitingRoomError> {
        if !spec.valid() {
            return Err(RoomError::BadSpec.into());
        }
        recorded(self.records.record_room(event_id, spec).await)?;
        self.saw(event_id, *spec);
        self.rooms.open(event_id, spec, self.seed(event_id)).await?;
        match self.rooms.lottery(event_id).await {
            Ok(record) => Ok(Some(record.commitment)),
            Err(RoomError::NotALottery(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The room of `event_id` as the authority records it, `None` when it
    /// has none. A room its store lost is rebuilt first; while its store or
    /// the record cannot answer: `Unavailable` (fail closed).
    pub async fn spec(&self, event_id: &EventId) -> Result<Option<RoomSpec>, WaitingRoomError> {
        let known = self.known.lock().expect("known lock").get(event_id).copied();
        let Some(spec) = (match known {
            Some(spec) => Some(spec),
            None => recorded(self.records.room(event_id).await)?,
        }) else {
            return Ok(None);
        };
        self.saw(event_id, spec);
        let live = match self.rooms.spec(event_id).await {
            Err(RoomError::Unavailable(_)) if crate::planted!(self.faults, OutageOpensGate) => return Ok(None),
            live => live?,
        };
        if live.is_none() {
            if crate::planted!(self.faults, RoomLossOpensGate) {
                return Ok(None);
            }
            self.restore(event_id).await?;
        }
        Ok(Some(spec))
    }

    /// Rebuilds `event_id`'s room from the record (see [`RoomImage`]), unless
    /// another call rebuilt it first.
    async fn restore(&self, event_id: &EventId) -> Result<(), WaitingRoomError> {
        let journal =
            recorded(self.records.journal(event_id).await)?.ok_or_else(|| RoomError::NoRoom(event_id.to_string()))?;
        let image = RoomImage::of(&journal, self.seed(event_id), self.clock.now_ms());
        if self.rooms.restore(event_id, &image).await? {
            tracing::warn!(
                event_id = event_id.as_str(),
                waiting = image.waiting.len(),
                sessions = image.sessions.len(),
                "waiting room rebuilt from its record: its store had lost it"
            );
        }
        Ok(())
    }

    fn saw(&self, event_id: &EventId, spec: RoomSpec) {
        self.known.lock().expect("known lock").insert(event_id.clone(), spec);
        self.any_room.send_if_modified(|any| !std::mem::replace(any, true));
    }

    /// Resolves once this instance has seen a room (opened one, or served a
    /// call on one): until then it runs no admission tick (and sets no timer).
    pub async fn first_room(&self) {
        let mut rx = self.any_room.subscribe();
        let _ = rx.wait_for(|any| *any).await;
    }

    async fn room_of(&self, event_id: &EventId) -> Result<RoomSpec, WaitingRoomError> {
        self.spec(event_id).await?.ok_or_else(|| RoomError::NoRoom(event_id.to_string()).into())
    }

    /// `user_id` joins `event_id`'s queue; `tier` is their credential's
    /// (priority rooms only; `None` is the public). A user whose session
    /// ended joins as a new arrival.
    pub async fn join(
        &self,
        store: &dyn Store,
        event_id: &EventId,
        user_id: &UserId,
        tier: Option<u8>,
    ) -> Result<QueueStatus, WaitingRoomError> {
        let spec = self.room_of(event_id).await?;
        let tier = match spec.policy {
            super::room::Policy::Priority => tier.unwrap_or(PUBLIC_TIER),
            _ => 0,
        };
        // A purchase its order undid leaves the session open: not a new arrival.
        self.place(store, event_id, user_id).await?;
        let now_ms = self.clock.now_ms();
        let place = self.rooms.join(event_id, user_id, tier, now_ms).await?;
        if matches!(place, Place::Waiting { .. } | Place::AwaitingDraw) {
            recorded(self.records.record_join(event_id, user_id, tier, now_ms).await)?;
        }
        let (place, gauge) = self.place(store, event_id, user_id).await?;
        Ok(self.view(event_id, user_id, &spec, place, gauge))
    }

    /// Where `user_id` stands on `event_id`, with their admission token once admitted.
    pub async fn status(
        &self,
        store: &dyn Store,
        event_id: &EventId,
        user_id: &UserId,
    ) -> Result<QueueStatus, WaitingRoomError> {
        let spec = self.room_of(event_id).await?;
        let (place, gauge) = self.place(store, event_id, user_id).await?;
        Ok(self.view(event_id, user_id, &spec, place, gauge))
    }

    /// Where `user_id` stands, a purchase whose order failed undone first:
    /// its session is open again (until its expiry).
    async fn place(
        &self,
        store: &dyn Store,
        event_id: &EventId,
        user_id: &UserId,
    ) -> Result<(Place, Gauge), WaitingRoomError> {
        let (place, gauge) = self.rooms.place(event_id, user_id).await?;
        let Place::Admitted { session, ended: Some(SessionEnd::Purchased { order_id, .. }) } = place else {
            return Ok((place, gauge));
        };
        let now_ms = self.clock.now_ms();
        if session.expires_at_ms <= now_ms || !purchase_undone(store, order_id).await? {
            return Ok((place, gauge));
        }
        recorded(self.records.record_purchase(event_id, user_id, session.admitted_at_ms, None).await)?;
        self.rooms.reopen(event_id, user_id, session.session_id, order_id, now_ms).await?;
        Ok(self.rooms.place(event_id, user_id).await?)
    }

    fn view(&self, event_id: &EventId, user_id: &UserId, spec: &RoomSpec, place: Place, gauge: Gauge) -> QueueStatus {
        let now_ms = self.clock.now_ms();
        let mut s = QueueStatus {
            event_id: event_id.clone(),
            state: "not_joined",
            position: None,
            expected_wait_s: None,
            expected_admission_at: None,
            retry_after_s: None,
            admission_token: None,
            admission_expires_at: None,
            opens_at: rfc3339_ms(spec.opens_at_ms),
            waiting: gauge.waiting,
            active_sessions: gauge.active,
            admission_rate_per_s: gauge.rate_per_s,
        };
        let clamp = |s: u64| s.clamp(self.config.poll_min_s, self.config.poll_max_s);
        match place {
            Place::NotJoined => {}
            Place::AwaitingDraw => {
                s.state = "awaiting_draw";
                s.retry_after_s = Some(clamp(u64::try_from(spec.opens_at_ms - now_ms).unwrap_or(0) / 1000));
            }
            Place::Waiting { position } => {
                s.state = "waiting";
                s.position = Some(position);
                let wait_s = (gauge.rate_per_s > 0.0).then(|| (position as f64 / gauge.rate_per_s).ceil() as u64);
                let until_open_s = u64::try_from(spec.opens_at_ms - now_ms).unwrap_or(0) / 1000;
                s.expected_wait_s = wait_s.map(|w| w + until_open_s);
                s.expected_admission_at =
                    s.expected_wait_s.map(|w| rfc3339_ms(now_ms.saturating_add(w.saturating_mul(1000) as i64)));
                // Ask again after a quarter of the expected wait: often when near, rarely when far.
                s.retry_after_s = Some(clamp(s.expected_wait_s.unwrap_or(until_open_s.max(position)) / 4));
            }
            Place::Admitted { session, ended } => {
                s.admission_expires_at = Some(rfc3339_ms(session.expires_at_ms));
                if ended.is_some() || session.expires_at_ms <= now_ms {
                    s.state = "session_ended";
                } else {
                    s.state = "admitted";
                    s.admission_token = Some(self.signer.issue(&AdmissionClaims {
                        event_id: event_id.clone(),
                        user_id: user_id.clone(),
                        session_id: session.session_id,
                        position: session.position,
                        issued_at_ms: session.admitted_at_ms,
                        expires_at_ms: session.expires_at_ms,
                    }));
                }
            }
            Place::SoldOut => s.state = "sold_out",
        }
        s
    }

    /// Checks `token` for `what` by `user_id` on `event_id`, before the store
    /// is touched: `Ok(None)` when the event has no waiting room, the
    /// token's claims when it admits, the refusal otherwise (`Unavailable`
    /// when the rooms or their record cannot answer: never let through).
    /// A hold needs an open session. A checkout also passes on the session
    /// its own purchase ended, when it is that purchase's retry (the same
    /// hold and idempotency key), even past the token's expiry: the retry
    /// asks what became of an order already made and takes no turn.
    pub async fn gate(
        &self,
        store: &dyn Store,
        event_id: &EventId,
        user_id: &UserId,
        token: Option<&str>,
        what: Use,
    ) -> Result<Option<AdmissionClaims>, WaitingRoomError> {
        if self.spec(event_id).await?.is_none() {
            return Ok(None);
        }
        let claims = self.signer.read(token, event_id, user_id)?;
        let expired = claims.expired(self.clock.now_ms());
        let place = match (&expired, what) {
            (Some(expired), Use::Hold) => return Err(expired.clone().into()),
            // Where the rooms cannot say whether it is a retry, the expiry answers.
            (Some(expired), Use::Checkout { .. }) => {
                self.place(store, event_id, user_id).await.map_err(|_| expired.clone())?.0
            }
            (None, _) => self.place(store, event_id, user_id).await?.0,
        };
        let retry = match (place, what) {
            (
                Place::Admitted { session, ended: Some(SessionEnd::Purchased { key_id, .. }) },
                Use::Checkout { key_id: k },
            ) => session.session_id == claims.session_id && key_id == k,
            _ => false,
        };
        if let Some(expired) = expired.filter(|_| !retry) {
            return Err(expired.into());
        }
        let open = matches!(place, Place::Admitted { session, ended: None } if session.session_id == claims.session_id);
        if !open && !retry && !crate::planted!(self.faults, AdmissionIgnoresSession) {
            return Err(AdmissionError::SessionEnded.into());
        }
        Ok(Some(claims))
    }

    /// A hold on waiting-room event `event_id` was attempted; `refused` when
    /// a seat was taken (the contention signal). Precondition: the gate admitted it.
    pub fn hold_attempted(&self, event_id: &EventId, refused: bool) {
        let mut holds = self.holds.lock().expect("holds lock");
        let (attempts, refusals) = holds.entry(event_id.clone()).or_default();
        *attempts += 1;
        *refusals += u64::from(refused);
    }

    /// Ends `claims`' session on `event_id` by the purchase `order_id` made
    /// under the idempotency key named `key_id`: recorded by the authority
    /// first, then in the rooms. Ending it again changes nothing.
    pub async fn purchased(
        &self,
        event_id: &EventId,
        claims: &AdmissionClaims,
        order_id: crate::model::OrderId,
        key_id: uuid::Uuid,
    ) -> Result<(), WaitingRoomError> {
        let why = SessionEnd::Purchased { order_id, key_id };
        recorded(self.records.record_purchase(event_id, &claims.user_id, claims.issued_at_ms, Some(why)).await)?;
        let ended =
            self.rooms.end_session(event_id, &claims.user_id, claims.session_id, why, self.clock.now_ms()).await?;
        if let (Some(duration_ms), Some(law)) = (ended, self.laws.lock().expect("laws lock").get_mut(event_id)) {
            law.controller.session_ended(duration_ms);
            self.law_log.session_ended(event_id, duration_ms);
        }
        Ok(())
    }

    /// The lottery's public record for `event_id` (`NoRoom` or `NotALottery` otherwise).
    pub async fn lottery(&self, event_id: &EventId) -> Result<super::room::LotteryRecord, WaitingRoomError> {
        self.room_of(event_id).await?;
        Ok(self.rooms.lottery(event_id).await?)
    }

    /// One tick: for every room whose lease this instance takes, runs the
    /// law and one admission pass, and marks the event sold out once every
    /// seat is sold. Bounded by the number of rooms.
    pub async fn tick(&self, store: &dyn Store) -> Result<Vec<TickReport>, WaitingRoomError> {
        let now_ms = self.clock.now_ms();
        let provider = self.provider.take();
        let mut reports = Vec::new();
        for event_id in recorded(self.records.rooms().await)? {
            let Some(spec) = self.spec(&event_id).await? else { continue };
            if !self.rooms.lead(&event_id, &self.instance, self.config.lease_ms, now_ms).await? {
                continue;
            }
            let (hold_attempts, hold_refusals) =
                self.holds.lock().expect("holds lock").remove(&event_id).unwrap_or_default();
            let (decision, sold_out) = {
                let mut laws = self.laws.lock().expect("laws lock");
                let law = laws.entry(event_id.clone()).or_insert_with(|| Law {
                    controller: AdmissionController::new(AdmissionParams {
                        target_active_sessions: spec.target_active_sessions,
                        prior_session_ms: self.config.prior_session_ms,
                        ..AdmissionParams::default()
                    }),
                    last_tick_ms: None,
                    active: 0,
                    sold_out: false,
                });
                let elapsed_ms = match law.last_tick_ms {
                    Some(t) => u64::try_from(now_ms - t).unwrap_or(0),
                    None => self.config.tick_ms,
                };
                law.last_tick_ms = Some(now_ms);
                let signals = Signals {
                    active_sessions: law.active,
                    hold_attempts,
                    hold_refusals,
                    provider_calls: provider.calls,
                    provider_errors: provider.errors,
                    provider_latency_p95_ms: provider.latency_p95_ms,
                };
                let decision = law.controller.tick(elapsed_ms, &signals);
                self.law_log.ran(&event_id, now_ms, &signals, &decision);
                (decision, law.sold_out)
            };
            let pass = self.rooms.admit(&event_id, decision.admit, decision.rate_per_s, now_ms).await?;
            recorded(self.records.record_admissions(&event_id, &pass.admitted).await)?;
            let now_sold_out = sold_out || sold_out_in(store, &event_id).await;
            if now_sold_out && !sold_out {
                recorded(self.records.record_sold_out(&event_id).await)?;
                self.rooms.sell_out(&event_id).await?;
            }
            {
                let mut laws = self.laws.lock().expect("laws lock");
                let law = laws.get_mut(&event_id).expect("the law was made above");
                for d in &pass.expired_ms {
                    law.controller.session_ended(*d);
                    self.law_log.session_ended(&event_id, *d);
                }
                law.active = pass.active;
                law.sold_out = now_sold_out;
            }
            reports.push(TickReport {
                event_id,
                decision,
                expired: u32::try_from(pass.expired_ms.len()).unwrap_or(u32::MAX),
                admitted: pass.admitted,
                active: pass.active,
                waiting: pass.waiting,
                sold_out: now_sold_out,
            });
        }
        Ok(reports)
    }
}

/// Whether the purchase `order_id` came to nothing (declined, released
/// unresolved, or charged only after its seats were released): the
/// session it ended is open again. Pending, reconciling and confirmed orders stand.
async fn purchase_undone(store: &dyn Store, order_id: crate::model::OrderId) -> Result<bool, WaitingRoomError> {
    let order = store.order(order_id).await.map_err(|e| WaitingRoomError::Record(format!("order {order_id}: {e}")))?;
    Ok(!order.status.owns_seats() && order.status != OrderStatus::Confirmed)
}

/// Whether every seat of `event_id` is sold (a store that cannot answer: not yet).
async fn sold_out_in(store: &dyn Store, event_id: &EventId) -> bool {
    match store.seat_map(event_id).await {
        Ok(seats) => !seats.is_empty() && seats.iter().all(|s| s.state == SeatState::Sold),
        Err(_) => false,
    }
}
