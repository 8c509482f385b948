//! [`Workflow`]: drives every payment operation to a booking, a release, or a
//! tracked compensation.
//!
//! - [`dispatch`]: claims outbox rows and calls the provider outside any transaction.
//! - [`reconcile`]: asks the provider about unknown payments, on a per-payment backoff
//!   claimed from the store (shared by every replica); releases at the deadline.
//! - [`webhooks`]: applies provider webhooks; duplicates and reordering change nothing.
//! - [`config`], the limits.
//!
//! What operators must resolve (charged without a ticket, unknown, released
//! while possibly charged, compensations not yet succeeded) is the store's
//! [`Store::needs_resolution`]; the workflow keeps no list of its own.
//!
//! The store's clock decides every deadline; `tokio::time` only paces the
//! loop, so the workflow runs unchanged inside turmoil.

pub mod config;
pub mod dispatch;
pub mod reconcile;
pub mod said;
pub mod webhooks;

pub use config::{InvalidConfig, WorkflowConfig};
pub use dispatch::DispatchReport;
pub use reconcile::ReconcileReport;
pub use webhooks::WebhookOutcome;

use super::provider::PaymentProvider;
use crate::fault::FaultSeam;
use crate::store::{Store, StoreError};
use std::sync::Arc;
use tokio::sync::Notify;

/// Why a workflow step did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A webhook names a payment this store never created.
    #[error("webhook for unknown payment {0}")]
    UnknownPayment(crate::model::PaymentOpId),
    /// A refund webhook without a refund key.
    #[error("refund webhook without refund_key")]
    MissingRefundKey,
}

/// The payment workflow. Cheap to share (`Arc`); every method may run
/// concurrently on several hosts: the store's conditional writes and the
/// provider's idempotency keys make repeats harmless.
pub struct Workflow {
    store: Arc<dyn Store>,
    provider: Arc<dyn PaymentProvider>,
    config: WorkflowConfig,
    /// The one signal that makes the service's dispatch loop run now.
    wake: Arc<Notify>,
    faults: FaultSeam,
}

impl std::fmt::Debug for Workflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workflow").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Workflow {
    /// A workflow over `store` and `provider`. Errors when `config` is invalid.
    pub fn new(
        store: Arc<dyn Store>,
        provider: Arc<dyn PaymentProvider>,
        config: WorkflowConfig,
    ) -> Result<Self, InvalidConfig> {
        config.validate()?;
        Ok(Self { store, provider, config, wake: Arc::new(Notify::new()), faults: FaultSeam::none() })
    }

    /// Uses `faults` as the fault seam (crashes after the workflow's commits, planted bugs).
    pub fn with_faults(mut self, faults: FaultSeam) -> Self {
        self.faults = faults;
        self
    }

    /// The fault seam.
    pub fn faults(&self) -> &FaultSeam {
        &self.faults
    }

    /// The configuration.
    pub fn config(&self) -> &WorkflowConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Asks the dispatch loop (`Service::run_background`) to dispatch now
    /// (e.g. right after a webhook opened a compensation) instead of at its
    /// next tick. Never blocks.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The wake signal itself: the service's dispatch loop waits on it, and
    /// the checkout handler notifies it after writing a charge row.
    pub fn wake_signal(&self) -> Arc<Notify> {
        self.wake.clone()
    }
}
