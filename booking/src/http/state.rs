//! The service's shared state and its configuration.

use super::auth::{Authenticator, Claims};
use super::cache::SeatMapCache;
use super::problem::Problem;
use super::rate_limit::RateLimiter;
use crate::fault::FaultSeam;
use crate::metrics::Metrics;
use crate::model::EventId;
use crate::store::Store;
use async_trait::async_trait;
use axum::http::HeaderMap;
use std::sync::Arc;
use tokio::sync::Notify;

/// The default cap on seats of one event one user has at once: one
/// checkout's worth ([`MAX_SEATS_PER_HOLD`](crate::model::MAX_SEATS_PER_HOLD)).
pub const DEFAULT_MAX_HELD_SEATS_PER_USER: u32 = 8;

/// Queue polls per user per event per minute unless configured: twice what
/// a client that waits as told (at least a second) needs.
pub const DEFAULT_QUEUE_POLLS_PER_MINUTE: u32 = 120;

/// Tunables of the service. Every limit has a unit in its name.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// How long a hold lasts, by the store's clock.
    pub hold_ttl_ms: i64,
    /// How long a payment may stay unresolved before its seats may be released.
    pub payment_ttl_ms: i64,
    /// Hold attempts one user may make per minute.
    pub hold_attempts_per_minute: u32,
    /// Seats of one event one user may have at once, held or in payment
    /// (`None`: no cap). A hold past it is refused `409 hold-limit`.
    pub max_held_seats_per_user: Option<u32>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Queue polls (`GET .../queue`) one user may make per event per minute
    /// (then `429 rate-limited` with Retry-After). A client that waits as
    /// told polls at most once a second.
    pub queue_polls_per_minute: u32,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            hold_ttl_ms: 5 * 60_000,
            payment_ttl_ms: 2 * 60_000,
            hold_attempts_per_minute: 60,
            max_held_seats_per_user: Some(DEFAULT_MAX_HELD_SEATS_PER_USER),
            max_body_bytes: 64 * 1024,
            queue_polls_per_minute: DEFAULT_QUEUE_POLLS_PER_MINUTE,
        }
    }
}

/// Receives the payment provider's webhooks: verifies and applies them.
#[async_trait]
pub trait WebhookSink: Send + Sync + 'static {
    /// Verifies `body` against `headers` (signature) and applies it. Errors are 4xx problems.
    async fn receive(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Problem>;
}

/// Everything a handler needs. Built only by [`Service::new`](crate::service::Service::new),
/// which wires the store through the one place that invalidates the cache
/// and the webhooks through the payment workflow; handlers read it.
#[derive(Clone)]
pub struct AppState {
    /// The authority.
    pub(crate) store: Arc<dyn Store>,
    /// The seat-map cache (never consulted by writes).
    pub(crate) cache: Arc<dyn SeatMapCache>,
    /// Verifies user and admin tokens.
    pub(crate) auth: Authenticator,
    /// Hold-attempt limiter.
    pub(crate) rate_limit: Arc<RateLimiter>,
    /// Queue-poll limiter, by user and event.
    pub(crate) poll_limit: Arc<RateLimiter>,
    /// Counters.
    pub(crate) metrics: Arc<Metrics>,
    /// Tunables.
    pub(crate) config: ServiceConfig,
    /// The fault seam (production: [`FaultSeam::none`]).
    pub(crate) faults: FaultSeam,
    /// The payment webhook receiver.
    pub(crate) webhooks: Arc<dyn WebhookSink>,
    /// Woken after each checkout so the dispatcher need not wait for its next poll.
    pub(crate) dispatch_wake: Arc<Notify>,
    /// The waiting rooms: the gate before holds and checkouts on their events.
    pub(crate) waiting_room: Arc<crate::admission::waiting_room::WaitingRoom>,
    /// The database's circuit, where the store has one (`bookingd`): readiness
    /// reads it, `/metrics` shows it. `None` in the simulator.
    pub(crate) db: Option<Arc<crate::store::circuit::Circuit>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AppState {
    /// `403` unless verified `claims` may touch `event_id` (when given).
    pub fn authorize(&self, claims: Claims, event_id: Option<&EventId>) -> Result<Claims, Problem> {
        if let Some(ev) = event_id
            && !claims.allows_event(ev)
        {
            return Err(Problem::forbidden(format!("not authorised for event {ev}")));
        }
        Ok(claims)
    }

    /// `403` unless verified `claims` are an operator's.
    pub fn require_admin(&self, claims: Claims) -> Result<Claims, Problem> {
        if !claims.admin {
            return Err(Problem::forbidden("admin credential required"));
        }
        Ok(claims)
    }
}
