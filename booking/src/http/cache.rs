//! The seat-map cache. Reads may be served from it; writes never consult it:
//! a hold always goes to the store, so a stale or poisoned cache cannot sell a
//! seat twice. A cache that fails is a miss, never an error. Each entry keeps
//! a serialized seat map with its entity tag, so a cached answer carries the
//! tag of the body it sends.

use super::etag::is_strong_entity_tag;
use crate::clock::Clock;
use crate::model::EventId;
use async_trait::async_trait;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

/// A cached seat map: the serialized body and the entity tag of the seat map
/// it was serialized from (`SeatMapVersion::etag`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedSeatMap {
    /// The strong entity tag, quoted (e.g. `"sm-3-7"`).
    pub etag: String,
    /// The JSON body.
    pub body: Vec<u8>,
}

impl CachedSeatMap {
    /// The stored form (Redis): the entity tag, a newline, then the body.
    /// Precondition: `etag` is one strong entity tag (no newline in it).
    pub fn encode(&self) -> Vec<u8> {
        assert!(is_strong_entity_tag(self.etag.as_bytes()), "cached entity tag {:?} is malformed", self.etag);
        let mut out = Vec::with_capacity(self.etag.len() + 1 + self.body.len());
        out.extend_from_slice(self.etag.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.body);
        out
    }

    /// [`CachedSeatMap::decode`]; with `untagged_as_body` (the planted bug
    /// `cache-serves-untagged`), bytes without a tag line are taken for a
    /// bare seat-map body, untagged, and served whatever they hold.
    pub fn decode_planted(bytes: &[u8], untagged_as_body: bool) -> Option<Self> {
        match Self::decode(bytes) {
            None if untagged_as_body && !bytes.contains(&b'\n') => {
                Some(Self { etag: String::new(), body: bytes.to_vec() })
            }
            decoded => decoded,
        }
    }

    /// Reads [`CachedSeatMap::encode`]'s form. `None` (a miss) for anything
    /// else: entries written before entity tags were cached (a bare JSON
    /// body), a malformed tag, garbage.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let newline = bytes.iter().position(|&b| b == b'\n')?;
        let (etag, body) = (&bytes[..newline], &bytes[newline + 1..]);
        if !is_strong_entity_tag(etag) {
            return None;
        }
        Some(Self { etag: std::str::from_utf8(etag).ok()?.to_string(), body: body.to_vec() })
    }
}

/// A cache of serialized seat maps with their entity tags, keyed by event.
#[async_trait]
pub trait SeatMapCache: Send + Sync + 'static {
    /// The cached seat map of `event_id`, or `None` (miss or cache failure).
    async fn get(&self, event_id: &EventId) -> Option<CachedSeatMap>;
    /// Caches `entry` for `event_id` for the cache's TTL. Failures are ignored.
    /// Precondition: `entry.etag` is the tag of the seat map `entry.body` shows.
    async fn put(&self, event_id: &EventId, entry: &CachedSeatMap);
    /// Drops `event_id`'s entry. Failures are ignored (the TTL bounds staleness).
    async fn invalidate(&self, event_id: &EventId);
}

/// No cache: every read goes to the store.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

#[async_trait]
impl SeatMapCache for NoCache {
    async fn get(&self, _: &EventId) -> Option<CachedSeatMap> {
        None
    }
    async fn put(&self, _: &EventId, _: &CachedSeatMap) {}
    async fn invalidate(&self, _: &EventId) {}
}

/// An in-process cache with the Redis cache's contract: entries live
/// `ttl_ms` by the cache's own clock (one clock for every caller, as a Redis
/// server has one), bounded to `max_entries` events. For the simulator (one
/// cache shared by every service host, as one Redis is) and tests.
pub struct MemCache {
    max_entries: usize,
    /// Entries' lifetime and the clock that judges it.
    ttl: Option<(i64, Arc<dyn Clock>)>,
    /// Each event's entry, with the cache clock's reading when it was put.
    entries: Mutex<BTreeMap<String, (i64, CachedSeatMap)>>,
    hits: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for MemCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemCache").field("max_entries", &self.max_entries).finish_non_exhaustive()
    }
}

impl MemCache {
    /// A cache holding at most `max_entries` events, entries living until invalidated.
    pub fn new(max_entries: usize) -> Self {
        Self { max_entries, ttl: None, entries: Mutex::new(BTreeMap::new()), hits: Default::default() }
    }

    /// Reads answered from the cache so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A cache holding at most `max_entries` events, entries living `ttl_ms`
    /// (>= 1) by `clock`. Every caller shares that one clock: a per-host clock
    /// (a tokio `Instant` of each host's runtime, say) would disagree across
    /// hosts and restarts, and an entry could outlive its TTL.
    pub fn with_ttl(max_entries: usize, ttl_ms: u64, clock: Arc<dyn Clock>) -> Self {
        assert!(ttl_ms >= 1);
        let ttl_ms = i64::try_from(ttl_ms).expect("a TTL fits in i64 ms");
        Self { max_entries, ttl: Some((ttl_ms, clock)), entries: Mutex::new(BTreeMap::new()), hits: Default::default() }
    }

