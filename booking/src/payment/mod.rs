//! Payments: the provider seam and the workflow that turns every charge into
//! a booking or a tracked compensation.
//!
//! - [`provider`]: the [`PaymentProvider`] trait and its error type (unknown vs refused).
//! - [`wire`]: the provider's HTTP wire format (shared with the fake provider).
//! - [`http_provider`]: [`HttpProvider`], the trait over hyper, generic over the connector.
//! - [`replay_guard`]: a planted bug's webhook replay guard.
//! - [`webhook`]: webhook payloads and their HMAC-SHA256 signatures.
//! - [`workflow`]: [`Workflow`]: outbox dispatch, reconciliation, webhooks, compensation.

pub mod http_provider;
pub mod provider;
pub mod replay_guard;
pub mod webhook;
pub mod wire;
pub mod workflow;

pub use http_provider::{HttpProvider, HttpProviderConfigError};
pub use provider::{CreatePayment, PaymentProvider, ProviderError, ProviderPayment, ProviderStatus, RefundStatus};
pub use workflow::{Workflow, WorkflowConfig, WorkflowError};
