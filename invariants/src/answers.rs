//! What clients were answered, by kind: every refusal's problem kind and
//! every success's operation and status. The workload is meant to provoke
//! every kind of answer the API has (see the library's coverage test); the
//! run summary shows how often each came.

use crate::trace::{ClientOp, OpResult, TraceEvent, TraceKind};
use std::collections::BTreeMap;

/// Answers by name: `refused <kind>`, `ok <operation> <status>`, `no answer <operation>`.
pub type AnswerCounts = BTreeMap<String, u64>;

/// The name of the operation `op` (a raw request by its method and route's first segments).
pub fn op_name(op: &ClientOp) -> String {
    match op {
        ClientOp::Hold { .. } => "hold".into(),
        ClientOp::Release { .. } => "release".into(),
        ClientOp::Checkout { .. } => "checkout".into(),
        ClientOp::OrderStatus { .. } => "order-status".into(),
        ClientOp::SeatMap { .. } => "seat-map".into(),
        ClientOp::Request { method, .. } => format!("request-{}", method.to_ascii_lowercase()),
    }
}

/// Counts the answers of `trace`'s client operations.
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
            TraceKind::Unknown { op_id, .. } => format!("no answer {}", ops.get(op_id).map_or("?", String::as_str)),
            _ => continue,
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}
