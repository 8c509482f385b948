//! The timeline's model, before any HTML: which lane each trace event is
//! drawn in and as what (a mark at a moment, a bar over a span), the
//! background bars of each seat's state, and the fault bands.
//!
//! Every trace event becomes exactly one item carrying its seq (the HTML
//! gives it the id `ev-<seq>`), so every witness a violation names can be
//! shown. Lanes exist only where events are; past `max_lanes` the lanes
//! without a witness are left out (counted, never silently).

use super::describe::{self, name_of};
use super::faults::{self, BandKind, BandLook, Edge};
pub use super::lane_key::LaneKey;
use super::scale::{TimeScale, time_label};
use booking::model::{EventId, OrderId, PaymentOpId, SeatId, SeatState, UserId};
use invariants::trace::{ClientOp, OpId, PaymentEvent, PhaseMark, RoomEvent, TraceEvent, TraceKind};
use std::collections::{BTreeMap, BTreeSet};

/// How an item is drawn; also its stacking order in its lane (later on top).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    /// A translucent fault band across the lane's height.
    Band,
    /// A seat's state between two writes.
    State,
    /// A request from its sending to its answer.
    Bar,
    /// A moment.
    Mark,
}

/// One thing drawn in a lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// How it is drawn.
    pub layer: Layer,
    /// Where it starts, simulated ms.
    pub from_ms: i64,
    /// Where it ends, simulated ms (`from_ms` for a mark).
    pub to_ms: i64,
    /// The trace event it draws (`None` for bands and state bars).
    pub seq: Option<u64>,
    /// Its CSS classes (fixed words and [`super::escape::class_fragment`]s only).
    pub class: String,
    /// Its tooltip and detail text.
    pub title: String,
}

/// One lane and what is drawn in it, in stacking order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// Which lane.
    pub key: LaneKey,
    /// Its items: bands, then states, bars and marks, each by time then seq.
    pub items: Vec<Item>,
    /// How many of its items are witnesses of a violation.
    pub witnesses: usize,
}

/// The whole timeline, ready to be written out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Time to position.
    pub scale: TimeScale,
    /// The lanes shown, in display order.
    pub lanes: Vec<Lane>,
    /// Drawn across every lane: the phase ends, and faint crash bands.
    pub overlays: Vec<Item>,
    /// Lanes left out over the lane limit (none of them holds a witness).
    pub left_out_lanes: usize,
    /// Trace events in those lanes.
    pub left_out_events: usize,
}

/// The seqs of the events recorded after the run: those after the
/// `settle_end` phase marker whose time is earlier than it (the provider's
/// ledger and the operators' list are read once the world has stopped, when
/// the simulated clock reads 0). They are drawn at the settle end.
pub fn after_run(trace: &[TraceEvent]) -> BTreeMap<u64, i64> {
    let mut out = BTreeMap::new();
    let mut end_ms: Option<i64> = None;
    for e in trace {
        match (&e.kind, end_ms) {
            (TraceKind::Phase { phase: PhaseMark::SettleEnd, .. }, _) => end_ms = Some(e.at_ms),
            (_, Some(end)) if e.at_ms < end => {
                out.insert(e.seq, end);
            }
            _ => {}
        }
    }
    out
}

/// The CSS class word of a seat state.
fn state_class(s: SeatState) -> String {
    format!("st-{}", super::escape::class_fragment(s.as_str()))
}

/// The payment operation a payment event is about, and its mark's word.
fn payment_mark(p: &PaymentEvent) -> (&PaymentOpId, &'static str) {
    match p {
        PaymentEvent::Charged { payment_op_id, .. } => (payment_op_id, "charged"),
        PaymentEvent::Declined { payment_op_id } => (payment_op_id, "declined"),
        PaymentEvent::Unknown { payment_op_id, .. } => (payment_op_id, "unknown"),
        PaymentEvent::Refunded { payment_op_id, .. } => (payment_op_id, "refunded"),
        PaymentEvent::RefundFailed { payment_op_id, .. } => (payment_op_id, "refund-failed"),
        PaymentEvent::CallbackDelivered { payment_op_id, .. } => (payment_op_id, "callback"),
        PaymentEvent::Read { payment_op_id, .. } => (payment_op_id, "read"),
    }
}

