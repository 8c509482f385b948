//! A virtual user: a seeded script of browse, hold, checkout (or abandon, or
//! release), with the client-side faults — paused clients and stale-token
//! replays — woven in. Every request goes through [`Actor::call`], which
//! records it in the trace as invoked, then ok, fail or unknown.

use crate::world::client::{Call, Reply, SimClient};
use crate::world::recorder::Recorder;
use crate::world::revalidation::SeatSeen;
use booking::http::api::{HoldView, OrderView, ReleaseView};
use booking::http::problem::Problem;
use booking::model::{EventId, HoldToken, SeatId, SeatState, UserId};
use booking::problem_kind::ProblemKind;
use invariants::trace::{ClientOp, FaultEvent, OpResult, WorldFact};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Up to `n` adjacent seats of `seats` (the event's, in order) starting at
/// `first`, which must be one of them.
fn adjacent_run(seats: &[SeatId], first: &str, n: usize) -> Vec<SeatId> {
    let start = seats.iter().position(|s| s == first).expect("available seats are seats of the event");
    seats[start..(start + n).min(seats.len())].to_vec()
}

/// Share of multi-seat selections sent in the order the user clicked them
/// (the last seat first), not in the seats' own order.
pub const CLICK_ORDER_SHARE: f64 = 0.5;

/// Share of checkouts whose idempotency key is a naive client's
/// `checkout-<flow>`, which other users send too.
pub const NAIVE_KEY_SHARE: f64 = 0.1;

/// Most extra holds one hoarding spree asks for.
pub const MAX_HOARD_HOLDS: u32 = 6;
/// A user's think time between its hold and its checkout, ms (uniform).
pub const CHECKOUT_THINK_MS: (u64, u64) = (200, 2_000);
/// Wait between two polls of an order's status, ms (uniform, end exclusive).
pub const STATUS_POLL_MS: (u64, u64) = (500, 1_500);
/// Share of settled checkouts sent once more under the same key (which must
/// return the same order).
pub const RETRY_AFTER_THE_FACT_SHARE: f64 = 0.2;
/// Wait before retrying a request whose answer was unknown, on the next host, ms (uniform, end exclusive).
pub const RETRY_BACKOFF_MS: (u64, u64) = (100, 400);
/// Share of stale replays, right after a new hold, that present the user's
/// own previous token (the rest: another user's newest hold).
pub const OWN_OLD_TOKEN_SHARE: f64 = 0.5;
/// Share of stale replays sent as a checkout (the rest: a release).
pub const STALE_AS_CHECKOUT_SHARE: f64 = 0.75;

/// What a user does, as probabilities and times.
#[derive(Debug, Clone)]
pub struct UserParams {
    /// Events and their seats (sorted), shared by every user of a world.
    pub events: Arc<Vec<(EventId, Vec<SeatId>)>>,
    /// Per event, the hot seats most users want.
    pub hot_seats: usize,
    /// Share of selections made in the hot set.
    pub hot_share: f64,
    /// Share of holds with several adjacent seats.
    pub multi_seat_share: f64,
    /// Largest multi-seat selection.
    pub max_seats_per_hold: usize,
    /// Share of granted holds checked out (the rest: abandoned or released).
    pub checkout_share: f64,
    /// Share of the non-checked-out holds abandoned (the rest released).
    pub abandon_share: f64,
    /// Hoarding: probability per granted hold that the user keeps it and holds
    /// again at once (up to [`MAX_HOARD_HOLDS`] more, until 409 hold-limit).
    pub hoard: Option<f64>,
    /// Double click: probability per granted checkout that it is sent again
    /// at once under a new idempotency key.
    pub double_submit: Option<f64>,
    /// Probability per checkout of a multi-seat hold that it first names only
    /// the hold's first seat.
    pub partial_checkout: Option<f64>,
    /// Think time range between actions.
    pub think_ms: (u64, u64),
    /// When the user arrives (its first step), ms after the start.
    pub arrival_ms: (u64, u64),
    /// Paused client: probability per checkout, and how long the pause lasts.
    pub pause: Option<crate::world::fault_params::PausedClients>,
    /// Stale-token replay: probability per granted hold.
    pub stale_replay: Option<f64>,
    /// Users start no new flow after this simulated time.
    pub active_until_ms: u64,
    /// Flows per user at most.
    pub max_flows: u32,
    /// Attempts of one request with the same idempotency key when the answer is unknown.
    pub max_attempts: u32,
    /// Polls of an order's status after checkout at most.
    pub max_status_polls: u32,
}

/// The part of a seat map (`booking::http::api::SeatMapView`) a user looks
/// at, borrowed from the response body: the map is the most frequent answer
/// in a run, and its other fields are not needed to pick seats.
#[derive(Debug, Deserialize)]
struct SeatMapRead<'a> {
    #[serde(borrow)]
    seats: Vec<SeatRead<'a>>,
}

