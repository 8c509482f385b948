//! A PostgreSQL server of the caller's own, which it may stop and start:
//! `initdb` into a fresh directory, served on a free loopback port with
//! trust authentication, removed on drop. For tests of what a client does
//! while its database is down and when it comes back, without touching the
//! shared server other tests use.
//!
//! Needs PostgreSQL's server binaries (Debian: `/usr/lib/postgresql/<v>/bin`,
//! or `HOLDFAST_PG_BIN`). PostgreSQL refuses to run as root: as root, the
//! server runs as the `postgres` user (`runuser`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable naming the directory of `initdb` and `pg_ctl`, when set.
pub const PG_BIN_VAR: &str = "HOLDFAST_PG_BIN";

/// How long `pg_ctl` waits for a start or a stop, s.
const PG_CTL_WAIT_S: &str = "30";

/// A server of one's own (see the module doc). Stopped and removed on drop.
#[derive(Debug)]
pub struct OwnPostgres {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    as_postgres: bool,
    kept: std::sync::atomic::AtomicBool,
}

impl OwnPostgres {
    /// Initializes a cluster in a fresh directory and starts it on a free port.
    pub fn start() -> Result<OwnPostgres, String> {
        let pg = OwnPostgres::fresh()?;
        let data = pg.data().display().to_string();
        pg.run_pg("initdb", &["-D", &data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"])?;
        pg.resume()?;
        Ok(pg)
    }

    /// A standby of `primary`: a base backup of it (`pg_basebackup -R`,
    /// streaming), started on a free port. `synchronous`: `primary` then
    /// waits for it at every commit (`synchronous_standby_names = '*'`), so a
    /// commit acknowledged to a client is on both servers; otherwise it may
    /// fall behind.
    pub fn standby_of(primary: &OwnPostgres, synchronous: bool) -> Result<OwnPostgres, String> {
        let pg = OwnPostgres::fresh()?;
        let (data, port) = (pg.data().display().to_string(), primary.port.to_string());
        let args = ["-D", &data, "-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-R", "-X", "stream", "--no-sync"];
        pg.run_pg("pg_basebackup", &args)?;
        pg.resume()?;
        if synchronous {
            primary.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")?;
            primary.sql("SELECT pg_reload_conf()")?;
        }
        Ok(pg)
    }

    /// Promotes a standby to a primary (`pg_ctl promote`), waiting until it accepts writes.
    pub fn promote(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        self.run_pg("pg_ctl", &["-D", &data, "-w", "-t", PG_CTL_WAIT_S, "promote"])
    }

    /// Runs one SQL command on the maintenance database (`psql`).
    pub fn sql(&self, command: &str) -> Result<(), String> {
        let port = self.port.to_string();
        self.run_pg(
            "psql",
            &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", command],
        )
    }

    /// The maintenance database's URL.
    pub fn admin_url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The port it serves on (the same across stops and starts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops it at once (`pg_ctl stop -m immediate`): connections are cut,
    /// nothing is flushed gracefully, as in a crash.
    pub fn stop_immediate(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        self.run_pg("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "-t", PG_CTL_WAIT_S, "stop"])
    }

    /// Starts it again (after a stop), waiting until it accepts connections.
    pub fn resume(&self) -> Result<(), String> {
        let data = self.data().display().to_string();
        let opts = format!(
            // fsync off: a stopped server's writes are in the kernel's pages, which
            // survive it (not a machine crash). synchronous_commit stays on: an
            // acknowledged commit is in the WAL before the answer, so `stop -m
            // immediate` may lose nothing a client was told.
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.run_pg("pg_ctl", &["-D", &data, "-o", &opts, "-l", &log, "-w", "-t", PG_CTL_WAIT_S, "start"])
    }

    /// A fresh directory (owned by the server's user) and a free port; no cluster yet.
    fn fresh() -> Result<OwnPostgres, String> {
        let bin = pg_bin()?;
        let as_postgres = running_as_root();
        let dir = std::env::temp_dir().join(format!("holdfast-pg-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let pg = OwnPostgres { bin, dir, port, as_postgres, kept: Default::default() };
        if as_postgres {
            pg.run("chown", &["-R", "postgres:postgres", &pg.dir.display().to_string()], false)?;
        }
        Ok(pg)
    }

    /// Leaves it running and its directory in place when dropped (a run's
    /// records want its tables); the command that stops it.
    pub fn keep(&self) -> String {
        self.kept.store(true, std::sync::atomic::Ordering::Relaxed);
        let user = if self.as_postgres { "runuser -u postgres -- " } else { "" };
        format!("{user}{} -D {} stop", self.bin.join("pg_ctl").display(), self.data().display())
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn run_pg(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let exe = self.bin.join(tool).display().to_string();
        self.run(&exe, args, self.as_postgres)
    }

    fn run(&self, exe: &str, args: &[&str], as_postgres: bool) -> Result<(), String> {
        let mut cmd = if as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--", exe]);
            c
        } else {
            Command::new(exe)
        };
        let out = cmd.args(args).current_dir(&self.dir).output().map_err(|e| format!("{exe}: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!("{exe} {args:?}: {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        if self.kept.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let _ = self.stop_immediate();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The directory of `initdb` and `pg_ctl`: `HOLDFAST_PG_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin` that has them.
fn pg_bin() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os(PG_BIN_VAR) {
        return Ok(PathBuf::from(dir));
    }
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map_err(|e| format!("{}: {e} (set {PG_BIN_VAR})", root.display()))?
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin)| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| format!("no initdb under {} (set {PG_BIN_VAR})", root.display()))
}

fn running_as_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A number no other server of this process has used.
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