/// The lane a room event marks (its room's, or its user's) and the mark's word.
fn room_mark(r: &RoomEvent) -> (LaneKey, &'static str) {
    match r {
        RoomEvent::Opened { event_id, .. } => (LaneKey::Room(event_id.clone()), "opened"),
        RoomEvent::Pass { event_id, .. } => (LaneKey::Room(event_id.clone()), "pass"),
        RoomEvent::LawRan { event_id, .. } => (LaneKey::Room(event_id.clone()), "law"),
        RoomEvent::LawLearnt { event_id, .. } => (LaneKey::Room(event_id.clone()), "learnt"),
        RoomEvent::SoldOut { event_id } => (LaneKey::Room(event_id.clone()), "sold-out"),
        RoomEvent::Joined { user, .. } => (LaneKey::User(user.clone()), "joined"),
        RoomEvent::Admitted { user, .. } => (LaneKey::User(user.clone()), "admitted"),
        RoomEvent::Ended { user, .. } => (LaneKey::User(user.clone()), "ended"),
        RoomEvent::Reopened { user, .. } => (LaneKey::User(user.clone()), "reopened"),
        RoomEvent::Told { user, .. } => (LaneKey::User(user.clone()), "told"),
    }
}

/// The kind word of a client request.
fn op_kind(op: &ClientOp) -> &'static str {
    match op {
        ClientOp::Hold { .. } => "hold",
        ClientOp::Release { .. } => "release",
        ClientOp::Checkout { .. } => "checkout",
        ClientOp::OrderStatus { .. } => "status",
        ClientOp::SeatMap { .. } => "map",
        ClientOp::Request { .. } => "request",
    }
}

/// How a request was answered: when, and its outcome word.
#[derive(Debug, Clone, Copy)]
struct Completion {
    at_ms: i64,
    outcome: &'static str,
}

/// What the first pass learns: requests' answers and who owns each order and payment.
#[derive(Debug, Default)]
struct Index {
    completions: BTreeMap<OpId, Completion>,
    clients: BTreeMap<OpId, UserId>,
    order_holder: BTreeMap<OrderId, UserId>,
    payment_holder: BTreeMap<PaymentOpId, UserId>,
}

impl Index {
    fn of(trace: &[TraceEvent]) -> Self {
        let mut ix = Index::default();
        for e in trace {
            let done = |outcome| Completion { at_ms: e.at_ms, outcome };
            match &e.kind {
                TraceKind::Invoke { op_id, client, .. } => {
                    ix.clients.entry(*op_id).or_insert_with(|| client.clone());
                }
                TraceKind::Ok { op_id, .. } => {
                    ix.completions.entry(*op_id).or_insert(done("ok"));
                }
                TraceKind::Fail { op_id, .. } => {
                    ix.completions.entry(*op_id).or_insert(done("fail"));
                }
                TraceKind::Unknown { op_id, .. } => {
                    ix.completions.entry(*op_id).or_insert(done("unknown"));
                }
                TraceKind::OrderChange(o) => {
                    ix.order_holder.entry(o.order_id).or_insert_with(|| o.holder_id.clone());
                    ix.payment_holder.entry(o.payment_op_id).or_insert_with(|| o.holder_id.clone());
                }
                _ => {}
            }
        }
        ix
    }

    /// The user lane of whoever owns order `id`, or `fallback`.
    fn order_lane(&self, id: &OrderId, fallback: LaneKey) -> LaneKey {
        self.order_holder.get(id).map_or(fallback, |u| LaneKey::User(u.clone()))
    }