/// One seat of [`SeatMapRead`].
#[derive(Debug, Deserialize)]
struct SeatRead<'a> {
    #[serde(borrow)]
    seat_id: std::borrow::Cow<'a, str>,
    state: SeatState,
    #[serde(default)]
    hold_expires_at_ms: Option<i64>,
}

impl SeatRead<'_> {
    /// The seat if a user might try it, now or once a hold's deadline has
    /// passed: available, or held with a deadline (tried only after it, see
    /// [`Actor::browse`]). The map's countdown is informative; a hold attempt
    /// lets the store decide (it takes over an expired hold inline, whether
    /// or not the sweeper has run).
    fn worth_a_look(&self) -> Option<SeatSeen> {
        let held_until_ms = match self.state {
            SeatState::Available => None,
            SeatState::Held => Some(self.hold_expires_at_ms?),
            SeatState::PaymentPending | SeatState::Sold => return None,
        };
        Some(SeatSeen { seat_id: SeatId::from(self.seat_id.as_ref()), held_until_ms })
    }
}

/// A hold some user was granted, kept for stale replays.
#[derive(Debug, Clone)]
pub struct SeenHold {
    /// Who holds it.
    pub owner: UserId,
    /// The event.
    pub event_id: EventId,
    /// The token.
    pub token: HoldToken,
    /// The seats.
    pub seat_ids: Vec<SeatId>,
}

/// Holds seen by anyone, shared by every user of a world (bounded).
pub type SeenHolds = Arc<Mutex<Vec<SeenHold>>>;

/// Bound on remembered holds.
const MAX_SEEN_HOLDS: usize = 4096;

/// How long a user waits before looking again at an event it just saw sold
/// out for the `streak`-th time in a row (0 = the first time): a uniform
/// draw from 2–6 s, doubling with each further sold-out look, capped at
/// 20–30 s — the exponential backoff with jitter a well-behaved app polls a
/// scarce resource with. Returns (lowest, highest) ms.
pub fn sold_out_backoff_ms(streak: u32) -> (u64, u64) {
    const BASE_MS: (u64, u64) = (2_000, 6_000);
    const CAP_MS: (u64, u64) = (20_000, 30_000);
    let doubling = 1u64 << streak.min(8);
    let range = ((BASE_MS.0 * doubling).min(CAP_MS.0), (BASE_MS.1 * doubling).min(CAP_MS.1));
    assert!(range.0 < range.1);
    range
}

