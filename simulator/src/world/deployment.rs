//! The simulated deployment's ports and shared secrets.

/// The service port on every service host.
pub const SERVICE_PORT: u16 = 8080;
/// Shared secrets of the simulated deployment.
pub const TOKEN_SECRET: &[u8] = b"holdfast-simulation-token-secret";
/// Admission-token secret of the simulated services.
pub const ADMISSION_SECRET: &[u8] = b"holdfast-simulation-admission-secret";
/// Webhook secret shared by the services and the provider.
pub const WEBHOOK_SECRET: &[u8] = b"holdfast-simulation-webhook-secret";