    /// The user lane of whoever owns payment operation `id`, or the provider's.
    fn payment_lane(&self, id: &PaymentOpId) -> LaneKey {
        self.payment_holder.get(id).map_or(LaneKey::Provider, |u| LaneKey::User(u.clone()))
    }
}

/// A span under way: where it started and what it says.
#[derive(Debug, Clone)]
struct Open {
    from_ms: i64,
    class: String,
    title: String,
}

/// The second pass: items per lane, open bands and seat states.
struct Builder {
    end_ms: i64,
    lanes: BTreeMap<LaneKey, Vec<Item>>,
    overlays: Vec<Item>,
    bands: BTreeMap<(LaneKey, BandKind), Open>,
    states: BTreeMap<(EventId, SeatId), Open>,
    /// Events recorded after the run, and where they are drawn ([`after_run`]).
    after_run: BTreeMap<u64, i64>,
}

impl Builder {
    fn push(&mut self, lane: LaneKey, item: Item) {
        self.lanes.entry(lane).or_default().push(item);
    }

    /// Where event `e` is drawn, simulated ms.
    fn at(&self, e: &TraceEvent) -> i64 {
        self.after_run.get(&e.seq).copied().unwrap_or(e.at_ms)
    }

    /// Event `e` in words, saying so when it was recorded after the run.
    fn line(&self, e: &TraceEvent) -> String {
        describe::event_line_drawn(e, self.after_run.contains_key(&e.seq))
    }

    fn mark(&mut self, lane: LaneKey, e: &TraceEvent, class: String) {
        let at_ms = self.at(e);
        let item =
            Item { layer: Layer::Mark, from_ms: at_ms, to_ms: at_ms, seq: Some(e.seq), class, title: self.line(e) };
        self.push(lane, item);
    }

    /// Ends span `open` at `to_ms` as an item of `layer` in `lane`.
    fn close(&mut self, lane: LaneKey, layer: Layer, open: Open, to_ms: i64, until: &str) {
        let title = format!("{} from {} {until}", open.title, time_label(open.from_ms));
        let item =
            Item { layer, from_ms: open.from_ms, to_ms: to_ms.max(open.from_ms), seq: None, class: open.class, title };
        self.push(lane, item);
    }

    /// Ends fault band `band` of `lane` at `to_ms`; a host's crash also
    /// shows, faintly, across every lane.
    fn close_band(&mut self, lane: LaneKey, band: BandKind, open: Open, to_ms: i64, until: &str) {
        if band == BandKind::Crash {
            let title = format!("{} from {} {until}", open.title, time_label(open.from_ms));
            let (from_ms, to_ms) = (open.from_ms, to_ms.max(open.from_ms));
            let class = "overlay-crash".to_string();
            self.overlays.push(Item { layer: Layer::Band, from_ms, to_ms, seq: None, class, title });
        }
        self.close(lane, Layer::Band, open, to_ms, until);
    }

    fn fault(&mut self, e: &TraceEvent, kind: invariants::trace::FaultEvent, detail: &str) {
        let place = faults::place(kind, detail);
        let class = format!("mark fault fault-{}", super::escape::class_fragment(&name_of(&kind)));
        self.mark(place.lane.clone(), e, class);
        match place.edge {
            Edge::Point => {}
            Edge::Open(band) => {
                let title = format!("{}: {} ({detail})", place.lane.label(), band.what());
                let from_ms = self.at(e);
                self.bands.entry((place.lane, band)).or_insert(Open {
                    from_ms,
                    class: band.class().to_string(),
                    title,
                });
            }
            Edge::Close(band) => {
                if let Some(open) = self.bands.remove(&(place.lane.clone(), band)) {
                    let at_ms = self.at(e);
                    self.close_band(place.lane, band, open, at_ms, &format!("to {}", time_label(at_ms)));
                }
            }
        }
    }