/// A user bound to its services, token and trace.
#[derive(Debug)]
pub struct Actor {
    /// User id.
    pub user: UserId,
    /// Bearer token.
    pub token: String,
    /// One client per service host.
    pub services: Vec<SimClient>,
    /// The service host this user's connection goes to (an index into
    /// `services`): drawn from the seed, kept until a request there gets no
    /// answer, then the next host — as a keep-alive connection through a
    /// layer-4 load balancer stays on one backend until it breaks.
    pub home: usize,
    /// The trace.
    pub recorder: Recorder,
    /// The user's own seeded randomness.
    pub rng: ChaCha8Rng,
    /// The admission token presented on holds and checkouts (waiting-room worlds, once admitted).
    pub admission: Option<String>,
    /// The seat maps this user read last, for revalidation.
    pub seen_maps: crate::world::revalidation::SeenMaps,
    /// Whether the request being sent is a deliberate misuse ([`Actor::misuse`]).
    misusing: bool,
}

/// The problem kind of a 4xx answer (`urn:holdfast:problem:<kind>`), read
/// as the API's own [`Problem`]; [`ProblemKind::NotAProblem`] for a body that is not one.
pub(crate) fn kind_of(body: &Value) -> ProblemKind {
    Problem::deserialize(body).ok().and_then(|p| p.kind()).unwrap_or(ProblemKind::NotAProblem)
}

/// The recorded result of a 2xx answer to `op`, read as the API's own view
/// of it ([`HoldView`], [`ReleaseView`], [`OrderView`]); `None` when the
/// body is not that view.
fn result_of(op: &ClientOp, body: &Value) -> Option<OpResult> {
    Some(match op {
        ClientOp::Hold { .. } => {
            let hold = HoldView::deserialize(body).ok()?;
            OpResult::Held {
                hold_token: hold.hold_token,
                seat_ids: hold.seats.into_iter().map(|s| s.seat_id).collect(),
                expires_at_ms: hold.expires_at_ms,
            }
        }
        ClientOp::Release { .. } => OpResult::Released { seat_ids: ReleaseView::deserialize(body).ok()?.released },
        ClientOp::Checkout { .. } => {
            let o = OrderView::deserialize(body).ok()?;
            OpResult::CheckedOut {
                order_id: o.order_id,
                status: o.status,
                booking_ids: o.booking_ids,
                replayed: o.replayed,
            }
        }
        ClientOp::OrderStatus { .. } => {
            let o = OrderView::deserialize(body).ok()?;
            OpResult::OrderStatus { order_id: o.order_id, status: o.status, booking_ids: o.booking_ids }
        }
        ClientOp::SeatMap { .. } | ClientOp::Request { .. } => return None,
    })
}

/// The request `op` is sent as: method, path, idempotency key, JSON body.
fn request_of(op: &ClientOp) -> (&'static str, String, Option<&str>, Option<Value>) {
    match op {
        ClientOp::Hold { event_id, seat_ids, .. } => {
            ("POST", format!("/v1/events/{event_id}/holds"), None, Some(json!({ "seat_ids": seat_ids })))
        }
        ClientOp::Release { event_id, hold_token } => {
            ("DELETE", format!("/v1/events/{event_id}/holds/{hold_token}"), None, None)
        }
        ClientOp::Checkout { event_id, hold_token, seat_ids, idempotency_key, .. } => (
            "POST",
            format!("/v1/events/{event_id}/holds/{hold_token}/checkout"),
            Some(idempotency_key.as_str()),
            Some(json!({ "seat_ids": seat_ids })),
        ),
        ClientOp::OrderStatus { order_id } => ("GET", format!("/v1/orders/{order_id}"), None, None),
        ClientOp::SeatMap { .. } | ClientOp::Request { .. } => unreachable!("sent by their own callers"),
    }
}

impl Actor {
    /// Builds the user `index` of `seed`.
    pub fn new(user: UserId, token: String, services: Vec<SimClient>, recorder: Recorder, seed: u64) -> Self {
        assert!(!services.is_empty());
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let home = rng.random_range(0..services.len());
        let seen_maps = crate::world::revalidation::SeenMaps::new(seed);
        Self { user, token, services, home, recorder, rng, admission: None, seen_maps, misusing: false }
    }

