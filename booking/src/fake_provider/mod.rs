//! A Stripe-like fake payment provider with fault knobs, for tests, the
//! `fake-provider` binary and the simulator. Unlike stripe-mock it keeps
//! state: idempotent payments and refunds, status reads, cancels, and
//! signed webhooks that can be delayed, duplicated and reordered.
//!
//! - [`faults`]: the knobs ([`ProviderFaults`]).
//! - [`state`]: the ledger and every decision ([`FakeProvider`]); seeded RNG.
//! - [`app()`]: the axum [`Router`](axum::Router), listener-free.
//! - [`cli`]: the `fake-provider` command line.
//! - [`webhook_sender`]: delivers webhooks over a hyper client generic over its connector.
//!
//! Wire format: [`crate::payment::wire`]. Admin: `GET/POST /admin/faults`,
//! `GET /admin/ledger`.

pub mod app;
pub mod cli;
pub mod faults;
pub mod state;
pub mod webhook_sender;

pub use app::app;
pub use faults::ProviderFaults;
pub use state::{FakeProvider, Ledger, LedgerStats};
pub use webhook_sender::{DeliveryError, HttpWebhookTransport, WebhookTransport};