    fn seat(&mut self, e: &TraceEvent, c: &invariants::trace::SeatChange) {
        let lane = LaneKey::Seat { event_id: c.event_id.clone(), seat_id: c.seat_id.clone() };
        let key = (c.event_id.clone(), c.seat_id.clone());
        if let Some(open) = self.states.remove(&key) {
            self.close(lane.clone(), Layer::State, open, e.at_ms, &format!("to {}", time_label(e.at_ms)));
        }
        if c.after.state != SeatState::Available {
            let owner = c.after.holder_id.as_deref().map(|h| format!(" by {h}")).unwrap_or_default();
            let title = format!("seat {}/{} {}{owner}", c.event_id, c.seat_id, c.after.state);
            self.states
                .insert(key, Open { from_ms: e.at_ms, class: format!("state {}", state_class(c.after.state)), title });
        }
        let class = format!(
            "mark seat {} cause-{}",
            state_class(c.after.state),
            super::escape::class_fragment(c.cause.as_str())
        );
        self.mark(lane, e, class);
    }

    fn event(&mut self, e: &TraceEvent, ix: &Index) {
        use super::escape::class_fragment as cf;
        match &e.kind {
            TraceKind::Invoke { op_id, client, op, .. } => self.invoke(e, ix, *op_id, client, op),
            TraceKind::Ok { op_id, .. } | TraceKind::Fail { op_id, .. } | TraceKind::Unknown { op_id, .. } => {
                let outcome = match &e.kind {
                    TraceKind::Ok { .. } => "ok",
                    TraceKind::Fail { .. } => "fail",
                    _ => "unknown",
                };
                let lane = ix.clients.get(op_id).map_or(LaneKey::Other, |c| LaneKey::User(c.clone()));
                self.mark(lane, e, format!("mark done out-{outcome}"));
            }
            TraceKind::SeatChange(c) => self.seat(e, c),
            TraceKind::OrderChange(o) => {
                self.mark(LaneKey::User(o.holder_id.clone()), e, format!("mark order ord-{}", cf(o.to.as_str())));
            }
            TraceKind::CompensationChange(c) => {
                let lane = ix.order_lane(&c.order_id, LaneKey::Provider);
                self.mark(lane, e, format!("mark refund comp-{}", cf(&name_of(&c.to))));
            }
            TraceKind::Payment(p) => {
                let (id, word) = payment_mark(p);
                self.mark(ix.payment_lane(id), e, format!("mark pay pay-{word}"));
            }
            TraceKind::Fault { kind, detail } => self.fault(e, *kind, detail),
            TraceKind::Phase { phase, .. } => self.phase(e, phase),
            TraceKind::SeatMapCached { version_sum, .. } => {
                let class = if version_sum.is_some() { "mark cached" } else { "mark cached poisoned" };
                self.mark(LaneKey::Cache, e, class.into());
            }
            TraceKind::Room(r) => {
                let (lane, word) = room_mark(r);
                self.mark(lane, e, format!("mark room room-{word}"));
            }
            TraceKind::World(f) => {
                let lane = match f {
                    invariants::trace::WorldFact::WebhookRefused { payment_op_id, .. } => {
                        ix.payment_lane(payment_op_id)
                    }
                    invariants::trace::WorldFact::Misuse { op_id } => {
                        ix.clients.get(op_id).map_or(LaneKey::Run, |c| LaneKey::User(c.clone()))
                    }
                    _ => LaneKey::Run,
                };
                self.mark(lane, e, "mark world".into());
            }
            TraceKind::OperatorList { .. } => self.mark(LaneKey::Run, e, "mark operators".into()),
            TraceKind::ServiceCounters(_) => self.mark(LaneKey::Run, e, "mark counters".into()),
            TraceKind::Store { op_id, call, .. } => {
                let lane =
                    op_id.and_then(|op| ix.clients.get(&op)).map_or(LaneKey::Store, |c| LaneKey::User(c.clone()));
                let outcome = if call.refusal().is_some() { "refused" } else { "ok" };
                self.mark(lane, e, format!("mark store store-{outcome}"));
            }
        }
    }