    pub(crate) async fn think(&mut self, range: (u64, u64)) {
        let ms = if range.1 > range.0 { self.rng.random_range(range.0..=range.1) } else { range.0 };
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }

    /// `op` with this user's admission token on it (holds and checkouts).
    fn stamped(&self, op: ClientOp) -> ClientOp {
        match op {
            ClientOp::Hold { event_id, seat_ids, .. } => {
                ClientOp::Hold { event_id, seat_ids, admission: self.admission.clone() }
            }
            ClientOp::Checkout { event_id, hold_token, seat_ids, idempotency_key, .. } => ClientOp::Checkout {
                event_id,
                hold_token,
                seat_ids,
                idempotency_key,
                admission: self.admission.clone(),
            },
            other => other,
        }
    }

    /// [`Actor::call`] of a request the world sends knowing it is wrong
    /// (recorded as a [`WorldFact::Misuse`]: a refusal is what it wants).
    pub async fn misuse(&mut self, op: ClientOp, attempts: u32) -> Result<OpResult, Option<ProblemKind>> {
        self.misusing = true;
        let answer = self.call(op, attempts).await;
        self.misusing = false;
        answer
    }

    /// Sends `op` to the user's home service host, retrying an unknown answer
    /// up to `attempts` times, each time on the next host (which becomes its
    /// home); each attempt is its own trace operation. Holds and checkouts
    /// carry the user's admission token, if it has one.
    /// Returns the last reply's recorded result: `Ok(result)`, `Err(Some(kind))`, or `Err(None)` if unknown.
    pub async fn call(&mut self, op: ClientOp, attempts: u32) -> Result<OpResult, Option<ProblemKind>> {
        let op = self.stamped(op);
        for _ in 0..attempts.max(1) {
            let host = self.home;
            let op_id = self.recorder.invoke(&self.user, op.clone(), Some(host as u32));
            if self.misusing {
                self.recorder.world(WorldFact::Misuse { op_id });
            }
            let (method, path, key, body) = request_of(&op);
            let admission = match &op {
                ClientOp::Hold { admission, .. } | ClientOp::Checkout { admission, .. } => admission.as_deref(),
                _ => None,
            };
            let call = Call {
                method,
                path,
                token: Some(&self.token),
                idempotency_key: key,
                admission,
                if_none_match: None,
                body,
                op: Some(op_id),
            };
            match self.services[host].send(call).await {
                Reply::Answered { status, body } if (200..300).contains(&status) => {
                    let result = result_of(&op, &body);
                    let result =
                        result.unwrap_or_else(|| panic!("service answered {status} with an unparseable body: {body}"));
                    self.recorder.ok(op_id, result.clone(), status);
                    return Ok(result);
                }
                Reply::Answered { status, body } if (400..500).contains(&status) => {
                    let kind = kind_of(&body);
                    self.recorder.fail(op_id, kind, status, &body);
                    return Err(Some(kind));
                }
                Reply::Answered { status, body } => {
                    self.recorder.unknown(op_id, &format!("http {status} {}", kind_of(&body)))
                }
                Reply::Unknown(reason) => self.recorder.unknown(op_id, &reason),
            }
            self.fail_over();
            let (lo, hi) = RETRY_BACKOFF_MS;
            tokio::time::sleep(Duration::from_millis(self.rng.random_range(lo..hi))).await;
        }
        Err(None)
    }

    /// Reads an event's seat map (a traced operation) and returns the seats
    /// it shows worth trying, or `None` when no map came.
    /// `available_only` asks for the available seats alone
    /// (`?state=available`), as a user waiting for returns in a sold-out
    /// rush re-polls; otherwise the whole map, as a user's first look. A
    /// view read before may be revalidated ([`crate::world::revalidation`]): a
    /// `304` answers with the remembered map.
    pub(crate) async fn browse(&mut self, event_id: &EventId, available_only: bool) -> Option<Vec<SeatId>> {
        self.view(event_id, available_only.then_some(SeatState::Available)).await
    }

