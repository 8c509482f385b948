//! `legitimate-accepted` (goodput): traffic the world knows to be
//! well-formed and authorized is never refused as if it were not.
//!
//! The world knows what it sent, so it does not ask the service:
//! - a webhook its provider signed with the deployed secret and its own
//!   clock ([`WorldFact::WebhookRefused`] records any refusal) is accepted,
//!   unless the serving host's clock is off by more than the signature's
//!   tolerance;
//! - a workload user's request (not a prober's, not one it sent as a
//!   deliberate [`WorldFact::Misuse`]) is built from the API's own answers
//!   with the user's own credential: it is never refused with a kind that
//!   says the request itself is wrong ([`MALFORMED`]). It may still meet
//!   every refusal its situation gives (a taken seat, the cap, a stale
//!   token, the gate, the rate limit, an outage).
//!
//! A service that refuses tens of thousands of good holds, or every genuine
//! webhook, fails the seed here even when every record it left is sound.

use crate::trace::{ClientOp, OpId, TraceKind, WorldFact};
use crate::{Config, Invariant, Subject, TraceEvent, Violation};
use booking::model::{Snapshot, UserId};
use booking::payment::webhook::DEFAULT_TOLERANCE_MS;
use booking::problem_kind::ProblemKind;
use std::collections::{BTreeMap, BTreeSet};

/// Refusals that say the request itself is wrong: malformed, unauthorized,
/// naming what does not exist, or a server's fault dressed as a refusal.
pub const MALFORMED: &[ProblemKind] = &[
    ProblemKind::InvalidInput,
    ProblemKind::BadRequest,
    ProblemKind::Unauthorized,
    ProblemKind::Forbidden,
    ProblemKind::NotFound,
    ProblemKind::UnknownEvent,
    ProblemKind::UnknownSeat,
    ProblemKind::UnknownOrder,
    ProblemKind::PayloadTooLarge,
    ProblemKind::UnsupportedMediaType,
    ProblemKind::MethodNotAllowed,
    ProblemKind::IdempotencyKeyRequired,
    ProblemKind::Internal,
    ProblemKind::NotAProblem,
];

/// Most violations reported per run (the first ones; the rest are alike).
const MAX_REPORTED: usize = 20;

/// Checks `legitimate-accepted`. Subjects: the request's user, or the
/// payment operation a refused webhook was about.
pub fn check_legitimate(_snap: &Snapshot, trace: &[TraceEvent], cfg: &Config) -> Vec<Violation> {
    let mut probers: BTreeSet<&str> = BTreeSet::new();
    let mut misuse: BTreeSet<OpId> = BTreeSet::new();
    let mut sent: BTreeMap<OpId, (&str, &ClientOp, u64)> = BTreeMap::new();
    let mut out = Vec::new();
    for e in trace {
        match &e.kind {
            TraceKind::World(WorldFact::Prober { user }) => {
                probers.insert(user);
            }
            TraceKind::World(WorldFact::Misuse { op_id }) => {
                misuse.insert(*op_id);
            }
            TraceKind::World(WorldFact::WebhookRefused { payment_op_id, kind, host, status })
                if !skewed_past_tolerance(cfg, *host) =>
            {
                let detail = format!(
                    "svc{host} refused the provider's genuine {kind} webhook with {status}: signed with the deployed \
                     secret, sent as it was made"
                );
                let subject = Subject::PaymentOp { payment_op_id: *payment_op_id };
                out.push(Violation::new(Invariant::LegitimateAccepted, subject, detail, vec![e.seq]));
            }
            TraceKind::Invoke { op_id, client, op, .. } if !matches!(op, ClientOp::Request { .. }) => {
                sent.insert(*op_id, (client, op, e.seq));
            }
            TraceKind::Ok { op_id, .. } | TraceKind::Unknown { op_id, .. } => {
                sent.remove(op_id);
            }
            TraceKind::Fail { op_id, error_kind, status, .. } => {
                let Some((client, op, invoked)) = sent.remove(op_id) else { continue };
                if !MALFORMED.contains(error_kind) || probers.contains(client) || misuse.contains(op_id) {
                    continue;
                }
                let detail = format!(
                    "{client}'s well-formed {} was refused {error_kind} ({status}): the world built it from the \
                     API's answers with the user's own credential",
                    op.name()
                );
                let subject = Subject::Request { op_id: *op_id, client: UserId::from(client) };
                out.push(Violation::new(Invariant::LegitimateAccepted, subject, detail, vec![invoked, e.seq]));
            }
            _ => {}
        }
        if out.len() >= MAX_REPORTED {
            break;
        }
    }
    out
}

/// Whether service host `host`'s clock is off by more than a webhook
/// signature's tolerance (the world skewed it; a refusal is then its due).
fn skewed_past_tolerance(cfg: &Config, host: u32) -> bool {
    cfg.audit.as_ref().is_some_and(|a| webhook_refusal_due(&a.host_skew_ms, host))
}

/// Whether a genuine webhook's refusal by `host` is due: its clock is off
/// (`host_skew_ms`, per host) by more than the signature's tolerance.
pub(crate) fn webhook_refusal_due(host_skew_ms: &[i64], host: u32) -> bool {
    let skew_ms = host_skew_ms.get(host as usize).copied().unwrap_or(0);
    skew_ms.unsigned_abs() > DEFAULT_TOLERANCE_MS.unsigned_abs()
}