    /// A client operation: a bar on its user's lane until its answer.
    fn invoke(&mut self, e: &TraceEvent, ix: &Index, op_id: OpId, client: &str, op: &ClientOp) {
        let at_ms = self.at(e);
        let done = ix.completions.get(&op_id).filter(|d| d.at_ms >= at_ms);
        let (to_ms, outcome) = done.map_or((self.end_ms, "open"), |d| (d.at_ms, d.outcome));
        let answer = done.map_or_else(
            || "no answer by the end of the run".to_string(),
            |d| format!("{} after {} ms", d.outcome, d.at_ms.saturating_sub(at_ms)),
        );
        let item = Item {
            layer: Layer::Bar,
            from_ms: at_ms,
            to_ms,
            seq: Some(e.seq),
            class: format!("bar op op-{} out-{outcome}", op_kind(op)),
            title: format!("{}; {answer}", self.line(e)),
        };
        self.push(LaneKey::User(UserId::from(client)), item);
    }

    /// A phase mark: on the run's lane, and an overlay across every lane.
    fn phase(&mut self, e: &TraceEvent, phase: &PhaseMark) {
        self.mark(LaneKey::Run, e, "mark phase".into());
        let title = describe::event_line(e);
        let class = format!("overlay-phase phase-{}", super::escape::class_fragment(&name_of(phase)));
        self.overlays.push(Item { layer: Layer::Mark, from_ms: e.at_ms, to_ms: e.at_ms, seq: None, class, title });
    }

    /// Ends every span still under way at the run's end.
    fn finish(&mut self) {
        let end_ms = self.end_ms;
        for ((lane, band), open) in std::mem::take(&mut self.bands) {
            self.close_band(lane, band, open, end_ms, "to the end of the run");
        }
        for ((event_id, seat_id), open) in std::mem::take(&mut self.states) {
            self.close(LaneKey::Seat { event_id, seat_id }, Layer::State, open, end_ms, "to the end of the run");
        }
    }
}

/// Lays out `trace` (its seqs need not be contiguous), marking the lanes
/// that hold a seq of `witnesses`; at most `max_lanes` lanes besides those
/// with a witness (at least one lane is always kept when there are events).
pub fn layout(trace: &[TraceEvent], witnesses: &BTreeSet<u64>, max_lanes: usize) -> Layout {
    let first_ms = trace.iter().map(|e| e.at_ms).min().unwrap_or(0);
    let last_ms = trace.iter().map(|e| e.at_ms).max().unwrap_or(0);
    let scale = TimeScale::new(first_ms, last_ms);
    let ix = Index::of(trace);
    let mut b = Builder {
        end_ms: scale.end_ms(),
        lanes: BTreeMap::new(),
        overlays: Vec::new(),
        bands: BTreeMap::new(),
        states: BTreeMap::new(),
        after_run: after_run(trace),
    };
    for e in trace {
        b.event(e, &ix);
    }
    b.finish();
    let mut lanes: Vec<Lane> = b
        .lanes
        .into_iter()
        .map(|(key, mut items)| {
            items.sort_by_key(|i| (i.layer, i.from_ms, i.seq));
            let witnesses = items.iter().filter(|i| i.seq.is_some_and(|s| witnesses.contains(&s))).count();
            Lane { key, items, witnesses }
        })
        .collect();
    let budget = max_lanes.max(1).saturating_sub(lanes.iter().filter(|l| l.witnesses > 0).count());
    let (mut kept_plain, mut left_out_lanes, mut left_out_events) = (0usize, 0usize, 0usize);
    lanes.retain(|l| {
        if l.witnesses > 0 {
            return true;
        }
        if kept_plain < budget {
            kept_plain += 1;
            return true;
        }
        left_out_lanes += 1;
        left_out_events += l.items.iter().filter(|i| i.seq.is_some()).count();
        false
    });
    let mut overlays = b.overlays;
    overlays.sort_by(|x, y| (x.from_ms, &x.class).cmp(&(y.from_ms, &y.class)));
    Layout { scale, lanes, overlays, left_out_lanes, left_out_events }
}