    /// Reads one view of an event's seat map: the whole map (`state` is
    /// `None`) or its seats in `state` alone (`?state=`); as [`Self::browse`].
    pub(crate) async fn view(&mut self, event_id: &EventId, state: Option<SeatState>) -> Option<Vec<SeatId>> {
        let host = self.home;
        let if_none_match = self.seen_maps.condition(event_id, state);
        let op = ClientOp::SeatMap { event_id: EventId::from(event_id), state, if_none_match: if_none_match.clone() };
        let op_id = self.recorder.invoke(&self.user, op, Some(host as u32));
        let query = state.map(|s| format!("?state={s}")).unwrap_or_default();
        let call = Call {
            method: "GET",
            path: format!("/v1/events/{event_id}/seats{query}"),
            token: Some(&self.token),
            idempotency_key: None,
            admission: None,
            if_none_match: if_none_match.as_deref(),
            body: None,
            op: Some(op_id),
        };
        let answer = self.services[host].send_raw(call).await;
        let seats = match answer {
            Ok(raw) if raw.status == 200 || raw.status == 304 => self.read_map(op_id, event_id, state, raw),
            Ok(raw) => {
                let body = serde_json::from_slice(&raw.body).unwrap_or(Value::Null);
                if (400..500).contains(&raw.status) {
                    self.recorder.fail(op_id, kind_of(&body), raw.status, &body);
                } else {
                    self.recorder.unknown(op_id, &format!("http {} {}", raw.status, kind_of(&body)));
                }
                None
            }
            Err(e) => {
                self.recorder.unknown(op_id, &e);
                self.fail_over();
                None
            }
        }?;
        let now_ms = crate::world::sim_clock::EPOCH_MS + Recorder::now_ms();
        Some(seats.into_iter().filter(|s| s.held_until_ms.is_none_or(|t| t < now_ms)).map(|s| s.seat_id).collect())
    }

    /// Records a `200` or `304` seat-map answer and returns the seats worth
    /// a look it shows (a `304`: the remembered map's); a `200` is remembered.
    fn read_map(
        &mut self,
        op_id: invariants::trace::OpId,
        event_id: &EventId,
        view: Option<SeatState>,
        raw: crate::world::client::Raw,
    ) -> Option<Vec<SeatSeen>> {
        let source = raw.source.clone().unwrap_or_default();
        if raw.status == 304 {
            self.recorder.ok(op_id, OpResult::SeatMap { etag: raw.etag, source, counts: [0; 4] }, 304);
            return self.seen_maps.seats(event_id, view).map(<[SeatSeen]>::to_vec);
        }
        let map: SeatMapRead<'_> = serde_json::from_slice(&raw.body).ok()?;
        let mut counts = [0u32; 4];
        for s in &map.seats {
            counts[invariants::model::http::ops::state_index(s.state)] += 1;
        }
        self.recorder.ok(op_id, OpResult::SeatMap { etag: raw.etag.clone(), source, counts }, 200);
        let seats: Vec<SeatSeen> = map.seats.iter().filter_map(SeatRead::worth_a_look).collect();
        if let Some(etag) = raw.etag {
            self.seen_maps.remember(event_id, view, etag, seats.clone());
        }
        Some(seats)
    }

    /// No answer from the home host: the next host becomes home.
    pub(crate) fn fail_over(&mut self) {
        self.home = (self.home + 1) % self.services.len();
    }

