//! Where a fault event goes: its lane (a host, a link, a user, the sweeper,
//! the cache, the provider) and whether it opens or closes a band (a crash
//! until its restart, a partition until its repair, a pause until the
//! resume, a stall, a cache fault, a provider brownout).
//!
//! Hosts, links and users are read from the fault's detail text, as the
//! simulator writes it (`svc0 crashes after ...`, `client0 <-> svc1 cut`,
//! `u00001 pauses ...`); a detail of another shape lands in a shared lane.

use super::lane_key::LaneKey;
use invariants::trace::FaultEvent;

/// What a band is: the pair of fault events that open and close one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BandKind {
    /// A host down: crash after commit until restart.
    Crash,
    /// A link cut or held until repaired.
    Partition,
    /// A client paused until it resumes.
    Pause,
    /// The sweeper stalled until it resumes.
    Stall,
    /// The seat-map cache down, stale or poisoned until healed.
    Cache,
    /// The provider's brownout window.
    Brownout,
    /// The store unreachable until restored.
    Outage,
}

impl BandKind {
    /// The CSS class of the band.
    pub fn class(self) -> &'static str {
        match self {
            BandKind::Crash => "band band-crash",
            BandKind::Partition => "band band-partition",
            BandKind::Pause => "band band-pause",
            BandKind::Stall => "band band-stall",
            BandKind::Cache => "band band-cache",
            BandKind::Brownout => "band band-brownout",
            BandKind::Outage => "band band-outage",
        }
    }

    /// What the band is, in words.
    pub fn what(self) -> &'static str {
        match self {
            BandKind::Crash => "host down (crashed after a commit)",
            BandKind::Partition => "link partitioned",
            BandKind::Pause => "client paused",
            BandKind::Stall => "sweeper stalled",
            BandKind::Cache => "seat-map cache faulty",
            BandKind::Brownout => "provider brownout",
            BandKind::Outage => "store unreachable",
        }
    }
}

/// Whether a fault event opens a band, closes one, or is a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edge {
    /// A fault at one moment.
    Point,
    /// The start of a band of this kind in the lane.
    Open(BandKind),
    /// The end of the lane's band of this kind.
    Close(BandKind),
}

/// A fault event's lane and edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The lane it is drawn in.
    pub lane: LaneKey,
    /// Whether it opens or closes a band.
    pub edge: Edge,
}

/// The first word of `detail`, if any.
fn first_word(detail: &str) -> Option<&str> {
    detail.split_whitespace().next()
}

/// The lane named by `detail`'s first word (`make` builds it), or `fallback`.
/// A user's lane, by the name a fault's detail starts with.
fn user_lane(name: String) -> LaneKey {
    LaneKey::User(name.into())
}

fn lane_of(detail: &str, make: fn(String) -> LaneKey, fallback: LaneKey) -> LaneKey {
    first_word(detail).map_or(fallback, |w| make(w.to_string()))
}

/// The link a partition's detail names: `a <-> b`, without a trailing mode word.
fn link_of(detail: &str) -> String {
    match detail.trim().rsplit_once(' ') {
        Some((link, "cut" | "held")) => link.trim().to_string(),
        _ => detail.trim().to_string(),
    }
}

/// Where fault `kind` with `detail` is drawn.
pub fn place(kind: FaultEvent, detail: &str) -> Placement {
    use FaultEvent as K;
    let (lane, edge) = match kind {
        K::CrashAfterCommit => (lane_of(detail, LaneKey::Host, LaneKey::Other), Edge::Open(BandKind::Crash)),
        K::HostRestarted => (lane_of(detail, LaneKey::Host, LaneKey::Other), Edge::Close(BandKind::Crash)),
        K::ClockSkewed => (lane_of(detail, LaneKey::Host, LaneKey::Other), Edge::Point),
        K::PartitionStarted => (LaneKey::Link(link_of(detail)), Edge::Open(BandKind::Partition)),
        K::PartitionRepaired => (LaneKey::Link(link_of(detail)), Edge::Close(BandKind::Partition)),
        K::LinkLatency => (LaneKey::Network, Edge::Point),
        K::ClientPaused => (lane_of(detail, user_lane, LaneKey::Other), Edge::Open(BandKind::Pause)),
        K::ClientResumed => (lane_of(detail, user_lane, LaneKey::Other), Edge::Close(BandKind::Pause)),
        K::StaleTokenReplay => (lane_of(detail, user_lane, LaneKey::Other), Edge::Point),
        K::SweeperStalled => (LaneKey::Sweeper, Edge::Open(BandKind::Stall)),
        K::SweeperResumed => (LaneKey::Sweeper, Edge::Close(BandKind::Stall)),
        K::CacheDown | K::CacheStale | K::CachePoisoned => (LaneKey::Cache, Edge::Open(BandKind::Cache)),
        K::CacheHealed => (LaneKey::Cache, Edge::Close(BandKind::Cache)),
        K::StoreDown => (LaneKey::Store, Edge::Open(BandKind::Outage)),
        K::StoreRestored => (LaneKey::Store, Edge::Close(BandKind::Outage)),
        K::RoomsLost | K::RoomsDown => (LaneKey::Other, Edge::Point),
        K::ProviderError if detail.ends_with("brownout begins") => (LaneKey::Provider, Edge::Open(BandKind::Brownout)),
        K::ProviderError if detail.ends_with("brownout ends") => (LaneKey::Provider, Edge::Close(BandKind::Brownout)),
        K::ProviderError
        | K::ProviderUnknown
        | K::ProviderLateSuccess
        | K::RefundFailure
        | K::CallbackDelayed
        | K::CallbackDuplicated
        | K::CallbackReordered => (LaneKey::Provider, Edge::Point),
    };
    Placement { lane, edge }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crashes_pair_per_host() {
        let crash = place(FaultEvent::CrashAfterCommit, "svc1 crashes after committing at checkout");
        let up = place(FaultEvent::HostRestarted, "svc1 restarted");
        assert_eq!(crash.lane, LaneKey::Host("svc1".into()));
        assert_eq!(up.lane, crash.lane);
        assert_eq!((crash.edge, up.edge), (Edge::Open(BandKind::Crash), Edge::Close(BandKind::Crash)));
    }

    #[test]
    fn partitions_pair_per_link() {
        let cut = place(FaultEvent::PartitionStarted, "client0 <-> svc1 cut");
        let repaired = place(FaultEvent::PartitionRepaired, "client0 <-> svc1");
        assert_eq!(cut.lane, LaneKey::Link("client0 <-> svc1".into()));
        assert_eq!(repaired.lane, cut.lane);
    }

    #[test]
    fn odd_details_do_not_panic() {
        assert_eq!(place(FaultEvent::ClientPaused, "").lane, LaneKey::Other);
        assert_eq!(place(FaultEvent::PartitionStarted, "").lane, LaneKey::Link(String::new()));
        assert_eq!(place(FaultEvent::ProviderError, "provider brownout begins").edge, Edge::Open(BandKind::Brownout));
    }
}
