//! Test support: child processes (`bookingd`, `fake-provider`,
//! `redis-server`) killed on drop, their output kept for failure messages,
//! and the addresses they listen on.

#![allow(dead_code)] // each test binary uses part of this module

use std::net::SocketAddr;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// Bound on a process starting to listen, and on one exiting.
pub const PROCESS_WAIT: Duration = Duration::from_secs(20);
/// Output kept per process, for failure messages.
const MAX_LOG_BYTES: usize = 64 * 1024;

/// A port that was free a moment ago (callers retry when it is taken meanwhile).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The URL of database `name` on the test server.
pub fn db_url(name: &str) -> String {
    let admin = test_services::postgres_url();
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b.to_string(), format!("?{q}")),
        None => (admin.clone(), String::new()),
    };
    format!("{}/{name}{query}", base.rsplit_once('/').expect("url has a database").0)
}

fn append(log: &Mutex<String>, line: &str) {
    let mut l = log.lock().unwrap();
    if l.len() < MAX_LOG_BYTES {
        l.push_str(line);
        l.push('\n');
    }
}

/// Forwards a child's output into `log`; the first `... listening on ADDR`
/// line's address goes to `addr` (if given).
fn drain(
    out: impl AsyncRead + Unpin + Send + 'static,
    log: Arc<Mutex<String>>,
    mut addr: Option<tokio::sync::oneshot::Sender<String>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(out).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(a) = line.split("listening on ").nth(1)
                && let Some(tx) = addr.take()
            {
                let _ = tx.send(a.trim().trim_start_matches("http://").to_string());
            }
            append(&log, &line);
        }
    })
}

/// A child process, killed on drop, whose output is kept for failure messages.
pub struct Proc {
    /// What failure messages call it.
    pub name: String,
    /// The process.
    pub child: Child,
    log: Arc<Mutex<String>>,
    drains: Vec<tokio::task::JoinHandle<()>>,
}

impl Proc {
    /// Spawns `cmd` with its output kept; `listening` receives the address of
    /// its first `listening on ADDR` line.
    fn spawn_with(
        name: &str,
        mut cmd: Command,
        listening: Option<tokio::sync::oneshot::Sender<String>>,
    ) -> Result<Proc, String> {
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| format!("{name}: spawn: {e}"))?;
        let log = Arc::new(Mutex::new(String::new()));
        let drains = vec![
            drain(child.stdout.take().unwrap(), log.clone(), listening),
            drain(child.stderr.take().unwrap(), log.clone(), None),
        ];
        Ok(Proc { name: name.to_string(), child, log, drains })
    }

    /// Spawns `cmd` with its output kept, without waiting for anything.
    pub fn spawn(name: &str, cmd: Command) -> Result<Proc, String> {
        Self::spawn_with(name, cmd, None)
    }

    /// Spawns `cmd` and waits (bounded by [`PROCESS_WAIT`]) for its
    /// `listening on ADDR` line. `Err` carries the output when it exits or
    /// stays silent.
    pub async fn start(name: &str, cmd: Command) -> Result<(Proc, SocketAddr), String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut proc = Self::spawn_with(name, cmd, Some(tx))?;
        match tokio::time::timeout(PROCESS_WAIT, rx).await {
            Ok(Ok(addr)) => {
                let addr = addr.parse().map_err(|e| format!("{name}: bad address {addr:?}: {e}"))?;
                Ok((proc, addr))
            }
            Ok(Err(_)) => {
                let status = proc.wait_exit().await;
                Err(format!("{name} exited ({status}) before listening:\n{}", proc.output()))
            }
            Err(_) => Err(format!("{name} did not listen within {PROCESS_WAIT:?}:\n{}", proc.output())),
        }
    }

    /// Its output so far.
    pub fn output(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits (bounded) for the process to exit, and for its output to be read.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let status = tokio::time::timeout(PROCESS_WAIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("{} did not exit within {PROCESS_WAIT:?}:\n{}", self.name, self.output()))
            .unwrap();
        for d in self.drains.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(2), d).await;
        }
        status
    }

    /// Asks the process to stop (SIGTERM), as an orchestrator would.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("process still running");
        let ok = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success();
        assert!(ok, "kill -TERM {pid}");
    }

    /// Panics with its output if it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited ({status}):\n{}", self.name, self.output());
        }
    }
}

/// Bound on a `redis-server` answering after it starts.
pub const REDIS_WAIT: Duration = Duration::from_secs(20);

/// A `redis-server` on `port`, persisting to an append-only file under
/// `aof_dir` when given (fsynced at every write), otherwise keeping nothing;
/// returned once it answers `PING` (bounded by [`REDIS_WAIT`]). `Err` when it
/// exits first (the port was taken, say) or stays silent.
pub async fn redis_server(port: u16, aof_dir: Option<&std::path::Path>) -> Result<Proc, String> {
    let mut cmd = Command::new("redis-server");
    cmd.args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""]);
    match aof_dir {
        Some(d) => cmd.args(["--appendonly", "yes", "--appendfsync", "always", "--dir", &d.to_string_lossy()]),
        None => cmd.args(["--appendonly", "no"]),
    };
    let mut proc = Proc::spawn("redis-server", cmd).map_err(|e| format!("{e} (redis-server on PATH?)"))?;
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).map_err(|e| e.to_string())?;
    let deadline = tokio::time::Instant::now() + REDIS_WAIT;
    while tokio::time::Instant::now() < deadline {
        if let Ok(Some(status)) = proc.child.try_wait() {
            return Err(format!("redis-server exited ({status}):\n{}", proc.output()));
        }
        let connected = tokio::time::timeout(Duration::from_secs(2), client.get_multiplexed_async_connection()).await;
        if let Ok(Ok(mut c)) = connected
            && redis::cmd("PING").query_async::<String>(&mut c).await.is_ok()
        {
            return Ok(proc);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Err(format!("redis-server on {port} did not answer within {REDIS_WAIT:?}"))
}
