//! The seat-map cache under faults: the services' shared [`MemCache`] (one
//! Redis) behind a switch the cache nemesis flips. `down`: every read
//! misses, puts and invalidations are lost (as when Redis is unreachable);
//! `stale`: invalidations are lost, so entries live out their TTL; `poisoned`:
//! reads answer a lie, the cached map with every seat shown available. When
//! the world has cache faults, every read it answers is traced
//! ([`TraceKind::SeatMapCached`](invariants::trace::TraceKind::SeatMapCached)),
//! so `stale-read-bounded` can hold served maps to the TTL.

use crate::world::recorder::Recorder;
use async_trait::async_trait;
use booking::http::cache::{CachedSeatMap, MemCache, SeatMapCache};
use booking::model::EventId;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// What the cache does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Works.
    Healthy = 0,
    /// Unreachable: reads miss, writes and invalidations are lost.
    Down = 1,
    /// Invalidations are lost.
    Stale = 2,
    /// Reads answer a map that shows every seat available.
    Poisoned = 3,
}

impl CacheMode {
    /// The faults, by their scenario names (`faults.cache.modes`).
    pub fn parse(name: &str) -> Option<CacheMode> {
        match name {
            "down" => Some(CacheMode::Down),
            "stale" => Some(CacheMode::Stale),
            "poisoned" => Some(CacheMode::Poisoned),
            _ => None,
        }
    }

    /// The scenario name (`healthy` for no fault).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheMode::Healthy => "healthy",
            CacheMode::Down => "down",
            CacheMode::Stale => "stale",
            CacheMode::Poisoned => "poisoned",
        }
    }

    fn from_u8(v: u8) -> CacheMode {
        match v {
            1 => CacheMode::Down,
            2 => CacheMode::Stale,
            3 => CacheMode::Poisoned,
            _ => CacheMode::Healthy,
        }
    }
}

/// The switch every service host's cache reads; the cache nemesis flips it.
#[derive(Debug, Clone, Default)]
pub struct CacheSwitch(Arc<AtomicU8>);

impl CacheSwitch {
    /// What the cache does now.
    pub fn mode(&self) -> CacheMode {
        CacheMode::from_u8(self.0.load(Ordering::SeqCst))
    }

    /// Makes the cache do `mode` from now on.
    pub fn set(&self, mode: CacheMode) {
        self.0.store(mode as u8, Ordering::SeqCst);
    }
}

/// The entity tag a poisoned entry carries (a strong tag no store version has).
pub const POISONED_ETAG: &str = "\"poisoned\"";

/// [`MemCache`] behind a [`CacheSwitch`], tracing what it serves when `recorder` is set.
pub struct FaultyCache {
    inner: Arc<MemCache>,
    switch: CacheSwitch,
    recorder: Option<Recorder>,
}

impl FaultyCache {
    /// `inner` under `switch`; reads traced into `recorder` when given.
    pub fn new(inner: Arc<MemCache>, switch: CacheSwitch, recorder: Option<Recorder>) -> Self {
        Self { inner, switch, recorder }
    }
}

/// The store version a seat map's entity tag names (`"sm-<seats>-<version_sum>"`).
pub fn version_of_etag(etag: &str) -> Option<i64> {
    etag.trim_matches('"').strip_prefix("sm-")?.split('-').nth(1)?.parse().ok()
}

/// `entry` with every seat shown available and no countdown: the lie a poisoned cache tells.
pub fn poisoned(entry: &CachedSeatMap) -> Option<CachedSeatMap> {
    let mut map: serde_json::Value = serde_json::from_slice(&entry.body).ok()?;
    for seat in map.get_mut("seats")?.as_array_mut()? {
        let seat = seat.as_object_mut()?;
        seat.insert("state".into(), serde_json::Value::from("available"));
        seat.insert("hold_expires_at_ms".into(), serde_json::Value::Null);
    }
    Some(CachedSeatMap { etag: POISONED_ETAG.to_string(), body: serde_json::to_vec(&map).ok()? })
}

