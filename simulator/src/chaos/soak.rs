//! `chaos --time-budget`: the soak. Runs take turns over the scenarios on
//! fresh seeds until the budget is spent; after each run (its processes and
//! its database gone) the shared resources are sampled, and growth across
//! the soak fails it: client connections left on the PostgreSQL server, the
//! harness's own memory and open files, Redis's memory. Each run's
//! processes are new, so a leak in them shows as what they leave behind on
//! the servers; a leak within one process's life needs a long run
//! (`--duration-ms`).

use super::ChaosOptions;

/// Client connections the server may hold after a run beyond the first
/// sample's (the harness's own, a backend still closing).
pub const PG_CONNECTIONS_SLACK: i64 = 4;
/// Open files the harness may gain over the soak.
pub const OPEN_FILES_SLACK: u64 = 64;
/// Memory the harness may gain over the soak beyond doubling, KiB.
pub const RSS_SLACK_KIB: u64 = 64 * 1024;
/// Memory Redis may gain over the soak, bytes.
pub const REDIS_SLACK_BYTES: u64 = 64 * 1024 * 1024;

/// The shared resources after one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Client connections the PostgreSQL server holds (this sample's own excluded).
    pub pg_connections: i64,
    /// The harness's resident memory, KiB.
    pub rss_kib: u64,
    /// The harness's open files.
    pub open_files: u64,
    /// Redis's `used_memory`, bytes (`None` without Redis).
    pub redis_bytes: Option<u64>,
}

impl std::fmt::Display for Sample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PostgreSQL client connections {}, harness RSS {} MiB and {} open files",
            self.pg_connections,
            self.rss_kib / 1024,
            self.open_files
        )?;
        match self.redis_bytes {
            Some(b) => write!(f, ", Redis {} MiB", b / (1024 * 1024)),
            None => Ok(()),
        }
    }
}

/// Samples the resources `opts` names (see [`Sample`]).
pub async fn sample(opts: &ChaosOptions) -> Result<Sample, String> {
    use sqlx::Connection;
    let mut c = sqlx::PgConnection::connect(&opts.admin_url).await.map_err(|e| format!("sample PostgreSQL: {e}"))?;
    let pg_connections: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
    )
    .fetch_one(&mut c)
    .await
    .map_err(|e| format!("sample PostgreSQL: {e}"))?;
    let _ = c.close().await;
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| format!("/proc/self/status: {e}"))?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let open_files = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as u64).unwrap_or(0);
    let redis_bytes = match &opts.redis_url {
        Some(url) => Some(redis_used_memory(url).await?),
        None => None,
    };
    Ok(Sample { pg_connections, rss_kib, open_files, redis_bytes })
}

async fn redis_used_memory(url: &str) -> Result<u64, String> {
    let client = redis::Client::open(url).map_err(|e| format!("sample Redis: {e}"))?;
    let mut c = client.get_multiplexed_async_connection().await.map_err(|e| format!("sample Redis: {e}"))?;
    let info: String =
        redis::cmd("INFO").arg("memory").query_async(&mut c).await.map_err(|e| format!("sample Redis: {e}"))?;
    let used = info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok());
    used.ok_or_else(|| "sample Redis: INFO memory has no used_memory".to_string())
}

/// What grew over `samples` (one per run, in order) past its slack, one line each.
pub fn growth(samples: &[Sample]) -> Vec<String> {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else { return Vec::new() };
    let mut found = Vec::new();
    for (run, s) in samples.iter().enumerate() {
        if s.pg_connections > first.pg_connections + PG_CONNECTIONS_SLACK {
            found.push(format!(
                "after run {}: PostgreSQL holds {} client connections (after the first: {}): runs leave connections behind",
                run + 1,
                s.pg_connections,
                first.pg_connections
            ));
            break;
        }
    }
    if last.open_files > first.open_files + OPEN_FILES_SLACK {
        found.push(format!("the harness's open files grew from {} to {}", first.open_files, last.open_files));
    }
    if last.rss_kib > 2 * first.rss_kib + RSS_SLACK_KIB {
        found.push(format!("the harness's memory grew from {} to {} MiB", first.rss_kib / 1024, last.rss_kib / 1024));
    }
    if let (Some(a), Some(b)) = (first.redis_bytes, last.redis_bytes)
        && b > a + REDIS_SLACK_BYTES
    {
        found.push(format!("Redis's memory grew from {} to {} MiB", a / (1024 * 1024), b / (1024 * 1024)));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: Sample = Sample { pg_connections: 2, rss_kib: 100_000, open_files: 40, redis_bytes: Some(1 << 20) };

    #[test]
    fn steady_resources_pass_and_each_kind_of_growth_is_found() {
        let noisy = Sample { pg_connections: 5, rss_kib: 150_000, open_files: 90, ..BASE };
        assert!(growth(&[BASE, noisy, BASE]).is_empty());
        let leaked = Sample { pg_connections: 9, ..BASE };
        assert!(growth(&[BASE, leaked])[0].contains("after run 2: PostgreSQL holds 9"));
        let files = Sample { open_files: 200, ..BASE };
        assert!(growth(&[BASE, files])[0].contains("open files grew from 40 to 200"));
        let memory = Sample { rss_kib: 300_000, ..BASE };
        assert!(growth(&[BASE, memory])[0].contains("memory grew"));
        let redis = Sample { redis_bytes: Some(100 << 20), ..BASE };
        assert!(growth(&[BASE, redis])[0].contains("Redis's memory grew from 1 to 100 MiB"));
        assert!(growth(&[]).is_empty());
    }
}