    /// Picks a selection among the seats the map showed available (the map
    /// may be stale: the store decides): hot seats with `hot_share`, and a
    /// run of adjacent seats with `multi_seat_share`.
    pub(crate) fn pick_seats(&mut self, p: &UserParams, seats: &[SeatId], available: &[SeatId]) -> Vec<SeatId> {
        let hot = p.hot_seats.clamp(1, seats.len());
        let hot_available: Vec<&SeatId> = available.iter().filter(|s| seats[..hot].contains(s)).collect();
        let first = if !hot_available.is_empty() && self.rng.random_bool(p.hot_share) {
            hot_available[self.rng.random_range(0..hot_available.len())].clone()
        } else {
            available[self.rng.random_range(0..available.len())].clone()
        };
        let n = if self.rng.random_bool(p.multi_seat_share) {
            self.rng.random_range(2..=p.max_seats_per_hold.max(2))
        } else {
            1
        };
        let mut run = adjacent_run(seats, &first, n);
        if run.len() > 1 && self.rng.random_bool(CLICK_ORDER_SHARE) {
            // Clicked from the far end: the service sorts a selection itself.
            run.reverse();
        }
        run
    }

    /// Runs the user's script until `active_until_ms` or `max_flows`: each
    /// flow thinks, picks an event, looks at its seats, and holds, then
    /// checks out, abandons or releases.
    pub async fn run(mut self, p: UserParams, seen: SeenHolds) {
        // Events this user last saw sold out, with how many looks in a row
        // found them so: its next look there asks for returns only, and waits longer.
        let mut sold_out: Vec<(EventId, u32)> = Vec::new();
        for flow in 0..p.max_flows {
            if Recorder::now_ms() >= p.active_until_ms as i64 {
                return;
            }
            self.think(if flow == 0 { p.arrival_ms } else { p.think_ms }).await;
            let (event_id, seats) = p.events[self.rng.random_range(0..p.events.len())].clone();
            let streak = sold_out.iter().find(|(e, _)| *e == event_id).map(|(_, n)| *n);
            let Some(available) = self.browse(&event_id, streak.is_some()).await else { continue };
            sold_out.retain(|(e, _)| *e != event_id);
            if available.is_empty() {
                let streak = streak.map_or(0, |n| n + 1);
                self.sold_out_look(&p, &seen, flow, streak).await;
                sold_out.push((event_id, streak));
                continue;
            }
            let seat_ids = self.pick_seats(&p, &seats, &available);
            let Some((hold_token, seat_ids)) = self.hold(&event_id, seat_ids, &seen).await else { continue };
            if let Some(prob) = p.stale_replay
                && self.rng.random_bool(prob)
            {
                self.replay_stale(&seen, flow, Some(hold_token)).await;
            }
            if let Some(prob) = p.hoard
                && self.rng.random_bool(prob)
            {
                self.hoard(&p, &event_id, &seats, &available).await;
            }
            if !self.rng.random_bool(p.checkout_share) {
                if self.rng.random_bool(p.abandon_share) {
                    continue; // abandoned: the hold expires
                }
                let _ = self.call(ClientOp::Release { event_id: event_id.clone(), hold_token }, p.max_attempts).await;
                continue;
            }
            self.check_out(&p, flow, &event_id, hold_token, &seat_ids).await;
        }
    }

    /// The event looked sold out for the `streak`-th time in a row (0 = the
    /// first): holds may expire or payments fail, so the user looks again
    /// later, backing off; a stale-token user tries someone else's hold
    /// meanwhile (a leaked link).
    async fn sold_out_look(&mut self, p: &UserParams, seen: &SeenHolds, flow: u32, streak: u32) {
        if let Some(prob) = p.stale_replay
            && self.rng.random_bool(prob)
        {
            self.replay_stale(seen, flow, None).await;
        }
        let (lo, hi) = sold_out_backoff_ms(streak);
        tokio::time::sleep(Duration::from_millis(self.rng.random_range(lo..hi))).await;
    }

