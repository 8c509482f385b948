//! What the model must know of the deployment it judges: the service's
//! settings, its hosts' clocks and the secrets it signs with.

use serde::{Deserialize, Serialize};

/// The deployment the model judges. Built by the simulator from the
/// scenario; all times in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// Simulated time 0 on the store's clock (the trace's `at_ms` is
    /// simulated time; the store's clock is `epoch_ms + at_ms`).
    pub epoch_ms: i64,
    /// A hold's lifetime (bookingd's `--hold-ttl-ms`).
    pub hold_ttl_ms: i64,
    /// A payment's deadline after checkout (`--payment-ttl-ms`).
    pub payment_ttl_ms: i64,
    /// Seats of one event one user may have at once (`None`: no cap).
    pub max_held_seats_per_user: Option<u32>,
    /// Hold attempts one user may make per minute at one service host.
    pub hold_attempts_per_minute: u32,
    /// Each service host's clock skew against the store's, by host index (`svc<i>`).
    pub host_skew_ms: Vec<i64>,
    /// The least latency of a message between two hosts.
    pub min_latency_ms: i64,
    /// The admission tokens' secret (waiting-room worlds).
    pub admission_secret: Vec<u8>,
    /// The provider's webhook signing secret.
    pub webhook_secret: Vec<u8>,
    /// Largest request body the service reads.
    pub max_body_bytes: usize,
    /// Attempts a refund gets before it gives up (definite failures).
    pub max_compensation_attempts: i32,
    /// Attempts a refund gets when its last outcome was unknown.
    pub max_compensation_unknown_attempts: i32,
    /// Least and most seconds a waiting client is told to wait before asking
    /// again (the rooms' `poll_min_s`; bookingd's `--admission-poll-max-s`).
    #[serde(default = "default_queue_poll_s")]
    pub queue_poll_s: (u64, u64),
    /// The waiting rooms' admission law's settings.
    #[serde(default)]
    pub admission_law: super::law::LawSettings,
}

fn default_queue_poll_s() -> (u64, u64) {
    (2, 60)
}

impl ModelConfig {
    /// Host `host`'s clock at store time `store_ms`.
    ///
    /// Precondition: `host` is one of [`ModelConfig::host_skew_ms`]'s (asserted).
    pub fn host_clock_ms(&self, host: u32, store_ms: i64) -> i64 {
        let skew = self.host_skew_ms.get(host as usize).copied();
        store_ms + skew.unwrap_or_else(|| panic!("host {host} is not one of {} hosts", self.host_skew_ms.len()))
    }
}
