//! The seat-map cache. Reads may be served from it; writes never consult it:
//! a hold always goes to the store, so a stale or poisoned cache cannot sell a
//! seat twice. A cache that fails is a miss, never an error.

use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

/// A cache of serialized seat maps, keyed by event.
#[async_trait]
pub trait SeatMapCache: Send + Sync + 'static {
    /// The cached seat map of `event_id`, or `None` (miss or cache failure).
    async fn get(&self, event_id: &str) -> Option<Vec<u8>>;
    /// Caches `body` for `event_id` for the cache's TTL. Failures are ignored.
    async fn put(&self, event_id: &str, body: &[u8]);
    /// Drops `event_id`'s entry. Failures are ignored (the TTL bounds staleness).
    async fn invalidate(&self, event_id: &str);
}

/// No cache: every read goes to the store.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

#[async_trait]
impl SeatMapCache for NoCache {
    async fn get(&self, _: &str) -> Option<Vec<u8>> {
        None
    }
    async fn put(&self, _: &str, _: &[u8]) {}
    async fn invalidate(&self, _: &str) {}
}

/// An in-process cache without expiry (entries live until invalidated); bounded
/// to `max_entries`. For the simulator and tests.
#[derive(Debug)]
pub struct MemCache {
    max_entries: usize,
    entries: Mutex<BTreeMap<String, Vec<u8>>>,
}

impl MemCache {
    /// A cache holding at most `max_entries` events.
    pub fn new(max_entries: usize) -> Self {
        Self { max_entries, entries: Mutex::new(BTreeMap::new()) }
    }
}

#[async_trait]
impl SeatMapCache for MemCache {
    async fn get(&self, event_id: &str) -> Option<Vec<u8>> {
        self.entries.lock().expect("cache poisoned").get(event_id).cloned()
    }
    async fn put(&self, event_id: &str, body: &[u8]) {
        let mut e = self.entries.lock().expect("cache poisoned");
        if e.len() >= self.max_entries && !e.contains_key(event_id) {
            return;
        }
        e.insert(event_id.to_string(), body.to_vec());
    }
    async fn invalidate(&self, event_id: &str) {
        self.entries.lock().expect("cache poisoned").remove(event_id);
    }
}

/// Redis-backed cache. Every call is bounded by `op_timeout`; any error or
/// timeout is a miss, so Redis down means slower reads, not errors.
#[derive(Clone)]
pub struct RedisCache {
    conn: redis::aio::ConnectionManager,
    ttl_ms: u64,
    op_timeout: Duration,
    prefix: String,
}

impl std::fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCache").field("ttl_ms", &self.ttl_ms).finish_non_exhaustive()
    }
}

impl RedisCache {
    /// Connects to `url`; entries live `ttl_ms` (>= 1) under keys `prefix:seatmap:<event>`.
    pub async fn connect(url: &str, ttl_ms: u64, prefix: &str) -> Result<Self, redis::RedisError> {
        assert!(ttl_ms >= 1);
        let client = redis::Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_millis(500))
            .set_response_timeout(Duration::from_millis(500))
            .set_number_of_retries(1);
        let conn = tokio::time::timeout(Duration::from_secs(2), client.get_connection_manager_with_config(config))
            .await
            .map_err(|_| redis::RedisError::from((redis::ErrorKind::IoError, "connect timed out")))??;
        Ok(Self { conn, ttl_ms, op_timeout: Duration::from_millis(300), prefix: prefix.to_string() })
    }

    fn key(&self, event_id: &str) -> String {
        format!("{}:seatmap:{event_id}", self.prefix)
    }
}

#[async_trait]
impl SeatMapCache for RedisCache {
    async fn get(&self, event_id: &str) -> Option<Vec<u8>> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("GET").arg(self.key(event_id)).clone();
        match tokio::time::timeout(self.op_timeout, cmd.query_async::<Option<Vec<u8>>>(&mut c)).await {
            Ok(Ok(v)) => v,
            _ => None,
        }
    }
    async fn put(&self, event_id: &str, body: &[u8]) {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("SET").arg(self.key(event_id)).arg(body).arg("PX").arg(self.ttl_ms).clone();
        let _ = tokio::time::timeout(self.op_timeout, cmd.query_async::<()>(&mut c)).await;
    }
    async fn invalidate(&self, event_id: &str) {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("DEL").arg(self.key(event_id)).clone();
        let _ = tokio::time::timeout(self.op_timeout, cmd.query_async::<()>(&mut c)).await;
    }
}

