//! What clients were answered, by kind: every refusal's problem kind and
//! every success's operation and status, and every refusal the store
//! answered the service. The workload provokes every kind of answer the API
//! has: `simulator run` over the whole library fails when a problem kind
//! outside [`UNPROVOKED`] was never answered; the run summary shows how
//! often each came.

use crate::trace::{ClientOp, OpResult, TraceEvent, TraceKind};
use booking::problem_kind::ProblemKind;
use std::collections::BTreeMap;

/// The problem kinds the library's workload does not provoke, each with why.
/// Every other kind must be answered somewhere in the library's default
/// seeds, to a client or by the store to the service
/// ([`never_provoked`]); `simulator run` over the whole library fails otherwise.
pub const UNPROVOKED: &[(ProblemKind, &str)] = &[
    (
        ProblemKind::InvariantBreach,
        "only a bug above the store provokes it (the planted bugs do; a world that answers it fails)",
    ),
    (ProblemKind::Internal, "only a bug in the service provokes it (a server error the framework raised)"),
    (ProblemKind::NotAProblem, "the client's own word for an answer that is not a problem document"),
    (ProblemKind::QueueFull, "a queue of a million waiting users (booking's queue unit tests reach it)"),
    (
        ProblemKind::DeadlineNotPassed,
        "the reconciler releases a payment only once the store's clock, read first, is past its deadline; only a bug asks earlier (the planted reconcile-releases-early does)",
    ),
    (
        ProblemKind::UnknownOutboxEvent,
        "dispatch events are never deleted: only a bug completes or retries one the store never had",
    ),
];

/// The store refusals only a bug in the service provokes: the service's
/// callers check first what the store would refuse so (the reconciler reads
/// the store's clock before it releases a payment; the dispatcher completes
/// only rows the store handed it). The auditor reports every one the store
/// answers, with its [`UNPROVOKED`] reason.
pub const ONLY_A_BUG: &[ProblemKind] = &[ProblemKind::DeadlineNotPassed, ProblemKind::UnknownOutboxEvent];

/// Why `kind` is never provoked by a sound service, if [`UNPROVOKED`] says.
pub fn unprovoked_reason(kind: ProblemKind) -> Option<&'static str> {
    UNPROVOKED.iter().find(|(k, _)| *k == kind).map(|(_, why)| *why)
}

/// Answers by name: `refused <kind>`, `ok <operation> <status>`, `no
/// answer <operation>` (to clients), `store refused <kind>` (the store to the service).
pub type AnswerCounts = BTreeMap<String, u64>;

/// The name of the operation `op` (a raw request by its method and route's first segments).
pub fn op_name(op: &ClientOp) -> String {
    match op {
        ClientOp::Request { method, .. } => format!("request-{}", method.to_ascii_lowercase()),
        typed => typed.name().into(),
    }
}

/// A server error's status and problem kind, from an unknown outcome's
/// reason as the simulated clients record one (`http <status> <kind>`).
pub fn server_error(reason: &str) -> Option<(u16, &str)> {
    let mut words = reason.strip_prefix("http ")?.split_whitespace();
    let status = words.next()?.parse().ok()?;
    Some((status, words.next().unwrap_or("unknown-error")))
}

/// The problem kinds neither a client nor the service was answered in
/// `totals` (answer counts summed over runs), [`UNPROVOKED`] aside.
pub fn never_provoked(totals: &BTreeMap<String, u64>) -> Vec<ProblemKind> {
    ProblemKind::ALL
        .iter()
        .copied()
        .filter(|k| !UNPROVOKED.iter().any(|(u, _)| u == k))
        .filter(|k| {
            let (client, store) = (format!("refused {k}"), format!("store refused {k}"));
            totals.get(&client).copied().unwrap_or(0) + totals.get(&store).copied().unwrap_or(0) == 0
        })
        .collect()
}

/// Counts the answers of `trace`'s client operations and the store's refusals.
pub fn count(trace: &[TraceEvent]) -> AnswerCounts {
    let mut ops: BTreeMap<u64, String> = BTreeMap::new();
    let mut out = AnswerCounts::new();
    for e in trace {
        let key = match &e.kind {
            TraceKind::Invoke { op_id, op, .. } => {
                ops.insert(*op_id, op_name(op));
                continue;
            }
            TraceKind::Fail { error_kind, .. } => format!("refused {error_kind}"),
            TraceKind::Ok { op_id, result, status } => {
                let op = ops.get(op_id).map_or("?", String::as_str);
                let replayed = matches!(result, OpResult::CheckedOut { replayed: true, .. });
                format!("ok {op} {status}{}", if replayed { " replayed" } else { "" })
            }
            TraceKind::Store { call, .. } => match call.refusal() {
                Some(r) => format!("store refused {}", r.kind),
                None => continue,
            },
            TraceKind::Unknown { op_id, reason } => match server_error(reason) {
                Some((_, kind)) => format!("refused {kind}"),
                None => format!("no answer {}", ops.get(op_id).map_or("?", String::as_str)),
            },
            _ => continue,
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_never_answered_is_named_and_the_documented_ones_are_excused() {
        let mut totals: BTreeMap<String, u64> = ProblemKind::ALL.iter().map(|k| (format!("refused {k}"), 1)).collect();
        assert_eq!(never_provoked(&totals), vec![]);
        totals.remove("refused hold-expired");
        assert_eq!(never_provoked(&totals), vec![ProblemKind::HoldExpired]);
        totals.insert("store refused hold-expired".into(), 2);
        assert_eq!(never_provoked(&totals), vec![], "the store's refusal counts");
        totals.remove("refused queue-full");
        assert_eq!(never_provoked(&totals), vec![], "excused");
        assert_eq!(server_error("http 503 backend"), Some((503, "backend")));
        assert_eq!(server_error("timeout"), None);
    }
}
