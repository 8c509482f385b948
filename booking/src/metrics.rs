//! Service metrics: counters and gauges the service and the payment workflow
//! update, rendered in Prometheus text format. Lock-free atomics; labels are
//! fixed enums, so the series count is bounded.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Outcomes of a checkout request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckoutOutcome {
    /// A new order was created.
    Created,
    /// An idempotent retry found the committed order.
    Replayed,
    /// Refused (stale token, expired, not holder, ...).
    Refused,
}

/// Outcomes of a payment as the workflow learns them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaymentOutcome {
    /// Charged and booked.
    Succeeded,
    /// Declined.
    Failed,
    /// Answer lost; reconciling.
    Unknown,
    /// Charged after release: compensating.
    LateSuccess,
    /// Unresolved past its deadline: seats released.
    Released,
}

/// One counter family: its name, its help line, and its samples (labels, value).
type Family<'a> = (&'static str, &'static str, Vec<(&'static str, &'a AtomicU64)>);

/// All counters of one service process.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Holds granted.
    pub holds_acquired: AtomicU64,
    /// Holds refused because a seat was owned by someone else.
    pub holds_refused_contention: AtomicU64,
    /// Seats whose hold expired without checkout (reclaimed by the sweeper or by a takeover), per seat.
    pub holds_expired_unused: AtomicU64,
    /// Sum of expiry lags (reclaim time minus expiry time), ms.
    pub expiry_lag_ms_sum: AtomicU64,
    /// Largest expiry lag seen, ms.
    pub expiry_lag_ms_max: AtomicU64,
    /// Checkouts that created an order.
    pub checkouts_created: AtomicU64,
    /// Checkouts answered from an idempotency key.
    pub checkouts_replayed: AtomicU64,
    /// Checkouts refused.
    pub checkouts_refused: AtomicU64,
    /// Payments by outcome.
    pub payments_succeeded: AtomicU64,
    /// Payments declined.
    pub payments_failed: AtomicU64,
    /// Payments whose answer was lost.
    pub payments_unknown: AtomicU64,
    /// Payments that succeeded after their seats were released.
    pub payments_late_success: AtomicU64,
    /// Unresolved payments released after their deadline.
    pub payments_released: AtomicU64,
    /// Refund results recorded (a dispatcher's attempt or a refund webhook)
    /// that left the compensation succeeded.
    pub refunds_succeeded: AtomicU64,
    /// Refund results recorded that left the compensation to be retried.
    pub refunds_retrying: AtomicU64,
    /// Refund results recorded, and dispatches, that found the compensation
    /// failed for good (operators must act).
    pub refunds_failed: AtomicU64,
    /// Refund attempts that took over an attempt whose lease expired.
    pub refunds_taken_over: AtomicU64,
    /// Payments and outbox rows the workflow left for a later pass because the store failed on them.
    pub workflow_store_errors: AtomicU64,
    /// Orders and compensations needing resolution, as last counted.
    pub unresolved: AtomicI64,
    /// Requests refused by the per-user rate limit.
    pub rate_limited: AtomicU64,
    /// Waiting-room admissions made by this instance's passes.
    pub admissions: AtomicU64,
    /// Waiting-room sessions this instance's passes ended by expiry (abandoned).
    pub sessions_abandoned: AtomicU64,
    /// Holds and checkouts refused by the admission gate.
    pub admission_refused: AtomicU64,
    /// Users waiting, summed over rooms, at this instance's last pass.
    pub queue_waiting: AtomicI64,
    /// Open checkout sessions, summed over rooms, at this instance's last pass.
    pub sessions_active: AtomicI64,
    /// The admission rate of this instance's last pass, summed over rooms, admissions per 1,000 s.
    pub admission_rate_per_ks: AtomicI64,
    /// Answers by (method, route template, status): bounded by the routes'
    /// table and the statuses the service answers.
    responses: std::sync::Mutex<std::collections::BTreeMap<(&'static str, &'static str, u16), u64>>,
}