/// A [`RedisCache`] that is connected lazily: when Redis is down at start (or
/// a connection cannot be made), every call is a miss, and a new connection is
/// tried in the background at most once per `reconnect_interval`; requests
/// never wait for it. A service started during a Redis outage thus uses the
/// cache once Redis is back. Once connected, [`RedisCache`]'s connection
/// manager reconnects by itself.
///
/// Production only (it spawns its connection attempts); the simulator uses [`MemCache`].
#[derive(Clone)]
pub struct LazyRedisCache {
    inner: std::sync::Arc<LazyInner>,
}

struct LazyInner {
    url: String,
    ttl_ms: u64,
    prefix: String,
    reconnect_interval: Duration,
    connected: std::sync::OnceLock<RedisCache>,
    /// When the last connection attempt started, and whether one is running.
    attempt: Mutex<(Option<tokio::time::Instant>, bool)>,
}

impl std::fmt::Debug for LazyRedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyRedisCache").field("connected", &self.is_connected()).finish_non_exhaustive()
    }
}

impl LazyRedisCache {
    /// A cache on `url` (checked now: a malformed URL is an error), entries
    /// living `ttl_ms` (>= 1) under `prefix`; connection attempts at most once
    /// per `reconnect_interval`. Tries to connect once before returning.
    pub async fn new(
        url: &str,
        ttl_ms: u64,
        prefix: &str,
        reconnect_interval: Duration,
    ) -> Result<Self, redis::RedisError> {
        assert!(ttl_ms >= 1);
        redis::Client::open(url)?;
        let inner = LazyInner {
            url: url.to_string(),
            ttl_ms,
            prefix: prefix.to_string(),
            reconnect_interval,
            connected: std::sync::OnceLock::new(),
            attempt: Mutex::new((Some(tokio::time::Instant::now()), false)),
        };
        match RedisCache::connect(url, ttl_ms, prefix).await {
            Ok(c) => {
                let _ = inner.connected.set(c);
            }
            Err(e) => tracing::warn!(error = %e, "redis unavailable at start: serving seat maps from the store"),
        }
        Ok(Self { inner: std::sync::Arc::new(inner) })
    }

    /// Whether a connection has been made.
    pub fn is_connected(&self) -> bool {
        self.inner.connected.get().is_some()
    }

    /// The connection, if made; otherwise starts a background attempt when one is due.
    fn connection(&self) -> Option<&RedisCache> {
        if let Some(c) = self.inner.connected.get() {
            return Some(c);
        }
        let now = tokio::time::Instant::now();
        {
            let mut attempt = self.inner.attempt.lock().expect("cache attempt lock poisoned");
            let (last, running) = *attempt;
            if running || last.is_some_and(|at| now < at + self.inner.reconnect_interval) {
                return None;
            }
            *attempt = (Some(now), true);
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            match RedisCache::connect(&inner.url, inner.ttl_ms, &inner.prefix).await {
                Ok(c) => {
                    tracing::info!("connected to redis: seat maps are cached");
                    let _ = inner.connected.set(c);
                }
                Err(e) => tracing::debug!(error = %e, "redis still unavailable"),
            }
            inner.attempt.lock().expect("cache attempt lock poisoned").1 = false;
        });
        None
    }
}

#[async_trait]
impl SeatMapCache for LazyRedisCache {
    async fn get(&self, event_id: &str) -> Option<Vec<u8>> {
        self.connection()?.get(event_id).await
    }
    async fn put(&self, event_id: &str, body: &[u8]) {
        if let Some(c) = self.connection() {
            c.put(event_id, body).await;
        }
    }
    async fn invalidate(&self, event_id: &str) {
        if let Some(c) = self.connection() {
            c.invalidate(event_id).await;
        }
    }
}
