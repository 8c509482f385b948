//! The `fake-provider` command line: the Stripe-like fake payment provider as
//! a process (`fake-provider`, and `simulator fake-provider` for chaos mode).
//!
//! `cargo run -p booking --bin fake-provider -- --listen 127.0.0.1:PORT [--webhook-url URL]`

use crate::clock::SystemClock;
use crate::fake_provider::{FakeProvider, HttpWebhookTransport, ProviderFaults, WebhookTransport, app};
use clap::Parser;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// The fault knobs, shown at the end of `fake-provider --help` (a test keeps
/// this list, `ProviderFaults` and docs/RUNNING_BOOKINGD.md in step).
pub const FAULT_KNOBS_HELP: &str = "\
Fault knobs (JSON object for --faults or POST /admin/faults; omitted knobs are 0/false):
  latency_ms              added to every /v1 request, ms (the least, with latency_max_ms)
  latency_max_ms          when above latency_ms, each /v1 request waits a uniform draw in latency_ms..=latency_max_ms
  error_rate              probability a /v1 request fails 503 before it is processed
  lost_response_rate      probability a create or refund is processed but its answer is lost (500): an unknown outcome
  decline_rate            probability a new payment is declined (card_declined)
  late_success_rate       probability a new payment answers `processing` and succeeds after late_success_delay_ms
  late_success_delay_ms   delay of a late success, ms
  webhook_delay_ms        each webhook is delivered after a uniform delay in 0..=webhook_delay_ms
  webhook_duplicate_rate  probability a webhook is delivered twice
  webhook_reorder_rate    probability a webhook is held back 2*webhook_delay_ms+1 ms, so later ones overtake it
  webhook_drop_rate       probability a webhook is never delivered
  webhook_hold_rate       probability a webhook copy is held back an extra webhook_hold_ms (a delayed callback)
  webhook_hold_ms         how long a held-back webhook copy waits beyond its delay, ms
  refund_failure_rate     probability a refund attempt fails (402), retryable
  refund_fail_first_n     every refund key fails its first N attempts (402)
  lenient_refunds         each new refund key is a separate refund, even past the charged amount
Rates are 0..=1; delays at most 3600000 ms. GET /admin/faults shows the current knobs;
GET /admin/ledger lists every charge and refund made.";

/// A stateful, Stripe-like fake payment provider with fault knobs, for
/// testing bookingd: payments, refunds and signed webhooks, with seeded
/// declines, lost answers, late successes, webhook delays, duplicates and
/// drops, and refund failures.
#[derive(Debug, Parser)]
#[command(name = "fake-provider", version, about, long_about, after_long_help = FAULT_KNOBS_HELP)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:7070 (port 0 picks a free port; the bound address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// Where to POST signed webhooks (bookingd: http://127.0.0.1:8080/v1/webhooks/provider); none: no webhooks.
    #[arg(long)]
    webhook_url: Option<String>,
    /// Secret that signs webhooks (HMAC-SHA256): bookingd's HOLDFAST_WEBHOOK_SECRET,
    /// at least 16 bytes. Required with --webhook-url; there is no default.
    #[arg(long, env = "HOLDFAST_WEBHOOK_SECRET", hide_env_values = true)]
    webhook_secret: Option<String>,
    /// Seed of the fault RNG: the same seed and request order give the same faults.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Initial fault knobs as JSON (see `ProviderFaults`; e.g. '{"decline_rate":0.1}' or
    /// '{"lenient_refunds":true}'); change later with POST /admin/faults.
    #[arg(long)]
    faults: Option<String>,
    /// Timeout of one webhook delivery attempt, in ms.
    #[arg(long, default_value_t = 5_000)]
    webhook_timeout_ms: u64,
}

/// Runs the `fake-provider` command line `args` (the first is the program
/// name) until SIGINT/SIGTERM; returns the process exit code.
pub fn main_from<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = Args::parse_from(args);
    crate::daemon::run_to_exit_code("fake-provider", "warn", serve(args))
}

/// Shortest webhook secret accepted (bookingd's rule too).
const MIN_WEBHOOK_SECRET_BYTES: usize = 16;

async fn serve(args: Args) -> Result<(), String> {
    let secret = match (&args.webhook_url, &args.webhook_secret) {
        (Some(_), None) => {
            return Err(
                "--webhook-url needs --webhook-secret (or HOLDFAST_WEBHOOK_SECRET): bookingd's webhook secret".into()
            );
        }
        (_, Some(s)) if s.len() < MIN_WEBHOOK_SECRET_BYTES => {
            return Err(format!("--webhook-secret must be at least {MIN_WEBHOOK_SECRET_BYTES} bytes"));
        }
        (_, s) => s.clone().unwrap_or_default(),
    };
    let faults: ProviderFaults = match &args.faults {
        Some(json) => serde_json::from_str(json).map_err(|e| format!("--faults: {e}"))?,
        None => ProviderFaults::default(),
    };
    let webhooks: Option<Arc<dyn WebhookTransport>> = match &args.webhook_url {
        Some(url) => Some(Arc::new(
            HttpWebhookTransport::with_http(url, Duration::from_millis(args.webhook_timeout_ms.max(1)))
                .map_err(|e| format!("--webhook-url: {e}"))?,
        )),
        None => None,
    };
    let state = FakeProvider::new(args.seed, faults, Arc::new(SystemClock), webhooks, secret.as_bytes())
        .map_err(|e| format!("--faults: {e}"))?;
    let listener = tokio::net::TcpListener::bind(args.listen).await.map_err(|e| format!("cannot listen: {e}"))?;
    println!("fake-provider listening on http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    axum::serve(listener, app(state))
        .with_graceful_shutdown(crate::daemon::shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}
