//! The `fake-provider` command line: the Stripe-like fake payment provider as
//! a process (`fake-provider`, and `simulator fake-provider` for chaos mode).
//!
//! `cargo run -p booking --bin fake-provider -- --listen 127.0.0.1:PORT [--webhook-url URL]`

use crate::clock::SystemClock;
use crate::fake_provider::{FakeProvider, Faults, HttpWebhookTransport, WebhookTransport, app};
use clap::Parser;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// A stateful, Stripe-like fake payment provider with fault knobs.
#[derive(Debug, Parser)]
#[command(name = "fake-provider", version, about)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:7070 (port 0 picks a free port; the bound address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// Where to POST signed webhooks (bookingd: http://127.0.0.1:8080/v1/webhooks/provider); none: no webhooks.
    #[arg(long)]
    webhook_url: Option<String>,
    /// Secret used to sign webhooks (HMAC-SHA256).
    #[arg(long, env = "FAKE_PROVIDER_WEBHOOK_SECRET", default_value = "dev-webhook-secret", hide_env_values = true)]
    webhook_secret: String,
    /// Seed of the fault RNG: the same seed and request order give the same faults.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Initial fault knobs as JSON (see `Faults`; e.g. '{"decline_rate":0.1}' or
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

async fn serve(args: Args) -> Result<(), String> {
    let faults: Faults = match &args.faults {
        Some(json) => serde_json::from_str(json).map_err(|e| format!("--faults: {e}"))?,
        None => Faults::default(),
    };
    let webhooks: Option<Arc<dyn WebhookTransport>> = match &args.webhook_url {
        Some(url) => Some(Arc::new(
            HttpWebhookTransport::with_http(url, Duration::from_millis(args.webhook_timeout_ms.max(1)))
                .map_err(|e| format!("--webhook-url: {e}"))?,
        )),
        None => None,
    };
    let state = FakeProvider::new(args.seed, faults, Arc::new(SystemClock), webhooks, args.webhook_secret.as_bytes())
        .map_err(|e| format!("--faults: {e}"))?;
    let listener = tokio::net::TcpListener::bind(args.listen).await.map_err(|e| format!("cannot listen: {e}"))?;
    println!("fake-provider listening on http://{}", listener.local_addr().map_err(|e| e.to_string())?);
    axum::serve(listener, app(state))
        .with_graceful_shutdown(crate::daemon::shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}