    /// Asks for a hold of `seat_ids`; a granted one is remembered in `seen`
    /// (the pool stale tokens come from). Returns its token and seats.
    pub(crate) async fn hold(
        &mut self,
        event_id: &EventId,
        seat_ids: Vec<SeatId>,
        seen: &SeenHolds,
    ) -> Option<(HoldToken, Vec<SeatId>)> {
        let Ok(OpResult::Held { hold_token, seat_ids, .. }) =
            self.call(ClientOp::Hold { event_id: EventId::from(event_id), seat_ids, admission: None }, 1).await
        else {
            return None;
        };
        let mut s = seen.lock().expect("seen poisoned");
        if s.len() < MAX_SEEN_HOLDS {
            s.push(SeenHold {
                owner: self.user.clone(),
                event_id: EventId::from(event_id),
                token: hold_token,
                seat_ids: seat_ids.clone(),
            });
        }
        Some((hold_token, seat_ids))
    }

    /// Checks out hold `hold_token` of `seat_ids` in flow `flow`: maybe a
    /// pause first (the hold may expire meanwhile), maybe a half-hold
    /// checkout first, then the checkout itself (retried under one key),
    /// maybe a double click, the order's status polled until it settles, and
    /// maybe an idempotent retry after the fact. The checkout the service
    /// accepted, to retry later; `None` when none was.
    pub(crate) async fn check_out(
        &mut self,
        p: &UserParams,
        flow: u32,
        event_id: &EventId,
        hold_token: HoldToken,
        seat_ids: &[SeatId],
    ) -> Option<ClientOp> {
        if let Some(crate::world::fault_params::PausedClients { probability, pause_ms }) = p.pause
            && self.rng.random_bool(probability)
        {
            self.recorder
                .fault(FaultEvent::ClientPaused, format!("{} pauses {pause_ms} ms holding {hold_token}", self.user));
            tokio::time::sleep(Duration::from_millis(pause_ms)).await;
            self.recorder.fault(FaultEvent::ClientResumed, format!("{} resumes", self.user));
        } else {
            self.think(CHECKOUT_THINK_MS).await;
        }
        // This hold's checkout naming `seats`, under key `<user>-<flow><suffix>`,
        // or, from a naive client, `checkout-<flow><suffix>`: the same keys
        // other users send (a key is the sender's own, whoever else uses it).
        let owner = if self.rng.random_bool(NAIVE_KEY_SHARE) { "checkout".to_string() } else { self.user.to_string() };
        let checkout_of = |seats: &[SeatId], suffix: &str| ClientOp::Checkout {
            event_id: EventId::from(event_id),
            hold_token,
            seat_ids: seats.to_vec(),
            idempotency_key: format!("{owner}-{flow}{suffix}"),
            admission: None,
        };
        if seat_ids.len() > 1
            && let Some(prob) = p.partial_checkout
            && self.rng.random_bool(prob)
        {
            // Names the first seat only: must be refused (a hold is paid whole).
            let _ = self.misuse(checkout_of(&seat_ids[..1], "-part"), 1).await;
        }
        let checkout = checkout_of(seat_ids, "");
        let Ok(OpResult::CheckedOut { order_id, .. }) = self.call(checkout.clone(), p.max_attempts).await else {
            return None;
        };
        if let Some(prob) = p.double_submit
            && self.rng.random_bool(prob)
        {
            // The same hold again under a new key: must be refused (the seats are in payment).
            let _ = self.call(checkout_of(seat_ids, "-again"), 1).await;
        }
        for _ in 0..p.max_status_polls {
            let (lo, hi) = STATUS_POLL_MS;
            tokio::time::sleep(Duration::from_millis(self.rng.random_range(lo..hi))).await;
            match self.call(ClientOp::OrderStatus { order_id }, 1).await {
                Ok(OpResult::OrderStatus { status, .. }) if !status.owns_seats() => break,
                _ => {}
            }
        }
        // An idempotent retry after the fact must return the same order.
        if self.rng.random_bool(RETRY_AFTER_THE_FACT_SHARE) {
            let _ = self.call(checkout.clone(), 1).await;
        }
        Some(checkout)
    }

