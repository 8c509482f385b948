//! A chaos run's own Redis: a `redis-server` process on a free loopback
//! port that the run's faults stop (`SIGKILL`), start again on the same
//! port, empty or (with persistence: an append-only file fsynced at every
//! write, in a directory of the run's) with what it had, and stall (`DEBUG
//! SLEEP`: the server answers nobody for a while). Waiting-room and
//! cache-fault runs use it so that stopping Redis touches nothing but the run.

use std::path::PathBuf;
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
    /// Where its append-only file lives; `None`: no persistence.
    data_dir: Option<PathBuf>,
}

impl PrivateRedis {
    /// Starts `redis-server` on a free port, persisting into `data_dir`
    /// (created, emptied) when given. Precondition: `redis-server` is on `PATH`.
    pub async fn start(data_dir: Option<PathBuf>) -> Result<PrivateRedis, String> {
        let port = super::stack::free_port()?;
        let mut redis = PrivateRedis { port, child: None, data_dir };
        redis.restart_empty().await?;
        Ok(redis)
    }

    /// Whether a restart can keep its data.
    pub fn persists(&self) -> bool {
        self.data_dir.is_some()
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

    /// Starts it again on the same port, empty, once it accepts connections.
    pub async fn restart_empty(&mut self) -> Result<(), String> {
        self.stop().await;
        if let Some(dir) = &self.data_dir {
            let _ = std::fs::remove_dir_all(dir);
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        self.spawn().await
    }

    /// Starts it again on the same port with every write it acknowledged
    /// before it stopped. Precondition: it [persists](Self::persists).
    pub async fn restart_keeping_data(&mut self) -> Result<(), String> {
        assert!(self.persists(), "only a persistent Redis keeps its data");
        self.stop().await;
        self.spawn().await
    }

    /// Spawns the server and waits until it accepts connections.
    async fn spawn(&mut self) -> Result<(), String> {
        let persistence: Vec<String> = match &self.data_dir {
            Some(dir) => ["--appendonly", "yes", "--appendfsync", "always", "--dir"]
                .iter()
                .map(|s| s.to_string())
                .chain([dir.display().to_string()])
                .collect(),
            None => ["--appendonly", "no"].iter().map(|s| s.to_string()).collect(),
        };
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(&persistence)
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
