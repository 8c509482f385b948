//! Wiring: one function builds the service — router, payment workflow, hold
//! sweeper — from its parts, the same way in `bookingd` and in the simulator.
//! Only the parts differ: store, cache, provider transport, clock, faults.

use crate::admission::provider_health::{MeasuredProvider, ProviderHealth};
use crate::admission::waiting_room::{TickReport, WaitingRoom, WaitingRoomError, WaitingRoomParts};
use crate::clock::Clock;
use crate::fault::{CommitPoint, FaultSeam};
use crate::http::auth::Authenticator;
use crate::http::cache::SeatMapCache;
use crate::http::problem::Problem;
use crate::http::rate_limit::RateLimiter;
use crate::http::{AppState, ServiceConfig, WebhookSink, router};
use crate::invalidating_store::InvalidatingStore;
use crate::metrics::{Metrics, PaymentOutcome};
use crate::payment::provider::PaymentProvider;
use crate::payment::replay_guard::ReplayGuard;
use crate::payment::webhook::{SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookError, verify_and_parse};
use crate::payment::workflow::{
    DispatchReport, InvalidConfig, ReconcileReport, WebhookOutcome, Workflow, WorkflowConfig, WorkflowError,
};
use crate::problem_kind::ProblemKind;
use crate::store::{Store, StoreError};
use crate::sweeper::{self, SweeperConfig};
use async_trait::async_trait;
use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Everything a service instance is made of.
pub struct ServiceParts {
    /// The authority.
    pub store: Arc<dyn Store>,
    /// Seat-map cache.
    pub cache: Arc<dyn SeatMapCache>,
    /// The payment provider client.
    pub provider: Arc<dyn PaymentProvider>,
    /// This host's clock (token expiry, rate limits, webhook timestamps). Never decides seat expiry.
    pub clock: Arc<dyn Clock>,
    /// Secret for user tokens, >= 16 bytes.
    pub token_secret: Vec<u8>,
    /// Secret shared with the provider for webhook signatures, >= 16 bytes.
    pub webhook_secret: Vec<u8>,
    /// Service tunables.
    pub config: ServiceConfig,
    /// Payment workflow tunables.
    pub workflow: WorkflowConfig,
    /// Sweeper tunables.
    pub sweeper: SweeperConfig,
    /// The fault seam (production: [`FaultSeam::none`]).
    pub faults: FaultSeam,
    /// The waiting rooms and their secret.
    pub waiting_room: WaitingRoomParts,
}

