//! A chaos run's own Redis: a `redis-server` process on a free loopback
//! port, without persistence, that the run's faults stop (`SIGKILL`),
//! start again empty on the same port, and stall (`DEBUG SLEEP`: the server
//! answers nobody for a while). Waiting-room runs use it so that stopping
//! Redis touches nothing but the run.

use std::process::Stdio;
use std::time::Duration;
use tokio::process::{Child, Command};

/// How long Redis may take to accept connections after a start.
const START_WAIT: Duration = Duration::from_secs(10);
/// How often a start is checked.
const START_POLL: Duration = Duration::from_millis(20);
/// Longest stall a fault may ask for (well under a request's bound).
pub const MAX_STALL_MS: u64 = 4_000;

/// The run's Redis.
pub struct PrivateRedis {
    port: u16,
    child: Option<Child>,
}

impl PrivateRedis {
    /// Starts `redis-server` on a free port. Precondition: `redis-server` is on `PATH`.
    pub async fn start() -> Result<PrivateRedis, String> {
        let port = super::stack::free_port()?;
        let mut redis = PrivateRedis { port, child: None };
        redis.restart_empty().await?;
        Ok(redis)
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Whether it is up (started and not stopped).
    pub fn is_up(&self) -> bool {
        self.child.is_some()
    }

    /// `kill -9`: every connection breaks, nothing is saved.
    pub async fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.start_kill();
            let _ = tokio::time::timeout(START_WAIT, c.wait()).await;
        }
    }

    /// Starts it again on the same port, empty (no persistence), once it accepts connections.
    pub async fn restart_empty(&mut self) -> Result<(), String> {
        self.stop().await;
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--enable-debug-command", "local"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("spawn redis-server: {e}"))?;
        self.child = Some(child);
        let deadline = tokio::time::Instant::now() + START_WAIT;
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port)).await.is_err() {
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("redis-server on port {} did not start within {START_WAIT:?}", self.port));
            }
            tokio::time::sleep(START_POLL).await;
        }
        Ok(())
    }

    /// Stalls the server for `ms` (at most [`MAX_STALL_MS`]): it answers
    /// nobody meanwhile. Returns once the stall has begun.
    pub async fn stall(&self, ms: u64) -> Result<(), String> {
        let secs = format!("{:.3}", ms.min(MAX_STALL_MS) as f64 / 1000.0);
        let client = redis::Client::open(self.url()).map_err(|e| e.to_string())?;
        let mut c = client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())?;
        // DEBUG SLEEP answers only when the stall ends: send it and go on.
        tokio::spawn(async move {
            let _: Result<(), _> = redis::cmd("DEBUG").arg("SLEEP").arg(secs).query_async(&mut c).await;
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        Ok(())
    }
}
