//! Where a fault event goes: its lane (a host, a link, a user, the sweeper,
//! the cache, the provider) and whether it opens or closes a band (a crash
//! until its restart, a partition until its repair, a pause until the
//! resume, a stall, a cache fault, a provider brownout).
//!
//! Hosts, links and users are read from the fault's detail text, as the
//! simulator writes it (`svc0 crashes after ...`, `client0 <-> svc1 cut`,
//! `u00001 pauses ...`); a detail of another shape lands in a shared lane.

use super::lane_key::LaneKey;
use invariants::trace::{FaultBand, FaultEvent, FaultSite, FaultSpan};

/// What a band is: the pair of fault events that open and close one.
pub type BandKind = FaultBand;

/// A band's look and words on the page.
pub trait BandLook {
    /// The CSS class of the band.
    fn class(self) -> &'static str;
    /// What the band is, in words.
    fn what(self) -> &'static str;
}

impl BandLook for BandKind {
    fn class(self) -> &'static str {
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

    fn what(self) -> &'static str {
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

/// Where fault `kind` with `detail` is drawn (its site and span are the
/// trace's: [`FaultEvent::placement`]).
pub fn place(kind: FaultEvent, detail: &str) -> Placement {
    let (site, span) = kind.placement(detail);
    let lane = match site {
        FaultSite::Host => lane_of(detail, LaneKey::Host, LaneKey::Other),
        FaultSite::Link => LaneKey::Link(link_of(detail)),
        FaultSite::Network => LaneKey::Network,
        FaultSite::User => lane_of(detail, user_lane, LaneKey::Other),
        FaultSite::Sweeper => LaneKey::Sweeper,
        FaultSite::Cache => LaneKey::Cache,
        FaultSite::Store => LaneKey::Store,
        FaultSite::Provider => LaneKey::Provider,
        FaultSite::Other => LaneKey::Other,
    };
    let edge = match span {
        FaultSpan::Point => Edge::Point,
        FaultSpan::Open(band) => Edge::Open(band),
        FaultSpan::Close(band) => Edge::Close(band),
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