#[cfg(test)]
mod tests {
    use super::*;
    use invariants::trace::FaultEvent;

    fn ev(seq: u64, at_ms: i64, kind: TraceKind) -> TraceEvent {
        TraceEvent { seq, at_ms, kind }
    }

    fn fault(kind: FaultEvent, detail: &str) -> TraceKind {
        TraceKind::Fault { kind, detail: detail.into() }
    }

    #[test]
    fn every_event_is_one_item_with_its_seq() {
        let trace = vec![
            ev(0, 10, fault(FaultEvent::CrashAfterCommit, "svc0 crashes after committing at hold")),
            ev(1, 50, fault(FaultEvent::HostRestarted, "svc0 restarted")),
            ev(2, 60, fault(FaultEvent::ClientPaused, "u00001 pauses 10 ms holding x")),
            ev(
                3,
                70,
                TraceKind::Ok {
                    op_id: 99,
                    result: invariants::trace::OpResult::Released { seat_ids: vec![] },
                    status: 200,
                },
            ),
        ];
        let l = layout(&trace, &BTreeSet::from([1]), 10);
        let seqs: BTreeSet<u64> = l.lanes.iter().flat_map(|l| l.items.iter().filter_map(|i| i.seq)).collect();
        assert_eq!(seqs, BTreeSet::from([0, 1, 2, 3]));
        let host = l.lanes.iter().find(|l| l.key == LaneKey::Host("svc0".into())).expect("host lane");
        assert_eq!(host.witnesses, 1);
        let band = host.items.iter().find(|i| i.layer == Layer::Band).expect("a crash band");
        assert_eq!((band.from_ms, band.to_ms), (10, 50));
        assert_eq!(l.overlays.len(), 1, "a crash shows across every lane");
        let user = l.lanes.iter().find(|l| l.key == LaneKey::User("u00001".into())).expect("user lane");
        assert_eq!(user.items[0].to_ms, 70, "a pause never resumed lasts to the end");
        assert!(l.lanes.iter().any(|l| l.key == LaneKey::Other), "an answer to no request");
    }

    #[test]
    fn lanes_past_the_limit_are_left_out_but_never_a_witness() {
        let trace: Vec<TraceEvent> =
            (0..5).map(|i| ev(i, 0, fault(FaultEvent::StaleTokenReplay, &format!("u{i} replays")))).collect();
        let l = layout(&trace, &BTreeSet::from([4]), 2);
        let users: Vec<String> = l.lanes.iter().map(|l| l.key.label()).collect();
        assert_eq!(users, ["user u0", "user u4"]);
        assert_eq!((l.left_out_lanes, l.left_out_events), (3, 3));
    }

    #[test]
    fn the_ledger_read_after_the_run_is_drawn_at_its_end() {
        let charged = TraceKind::Payment(PaymentEvent::Declined { payment_op_id: PaymentOpId::nil() });
        let trace = vec![
            ev(0, 100, fault(FaultEvent::SweeperStalled, "hold sweeper")),
            ev(1, 9_000, TraceKind::Phase { phase: PhaseMark::SettleEnd, store_now_ms: 0 }),
            ev(2, 0, charged),
        ];
        assert_eq!(after_run(&trace), BTreeMap::from([(2, 9_000)]));
        let l = layout(&trace, &BTreeSet::new(), 10);
        let provider = l.lanes.iter().find(|l| l.key == LaneKey::Provider).expect("provider lane");
        assert_eq!(provider.items[0].from_ms, 9_000);
        assert!(provider.items[0].title.starts_with("seq 2 after the run"), "{}", provider.items[0].title);
    }

    #[test]
    fn an_empty_trace_lays_out() {
        let l = layout(&[], &BTreeSet::new(), 0);
        assert!(l.lanes.is_empty());
        assert_eq!(l.scale.span_ms, 1);
    }
}