    /// The cache clock's reading (0 without a TTL: nothing expires).
    fn now_ms(&self) -> i64 {
        self.ttl.as_ref().map_or(0, |(_, clock)| clock.now_ms())
    }
}

#[async_trait]
impl SeatMapCache for MemCache {
    async fn get(&self, event_id: &EventId) -> Option<CachedSeatMap> {
        let now_ms = self.now_ms();
        let mut e = self.entries.lock().expect("cache poisoned");
        let (put_at_ms, entry) = e.get(event_id.as_str())?;
        if self.ttl.as_ref().is_some_and(|(ttl_ms, _)| now_ms - put_at_ms >= *ttl_ms) {
            e.remove(event_id.as_str());
            return None;
        }
        self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(entry.clone())
    }
    async fn put(&self, event_id: &EventId, entry: &CachedSeatMap) {
        let now_ms = self.now_ms();
        let mut e = self.entries.lock().expect("cache poisoned");
        if e.len() >= self.max_entries && !e.contains_key(event_id.as_str()) {
            return;
        }
        e.insert(event_id.to_string(), (now_ms, entry.clone()));
    }
    async fn invalidate(&self, event_id: &EventId) {
        self.entries.lock().expect("cache poisoned").remove(event_id.as_str());
    }
}

/// Redis-backed cache. Every call is bounded by `op_timeout`; any error or
/// timeout is a miss, so Redis down means slower reads, not errors. Values are
/// [`CachedSeatMap::encode`]'s form; any other value is a miss.
#[derive(Clone)]
pub struct RedisCache {
    conn: redis::aio::ConnectionManager,
    ttl_ms: u64,
    op_timeout: Duration,
    prefix: String,
    /// The planted bugs this connection carries.
    planted: CachePlants,
}

/// The planted bugs of the Redis seat-map cache (none by default).
#[derive(Debug, Clone, Copy, Default)]
struct CachePlants {
    /// `cache-serves-untagged` (see [`CachedSeatMap::decode_planted`]).
    untagged_as_body: bool,
    /// `cache-ttl-in-seconds`: the lifetime in milliseconds given to Redis as seconds.
    ttl_in_seconds: bool,
}

impl std::fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisCache").field("ttl_ms", &self.ttl_ms).finish_non_exhaustive()
    }
}

/// How long a cache call waits for Redis before it counts as a miss.
pub const CACHE_OP_TIMEOUT: Duration = Duration::from_millis(300);

/// How long the planted `cache-waits-for-redis` waits instead.
const PLANTED_OP_TIMEOUT: Duration = Duration::from_secs(30);

impl RedisCache {
    /// Connects to `url`; entries live `ttl_ms` (>= 1) under keys `prefix:seatmap:<event>`.
    pub async fn connect(url: &str, ttl_ms: u64, prefix: &str) -> Result<Self, redis::RedisError> {
        Self::connect_waiting(url, ttl_ms, prefix, CACHE_OP_TIMEOUT).await
    }

    /// [`RedisCache::connect`], each call waiting `op_timeout` for Redis.
    async fn connect_waiting(
        url: &str,
        ttl_ms: u64,
        prefix: &str,
        op_timeout: Duration,
    ) -> Result<Self, redis::RedisError> {
        assert!(ttl_ms >= 1);
        let client = redis::Client::open(url)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Duration::from_millis(500))
            .set_response_timeout(op_timeout.max(Duration::from_millis(500)))
            .set_number_of_retries(1);
        let conn = tokio::time::timeout(Duration::from_secs(2), client.get_connection_manager_with_config(config))
            .await
            .map_err(|_| redis::RedisError::from((redis::ErrorKind::IoError, "connect timed out")))??;
        Ok(Self { conn, ttl_ms, op_timeout, prefix: prefix.to_string(), planted: CachePlants::default() })
    }

    fn key(&self, event_id: &EventId) -> String {
        format!("{}:seatmap:{event_id}", self.prefix)
    }
}