    /// Hoards: holds again at once, each time a run of 2..=`max_seats_per_hold`
    /// adjacent seats among those the map showed available, up to
    /// [`MAX_HOARD_HOLDS`] times or until the per-user cap refuses; capped
    /// there, hoards the next event of the world the same way, while these
    /// holds still stand (the cap is per event). The holds are kept and
    /// abandoned (they expire).
    async fn hoard(&mut self, p: &UserParams, event_id: &EventId, seats: &[SeatId], available: &[SeatId]) {
        if !self.hoard_one(p, event_id, seats, available).await || p.events.len() < 2 {
            return;
        }
        let at = p.events.iter().position(|(e, _)| e == event_id).expect("an event of the world");
        let (next, next_seats) = p.events[(at + 1) % p.events.len()].clone();
        if let Some(free) = self.browse(&next, true).await.filter(|f| !f.is_empty()) {
            self.hoard_one(p, &next, &next_seats, &free).await;
        }
    }

    /// One hoarding spree on `event_id`: true when the cap refused it.
    async fn hoard_one(&mut self, p: &UserParams, event_id: &EventId, seats: &[SeatId], available: &[SeatId]) -> bool {
        for _ in 0..MAX_HOARD_HOLDS {
            let first = &available[self.rng.random_range(0..available.len())];
            let n = self.rng.random_range(2..=p.max_seats_per_hold.max(2));
            let hold = ClientOp::Hold {
                event_id: EventId::from(event_id),
                seat_ids: adjacent_run(seats, first, n),
                admission: None,
            };
            if let Err(Some(kind)) = self.call(hold, 1).await
                && kind == ProblemKind::HoldLimit
            {
                return true;
            }
        }
        false
    }

    /// Presents a hold token that is not this user's current one: with
    /// `current` (just granted) set, half the time this user's own previous
    /// token (Alice's old request arriving after she holds again), else the
    /// newest hold of another user (a leaked or shared link; often still
    /// live), else any remembered hold. Three times in four a checkout, else
    /// a release.
    async fn replay_stale(&mut self, seen: &SeenHolds, flow: u32, current: Option<HoldToken>) {
        let pick = {
            let s = seen.lock().expect("seen poisoned");
            let own_old = || s.iter().rev().find(|h| h.owner == self.user && Some(h.token) != current);
            let others_newest = || s.iter().rev().find(|h| h.owner != self.user);
            let chosen = if current.is_some() && self.rng.random_bool(OWN_OLD_TOKEN_SHARE) {
                own_old().or_else(others_newest)
            } else {
                others_newest().or_else(own_old)
            };
            chosen.cloned()
        };
        let Some(old) = pick else { return };
        self.recorder
            .fault(FaultEvent::StaleTokenReplay, format!("{} replays {}'s token {}", self.user, old.owner, old.token));
        let op = if self.rng.random_bool(STALE_AS_CHECKOUT_SHARE) {
            ClientOp::Checkout {
                event_id: old.event_id,
                hold_token: old.token,
                seat_ids: old.seat_ids,
                idempotency_key: format!("{}-stale-{flow}", self.user),
                admission: None,
            }
        } else {
            ClientOp::Release { event_id: old.event_id, hold_token: old.token }
        };
        let _ = self.call(op, 1).await;
    }
}

#[cfg(test)]
mod tests {
    use super::sold_out_backoff_ms;

    #[test]
    fn sold_out_looks_back_off_exponentially_to_a_cap() {
        assert_eq!(sold_out_backoff_ms(0), (2_000, 6_000), "the first wait is the old fixed one");
        assert_eq!(sold_out_backoff_ms(1), (4_000, 12_000));
        assert_eq!(sold_out_backoff_ms(2), (8_000, 24_000));
        assert_eq!(sold_out_backoff_ms(3), (16_000, 30_000));
        for streak in [4, 8, 9, 1_000, u32::MAX] {
            assert_eq!(sold_out_backoff_ms(streak), (20_000, 30_000), "streak {streak}");
        }
    }
}