#[async_trait]
impl SeatMapCache for FaultyCache {
    async fn get(&self, event_id: &EventId) -> Option<CachedSeatMap> {
        let mode = self.switch.mode();
        if mode == CacheMode::Down {
            return None;
        }
        let entry = self.inner.get(event_id).await?;
        let (served, version) = if mode == CacheMode::Poisoned {
            (poisoned(&entry)?, None)
        } else {
            let version = version_of_etag(&entry.etag);
            assert!(version.is_some(), "the services cache only their own tags: {:?}", entry.etag);
            (entry, version)
        };
        if let Some(r) = &self.recorder {
            r.seat_map_cached(event_id, version);
        }
        Some(served)
    }

    async fn put(&self, event_id: &EventId, entry: &CachedSeatMap) {
        if self.switch.mode() != CacheMode::Down {
            self.inner.put(event_id, entry).await;
        }
    }

    async fn invalidate(&self, event_id: &EventId) {
        if matches!(self.switch.mode(), CacheMode::Healthy | CacheMode::Poisoned) {
            self.inner.invalidate(event_id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> CachedSeatMap {
        CachedSeatMap {
            etag: "\"sm-2-7\"".into(),
            body: br#"{"event_id":"ev0","seats":[{"seat_id":"s0","state":"sold","version":4,"hold_expires_at_ms":null},{"seat_id":"s1","state":"held","version":3,"hold_expires_at_ms":99}]}"#.to_vec(),
        }
    }

    #[test]
    fn the_version_is_read_from_the_tag() {
        assert_eq!(version_of_etag("\"sm-2-7\""), Some(7));
        assert_eq!(version_of_etag("\"sm-2-7-available\""), Some(7));
        assert_eq!(version_of_etag(POISONED_ETAG), None);
    }

    #[test]
    fn a_poisoned_map_shows_every_seat_available() {
        let lie = poisoned(&entry()).expect("a map");
        let map: booking::http::api::SeatMapView = serde_json::from_slice(&lie.body).expect("still a seat map");
        assert!(
            map.seats.iter().all(|s| s.state == booking::model::SeatState::Available && s.hold_expires_at_ms.is_none())
        );
        assert_eq!(lie.etag, POISONED_ETAG);
    }

    #[tokio::test]
    async fn each_mode_does_what_it_says() {
        let inner = Arc::new(MemCache::new(8));
        let switch = CacheSwitch::default();
        let cache = FaultyCache::new(inner.clone(), switch.clone(), None);
        cache.put(&"ev0".into(), &entry()).await;
        assert_eq!(cache.get(&"ev0".into()).await, Some(entry()), "healthy");
        switch.set(CacheMode::Down);
        assert_eq!(cache.get(&"ev0".into()).await, None, "down: a miss");
        cache.invalidate(&"ev0".into()).await;
        switch.set(CacheMode::Stale);
        assert_eq!(cache.get(&"ev0".into()).await, Some(entry()), "the invalidation while down was lost");
        cache.invalidate(&"ev0".into()).await;
        assert_eq!(cache.get(&"ev0".into()).await, Some(entry()), "stale: invalidations are lost");
        switch.set(CacheMode::Poisoned);
        assert_eq!(cache.get(&"ev0".into()).await.map(|e| e.etag), Some(POISONED_ETAG.to_string()));
        switch.set(CacheMode::Healthy);
        cache.invalidate(&"ev0".into()).await;
        assert_eq!(cache.get(&"ev0".into()).await, None, "healthy again: invalidated");
        switch.set(CacheMode::Down);
        cache.put(&"ev0".into(), &entry()).await;
        switch.set(CacheMode::Healthy);
        assert_eq!(cache.get(&"ev0".into()).await, None, "a put while down was lost");
    }
}