#[async_trait]
impl SeatMapCache for RedisCache {
    async fn get(&self, event_id: &EventId) -> Option<CachedSeatMap> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("GET").arg(self.key(event_id)).clone();
        match tokio::time::timeout(self.op_timeout, cmd.query_async::<Option<Vec<u8>>>(&mut c)).await {
            Ok(Ok(v)) => CachedSeatMap::decode_planted(&v?, self.planted.untagged_as_body),
            _ => None,
        }
    }
    async fn put(&self, event_id: &EventId, entry: &CachedSeatMap) {
        let mut c = self.conn.clone();
        let value = entry.encode();
        let unit = if self.planted.ttl_in_seconds { "EX" } else { "PX" };
        let cmd = redis::cmd("SET").arg(self.key(event_id)).arg(value).arg(unit).arg(self.ttl_ms).clone();
        let _ = tokio::time::timeout(self.op_timeout, cmd.query_async::<()>(&mut c)).await;
    }
    async fn invalidate(&self, event_id: &EventId) {
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
    /// The planted bugs, for every connection made.
    planted: CachePlants,
    /// How long each call waits for Redis ([`CACHE_OP_TIMEOUT`]; longer with
    /// the planted bug `cache-waits-for-redis`).
    op_timeout: Duration,
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
    /// `faults` may plant `cache-serves-untagged`, `cache-waits-for-redis`
    /// and `cache-ttl-in-seconds`.
    pub async fn new(
        url: &str,
        ttl_ms: u64,
        prefix: &str,
        reconnect_interval: Duration,
        faults: &crate::fault::FaultSeam,
    ) -> Result<Self, redis::RedisError> {
        assert!(ttl_ms >= 1);
        redis::Client::open(url)?;
        let inner = LazyInner {
            url: url.to_string(),
            ttl_ms,
            prefix: prefix.to_string(),
            reconnect_interval,
            planted: CachePlants {
                untagged_as_body: crate::planted!(faults, CacheServesUntagged),
                ttl_in_seconds: crate::planted!(faults, CacheTtlInSeconds),
            },
            op_timeout: if crate::planted!(faults, CacheWaitsForRedis) { PLANTED_OP_TIMEOUT } else { CACHE_OP_TIMEOUT },
            connected: std::sync::OnceLock::new(),
            attempt: Mutex::new((Some(tokio::time::Instant::now()), false)),
        };
        match RedisCache::connect_waiting(url, ttl_ms, prefix, inner.op_timeout).await {
            Ok(c) => {
                let _ = inner.connected.set(RedisCache { planted: inner.planted, ..c });
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
            match RedisCache::connect_waiting(&inner.url, inner.ttl_ms, &inner.prefix, inner.op_timeout).await {
                Ok(c) => {
                    tracing::info!("connected to redis: seat maps are cached");
                    let _ = inner.connected.set(RedisCache { planted: inner.planted, ..c });
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
    async fn get(&self, event_id: &EventId) -> Option<CachedSeatMap> {
        self.connection()?.get(event_id).await
    }
    async fn put(&self, event_id: &EventId, entry: &CachedSeatMap) {
        if let Some(c) = self.connection() {
            c.put(event_id, entry).await;
        }
    }
    async fn invalidate(&self, event_id: &EventId) {
        if let Some(c) = self.connection() {
            c.invalidate(event_id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_form_round_trips_and_anything_else_is_a_miss() {
        let entry = CachedSeatMap { etag: "\"sm-2-5\"".into(), body: b"{\"event_id\":\"e1\",\"seats\":[]}".to_vec() };
        let stored = entry.encode();
        assert!(stored.starts_with(b"\"sm-2-5\"\n{"));
        assert_eq!(CachedSeatMap::decode(&stored), Some(entry));
        // A body may hold newlines; only the first one separates.
        let entry = CachedSeatMap { etag: "\"x\"".into(), body: b"a\nb".to_vec() };
        assert_eq!(CachedSeatMap::decode(&entry.encode()), Some(entry));
        for other in [
            &br#"{"event_id":"e1","seats":[]}"#[..],
            b"",
            b"\n{}",
            b"sm-2-5\n{}",
            b"W/\"sm-2-5\"\n{}",
            b"\"sm-2-5\" \n{}",
        ] {
            assert_eq!(CachedSeatMap::decode(other), None, "{:?}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn only_the_planted_decode_serves_an_untagged_entry() {
        let garbage = b"\0poisoned{not json";
        assert_eq!(CachedSeatMap::decode_planted(garbage, false), None);
        let served = CachedSeatMap::decode_planted(garbage, true).expect("the planted bug serves it");
        assert_eq!((served.etag.as_str(), served.body.as_slice()), ("", &garbage[..]));
        let entry = CachedSeatMap { etag: "\"sm-2-5\"".into(), body: b"{}".to_vec() };
        assert_eq!(
            CachedSeatMap::decode_planted(&entry.encode(), true),
            Some(entry),
            "a tagged entry is read as always"
        );
    }

    #[tokio::test]
    async fn a_mem_cache_entry_lives_its_ttl_and_no_longer() {
        let entry = CachedSeatMap { etag: "\"sm-1-1\"".into(), body: b"{}".to_vec() };
        let clock = crate::clock::ManualClock::new(1_000);
        let cache = MemCache::with_ttl(4, 40, clock.clone());
        cache.put(&"e".into(), &entry).await;
        clock.advance_ms(39);
        assert_eq!(cache.get(&"e".into()).await, Some(entry.clone()), "alive until its TTL");
        clock.advance_ms(1);
        assert_eq!(cache.get(&"e".into()).await, None, "expired");
        let forever = MemCache::new(4);
        forever.put(&"e".into(), &entry).await;
        clock.advance_ms(60_000);
        assert_eq!(forever.get(&"e".into()).await, Some(entry));
    }
}
