//! The seat-map cache across a restart of its Redis that keeps the data
//! (append-only file, `appendfsync always`), with real processes: an entry
//! whose invalidation was lost while Redis was down comes back with it, and
//! only its lifetime, kept by Redis as an absolute expiry, bounds how long
//! it is served. The planted `cache-ttl-in-seconds` (the lifetime given as
//! seconds) serves it long after; a restart that loses the data hides that
//! bug, which is why chaos mode restarts the cache's Redis both ways.

use crate::process_support;

use booking::fault::{FaultSeam, Plant};
use booking::http::cache::{CachedSeatMap, LazyRedisCache, SeatMapCache};
use process_support::{free_port, redis_server};
use std::time::Duration;

/// The entries' lifetime in these tests, ms.
const TTL_MS: u64 = 300;
/// How long past the lifetime the entry is read again, ms.
const PAST_TTL_MS: u64 = 700;
/// Bound on the cache reaching Redis again after a restart.
const WAIT: Duration = Duration::from_secs(10);
/// Attempts at a free port.
const PORT_ATTEMPTS: usize = 5;

/// A fresh append-only directory under the system's temporary directory.
fn aof_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("holdfast-cache-kept-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits (bounded by [`WAIT`]) until `cache` works again after a restart:
/// a probe entry it puts is read back.
async fn reconnected(cache: &LazyRedisCache) {
    let probe = CachedSeatMap { etag: "\"sm-0-0\"".into(), body: b"{}".to_vec() };
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        cache.put(&"probe".into(), &probe).await;
        if cache.get(&"probe".into()).await.as_ref() == Some(&probe) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the cache did not reach Redis again within {WAIT:?}");
}

/// Caches an entry, kills Redis (`kill -9`), invalidates the entry while it
/// is down (lost), starts Redis again on the same port (with its data when
/// `keep`), waits past the lifetime and reads: whether the stale entry is
/// served, under `faults`.
async fn stale_entry_served_after_restart(faults: &FaultSeam, keep: bool, name: &str) -> bool {
    let dir = aof_dir(name);
    let aof = keep.then_some(dir.as_path());
    let mut started = None;
    for _ in 0..PORT_ATTEMPTS {
        let port = free_port();
        if let Ok(p) = redis_server(port, Some(&dir)).await {
            started = Some((p, port));
            break;
        }
    }
    let (mut first, port) = started.expect("a redis-server of the test's own");
    let url = format!("redis://127.0.0.1:{port}");
    let cache = LazyRedisCache::new(&url, TTL_MS, name, Duration::from_millis(50), faults).await.unwrap();
    assert!(cache.is_connected(), "connected at start");
    let entry = CachedSeatMap { etag: "\"sm-1-1\"".into(), body: b"{\"seats\":[]}".to_vec() };
    cache.put(&"ev".into(), &entry).await;
    assert_eq!(cache.get(&"ev".into()).await, Some(entry.clone()), "cached");
    first.child.kill().await.unwrap();
    cache.invalidate(&"ev".into()).await; // lost: Redis is down
    let _second = redis_server(port, aof).await.expect("redis-server again on its port");
    reconnected(&cache).await;
    tokio::time::sleep(Duration::from_millis(TTL_MS + PAST_TTL_MS)).await;
    let served = cache.get(&"ev".into()).await;
    let _ = std::fs::remove_dir_all(&dir);
    served == Some(entry)
}

#[tokio::test]
async fn a_kept_restart_brings_back_no_entry_past_its_lifetime() {
    assert!(
        !stale_entry_served_after_restart(&FaultSeam::none(), true, "sound-kept").await,
        "an entry whose invalidation was lost outlived its lifetime"
    );
}

/// The planted bug is exposed by the kept restart alone: after a restart
/// that loses the data, the stale entry is gone whatever its lifetime.
#[tokio::test]
async fn a_kept_restart_exposes_a_lifetime_given_in_seconds_and_an_empty_one_does_not() {
    let planted = FaultSeam::planting(Plant::CacheTtlInSeconds);
    assert!(
        stale_entry_served_after_restart(&planted, true, "planted-kept").await,
        "cache-ttl-in-seconds: the stale entry should still be served after a kept restart"
    );
    assert!(
        !stale_entry_served_after_restart(&planted, false, "planted-empty").await,
        "after an empty restart nothing is left to serve"
    );
}