/// A built service: its state (for the router) and its background work.
pub struct Service {
    state: AppState,
    workflow: Arc<Workflow>,
    sweeper: SweeperConfig,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

/// Why a service could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The workflow configuration is invalid.
    #[error("invalid workflow config: {0:?}")]
    Workflow(InvalidConfig),
    /// A secret is shorter than 16 bytes.
    #[error("{0} must be at least 16 bytes")]
    ShortSecret(&'static str),
    /// The waiting-room configuration is out of range.
    #[error("invalid waiting-room config")]
    WaitingRoom,
}

/// Verifies provider webhooks and applies them through the workflow.
struct WorkflowWebhooks {
    workflow: Arc<Workflow>,
    secret: Vec<u8>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// The planted bug `replayed-webhook-refused` (`None` unless planted).
    replays: Option<ReplayGuard>,
}

impl WorkflowWebhooks {
    /// Counts a payment outcome only when this webhook decided it (the
    /// store says so from its conditional write): a duplicate, or one
    /// arriving after the dispatcher or the reconciler recorded the
    /// outcome, changes nothing and counts nothing.
    fn count(&self, outcome: WebhookOutcome) {
        match outcome {
            WebhookOutcome::Confirmed { decided_now: true } => self.metrics.payment(PaymentOutcome::Succeeded),
            WebhookOutcome::Compensating { decided_now: true } => self.metrics.payment(PaymentOutcome::LateSuccess),
            WebhookOutcome::Declined { decided_now: true } => self.metrics.payment(PaymentOutcome::Failed),
            WebhookOutcome::RefundRecorded { status } => self.metrics.refund_recorded(status),
            _ => {}
        }
    }
}

#[async_trait]
impl WebhookSink for WorkflowWebhooks {
    async fn receive(&self, headers: &HeaderMap, body: &[u8]) -> Result<(), Problem> {
        let h = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let event = verify_and_parse(
            &self.secret,
            h(TIMESTAMP_HEADER),
            h(SIGNATURE_HEADER),
            body,
            self.clock.now_ms(),
            crate::payment::webhook::DEFAULT_TOLERANCE_MS,
        )
        .map_err(|e| match e {
            WebhookError::BadBody(_) => Problem::new(StatusCode::BAD_REQUEST, ProblemKind::BadWebhook, e.to_string()),
            WebhookError::TooLarge => {
                Problem::new(StatusCode::PAYLOAD_TOO_LARGE, ProblemKind::PayloadTooLarge, e.to_string())
            }
            other => Problem::new(StatusCode::UNAUTHORIZED, ProblemKind::BadWebhookSignature, other.to_string()),
        })?;
        if self.replays.as_ref().is_some_and(|g| g.seen(&event.provider_event_id)) {
            let detail = format!("event {} was applied before: refused as a replay", event.provider_event_id);
            return Err(Problem::new(StatusCode::UNAUTHORIZED, ProblemKind::BadWebhookSignature, detail));
        }
        match self.workflow.handle_webhook(&event).await {
            Ok(outcome) => {
                self.workflow.faults().after_commit(CommitPoint::Webhook).await;
                if let Some(guard) = &self.replays {
                    guard.remember(&event.provider_event_id);
                }
                self.count(outcome);
                Ok(())
            }
            Err(WorkflowError::UnknownPayment(id)) => Err(Problem::not_found(format!("unknown payment {id}"))),
            Err(WorkflowError::MissingRefundKey) => Err(Problem::bad_request("refund webhook without refund_key")),
            // The store's own mapping: a refund key it does not know is a 404, bad ids a 400, ...
            Err(WorkflowError::Store(e)) => Err(e.into()),
        }
    }
}

impl Service {
    /// Builds a service from `parts`.
    pub fn new(parts: ServiceParts) -> Result<Self, ServiceError> {
        if parts.token_secret.len() < 16 {
            return Err(ServiceError::ShortSecret("token secret"));
        }
        if parts.webhook_secret.len() < 16 {
            return Err(ServiceError::ShortSecret("webhook secret"));
        }
        if parts.waiting_room.secret.len() < 16 {
            return Err(ServiceError::ShortSecret("admission secret"));
        }
        if !parts.waiting_room.config.valid() {
            return Err(ServiceError::WaitingRoom);
        }
        // The admission law reads the provider's health from every payment creation.
        let provider_health = Arc::new(ProviderHealth::default());
        let provider: Arc<dyn PaymentProvider> =
            Arc::new(MeasuredProvider::new(parts.provider, provider_health.clone(), parts.clock.clone()));
        let waiting_room =
            Arc::new(WaitingRoom::new(parts.waiting_room, parts.clock.clone(), provider_health, parts.faults.clone()));
        let metrics = Arc::new(Metrics::default());
        // Every write, the background workers' included, reaches the store
        // through the one place that invalidates the seat-map cache.
        let store: Arc<dyn crate::store::Store> = Arc::new(InvalidatingStore::new(parts.store, parts.cache.clone()));
        let workflow = Arc::new(
            Workflow::new(store.clone(), provider, parts.workflow)
                .map_err(ServiceError::Workflow)?
                .with_faults(parts.faults.clone()),
        );
        let webhooks = Arc::new(WorkflowWebhooks {
            workflow: workflow.clone(),
            secret: parts.webhook_secret,
            clock: parts.clock.clone(),
            metrics: metrics.clone(),
            replays: crate::planted!(parts.faults, ReplayedWebhookRefused).then(ReplayGuard::default),
        });
        let state = AppState {
            store,
            cache: parts.cache,
            auth: Authenticator::new(&parts.token_secret, parts.clock.clone()),
            rate_limit: Arc::new(RateLimiter::new(parts.config.hold_attempts_per_minute, 100_000, parts.clock.clone())),
            poll_limit: Arc::new(RateLimiter::new(parts.config.queue_polls_per_minute, 100_000, parts.clock)),
            metrics,
            config: parts.config,
            faults: parts.faults,
            webhooks,
            dispatch_wake: workflow.wake_signal(),
            waiting_room,
            db: None,
        };
        Ok(Self { state, workflow, sweeper: parts.sweeper })
    }

    /// Answers readiness from `circuit` (the store's, whose probe runs) and
    /// shows it and its pool on `/metrics`. Without one, `/readyz` asks the store each time.
    pub fn with_db_circuit(mut self, circuit: Arc<crate::store::circuit::Circuit>) -> Self {
        self.state.db = Some(circuit);
        self
    }

    /// This process's counters (what `GET /metrics` renders), shared: they
    /// count on as the service works.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.state.metrics.clone()
    }

    /// The router to serve.
    pub fn router(&self) -> Router {
        router(self.state.clone())
    }

    /// One admission pass of the waiting room, now (what [`Service::run_background`]
    /// runs every tick), for tests and tools that drive time themselves.
    pub async fn admission_tick(&self) -> Result<Vec<TickReport>, WaitingRoomError> {
        self.state.waiting_room.tick(self.state.store.as_ref()).await
    }