impl Metrics {
    /// Records one expired, unused hold reclaimed `lag_ms` after its deadline.
    pub fn hold_expired(&self, lag_ms: i64) {
        let lag = u64::try_from(lag_ms.max(0)).unwrap_or(0);
        self.holds_expired_unused.fetch_add(1, Ordering::Relaxed);
        self.expiry_lag_ms_sum.fetch_add(lag, Ordering::Relaxed);
        self.expiry_lag_ms_max.fetch_max(lag, Ordering::Relaxed);
    }

    /// Records a checkout outcome.
    pub fn checkout(&self, outcome: CheckoutOutcome) {
        let c = match outcome {
            CheckoutOutcome::Created => &self.checkouts_created,
            CheckoutOutcome::Replayed => &self.checkouts_replayed,
            CheckoutOutcome::Refused => &self.checkouts_refused,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a payment outcome.
    pub fn payment(&self, outcome: PaymentOutcome) {
        let c = match outcome {
            PaymentOutcome::Succeeded => &self.payments_succeeded,
            PaymentOutcome::Failed => &self.payments_failed,
            PaymentOutcome::Unknown => &self.payments_unknown,
            PaymentOutcome::LateSuccess => &self.payments_late_success,
            PaymentOutcome::Released => &self.payments_released,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a refund result a provider's webhook reported, by the
    /// compensation's status after it was recorded.
    pub fn refund_recorded(&self, status: crate::model::CompensationStatus) {
        use crate::model::CompensationStatus as S;
        let c = match status {
            S::Succeeded => &self.refunds_succeeded,
            S::Failed => &self.refunds_failed,
            S::Requested | S::InFlight => &self.refunds_retrying,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Records one room's admission pass (this instance led it).
    pub fn admission_pass(&self, r: &crate::admission::waiting_room::TickReport) {
        self.admissions.fetch_add(r.admitted.len() as u64, Ordering::Relaxed);
        self.sessions_abandoned.fetch_add(u64::from(r.expired), Ordering::Relaxed);
        self.queue_waiting.store(i64::try_from(r.waiting).unwrap_or(i64::MAX), Ordering::Relaxed);
        self.sessions_active.store(i64::from(r.active), Ordering::Relaxed);
        self.admission_rate_per_ks.store((r.decision.rate_per_s * 1000.0).round() as i64, Ordering::Relaxed);
    }

    /// Every counter: its name, its help line, and its samples (labels, value).
    fn counters(&self) -> impl Iterator<Item = Family<'_>> {
        self.sale_counters().into_iter().chain(self.service_counters())
    }

    /// The counters of holds, checkouts, payments and refunds.
    fn sale_counters(&self) -> [Family<'_>; 9] {
        [
            ("holdfast_holds_acquired_total", "Holds granted.", vec![("", &self.holds_acquired)]),
            (
                "holdfast_holds_refused_contention_total",
                "Holds refused because a seat was owned by someone else.",
                vec![("", &self.holds_refused_contention)],
            ),
            (
                "holdfast_seats_expired_unused_total",
                "Seats whose hold expired without checkout (abandoned holds, counted per seat: a 3-seat hold counts 3).",
                vec![("", &self.holds_expired_unused)],
            ),
            (
                "holdfast_hold_expiry_lag_ms_sum",
                "Sum over reclaimed holds of (reclaim time - expiry time), ms.",
                vec![("", &self.expiry_lag_ms_sum)],
            ),
            (
                "holdfast_checkouts_total",
                "Checkout requests by outcome.",
                vec![
                    ("{outcome=\"created\"}", &self.checkouts_created),
                    ("{outcome=\"replayed\"}", &self.checkouts_replayed),
                    ("{outcome=\"refused\"}", &self.checkouts_refused),
                ],
            ),
            (
                "holdfast_payments_total",
                "Payment outcomes learnt by the workflow.",
                vec![
                    ("{outcome=\"succeeded\"}", &self.payments_succeeded),
                    ("{outcome=\"failed\"}", &self.payments_failed),
                    ("{outcome=\"unknown\"}", &self.payments_unknown),
                    ("{outcome=\"late_success\"}", &self.payments_late_success),
                    ("{outcome=\"released\"}", &self.payments_released),
                ],
            ),
            (
                "holdfast_refunds_total",
                "Refund results recorded (dispatcher attempts and refund webhooks) by the compensation's status after each (failed: failed for good; operators must act).",
                vec![
                    ("{outcome=\"succeeded\"}", &self.refunds_succeeded),
                    ("{outcome=\"retrying\"}", &self.refunds_retrying),
                    ("{outcome=\"failed\"}", &self.refunds_failed),
                ],
            ),
            (
                "holdfast_refunds_taken_over_total",
                "Refund attempts that took over an attempt whose lease expired (its dispatcher died).",
                vec![("", &self.refunds_taken_over)],
            ),
            (
                "holdfast_workflow_store_errors_total",
                "Payments and outbox rows the workflow left for a later pass because the store failed on them.",
                vec![("", &self.workflow_store_errors)],
            ),
        ]
    }

    /// The counters of the rate limiter and the waiting room.
    fn service_counters(&self) -> [Family<'_>; 4] {
        [
            (
                "holdfast_rate_limited_total",
                "Requests refused by the per-user hold rate limit.",
                vec![("", &self.rate_limited)],
            ),
            ("holdfast_admissions_total", "Waiting-room admissions.", vec![("", &self.admissions)]),
            (
                "holdfast_sessions_abandoned_total",
                "Waiting-room sessions that expired unused.",
                vec![("", &self.sessions_abandoned)],
            ),
            (
                "holdfast_admission_refused_total",
                "Holds and checkouts refused by the admission gate.",
                vec![("", &self.admission_refused)],
            ),
        ]
    }

    /// Every gauge: its name, its help line, and its value.
    fn gauges(&self) -> [(&'static str, &'static str, i64); 5] {
        let max_lag = i64::try_from(self.expiry_lag_ms_max.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
        [
            ("holdfast_queue_waiting", "Users waiting in waiting rooms.", self.queue_waiting.load(Ordering::Relaxed)),
            (
                "holdfast_sessions_active",
                "Open checkout sessions of waiting rooms.",
                self.sessions_active.load(Ordering::Relaxed),
            ),
            (
                "holdfast_admission_rate_per_ks",
                "Admission rate, per 1000 s.",
                self.admission_rate_per_ks.load(Ordering::Relaxed),
            ),
            ("holdfast_hold_expiry_lag_ms_max", "Largest expiry lag seen, ms.", max_lag),
            (
                "holdfast_unresolved",
                "Orders and compensations needing resolution.",
                self.unresolved.load(Ordering::Relaxed),
            ),
        ]
    }

    /// Counts one answer of `route` (a template of the routes' table, or
    /// `unmatched`) to `method` (`""` when unmatched) with `status`.
    pub fn response(&self, method: &'static str, route: &'static str, status: u16) {
        *self.responses.lock().expect("responses lock").entry((method, route, status)).or_insert(0) += 1;
    }

    fn render_responses(&self, out: &mut String) {
        let name = "holdfast_http_responses_total";
        let _ = writeln!(out, "# HELP {name} Answers by method, route and status.\n# TYPE {name} counter");
        for ((method, route, status), n) in self.responses.lock().expect("responses lock").iter() {
            let _ = writeln!(out, "{name}{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}");
        }
    }

    /// Renders every metric in Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        for (name, help, samples) in self.counters() {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (labels, v) in samples {
                let _ = writeln!(out, "{name}{labels} {}", v.load(Ordering::Relaxed));
            }
        }
        for (name, help, v) in self.gauges() {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        }
        self.render_responses(&mut out);
        out
    }
}