    /// Runs the payment workflow (dispatch, reconcile), the hold sweeper and
    /// the waiting room's admission law until `shutdown` is true, as four
    /// independent loops in one task, so a slow provider call never delays
    /// expiry or admission. Each tick's work is bounded by
    /// the configured batch sizes.
    pub async fn run_background(&self, shutdown: tokio::sync::watch::Receiver<bool>) {
        let wf = &self.workflow;
        let cfg = wf.config().clone();
        let metrics = &self.state.metrics;
        let wake = self.state.dispatch_wake.clone();
        let dispatch = every(cfg.dispatch_interval_ms, shutdown.clone(), Some(wake), || async {
            record_dispatch(metrics, wf.dispatch_once().await)
        });
        let reconcile = every(cfg.reconcile_interval_ms, shutdown.clone(), None, || async {
            record_reconcile(metrics, wf.reconcile_once().await)
        });
        let faults = &self.state.faults;
        let sweep = every(self.sweeper.interval_ms, shutdown.clone(), None, || async {
            if faults.sweeper_stalled() {
                return;
            }
            match sweeper::sweep_tick(self.state.store.as_ref(), metrics, &self.sweeper).await {
                Ok(swept) if !swept.is_empty() => faults.after_commit(CommitPoint::Sweep).await,
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "hold sweep failed; retrying next tick"),
            }
        });
        let room = &self.state.waiting_room;
        let mut until_stop = shutdown.clone();
        let admit = async {
            // No timer until this instance has seen a waiting room.
            tokio::select! {
                biased;
                _ = room.first_room() => {}
                _ = until_stop.wait_for(|stop| *stop) => return,
            }
            every(room.config().tick_ms, shutdown.clone(), None, || async {
                match room.tick(self.state.store.as_ref()).await {
                    Ok(reports) => {
                        for r in &reports {
                            metrics.admission_pass(r);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "admission pass failed; retrying next tick"),
                }
            })
            .await
        };
        // The three loops of old joined apart from the admission loop:
        // `join!` rotates which future it polls first, so adding a fourth to
        // the same join would reorder the others' work within a tick.
        tokio::join!(async { tokio::join!(dispatch, reconcile, sweep) }, admit);
    }
}

/// Runs `pass` every `interval_ms` (and whenever `wake` is notified) until
/// `shutdown` is true. A pass that overruns delays the next tick; ticks are
/// never bunched up.
async fn every<F, Fut>(
    interval_ms: u64,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    wake: Option<Arc<tokio::sync::Notify>>,
    mut pass: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(interval_ms.max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if *shutdown.borrow() {
            return;
        }
        let woken = async {
            match &wake {
                Some(w) => w.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            changed = shutdown.changed() => {
                if changed.is_err() {
                    return; // the sender is gone: nobody can ever ask us to run on
                }
                continue;
            }
            _ = tick.tick() => {}
            _ = woken => {}
        }
        pass().await;
    }
}

fn add(metrics: &Metrics, outcome: PaymentOutcome, n: u32) {
    for _ in 0..n {
        metrics.payment(outcome);
    }
}

fn record_dispatch(metrics: &Metrics, r: Result<DispatchReport, StoreError>) {
    match r {
        Ok(r) => {
            add(metrics, PaymentOutcome::Succeeded, r.confirmed);
            add(metrics, PaymentOutcome::Failed, r.declined);
            add(metrics, PaymentOutcome::Unknown, r.unknown);
            add(metrics, PaymentOutcome::LateSuccess, r.compensations_opened);
            let count = |c: &AtomicU64, n: u32| c.fetch_add(u64::from(n), Ordering::Relaxed);
            count(&metrics.refunds_succeeded, r.refunds_succeeded);
            count(&metrics.refunds_retrying, r.refunds_retrying);
            count(&metrics.refunds_failed, r.refunds_failed);
            count(&metrics.refunds_taken_over, r.refunds_taken_over);
            count(&metrics.workflow_store_errors, r.errors);
        }
        Err(e) => tracing::warn!(error = %e, "dispatch pass failed"),
    }
}

fn record_reconcile(metrics: &Metrics, r: Result<ReconcileReport, StoreError>) {
    match r {
        Ok(r) => {
            add(metrics, PaymentOutcome::Succeeded, r.succeeded);
            add(metrics, PaymentOutcome::LateSuccess, r.compensations_opened);
            add(metrics, PaymentOutcome::Failed, r.failed);
            add(metrics, PaymentOutcome::Released, r.released);
            metrics.workflow_store_errors.fetch_add(u64::from(r.errors), Ordering::Relaxed);
        }
        Err(e) => tracing::warn!(error = %e, "reconcile pass failed"),
    }
}

#[cfg(test)]
mod tests;
