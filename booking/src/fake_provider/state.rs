//! [`FakeProvider`]: the fake provider's ledger and every decision it makes.
//! All state is in BTreeMaps behind one mutex; every random draw comes from a
//! ChaCha8 RNG seeded at construction, so a seed replays the same faults for
//! the same request order. Delayed work (late successes, webhook deliveries)
//! runs on `tokio::spawn` + `tokio::time::sleep`, bounded in number.

use super::faults::ProviderFaults;
use super::webhook_sender::{DeliveryError, WebhookTransport};
use crate::clock::Clock;
use crate::payment::webhook::{WebhookEvent, WebhookKind, sign};
use crate::payment::wire::{CreatePaymentBody, CreateRefundBody, PaymentRecord, RefundRecord};
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// Upper bound on payments (and on refunds) the fake keeps; beyond it new ones are refused (503).
pub const MAX_LEDGER_ENTRIES: usize = 1_000_000;
/// Upper bound on delayed tasks (webhook deliveries, late successes) in flight;
/// webhooks beyond it are dropped and counted.
pub const MAX_PENDING_TASKS: usize = 10_000;
/// Delivery attempts per webhook copy.
pub const WEBHOOK_ATTEMPTS: u32 = 5;
/// First delay between webhook delivery attempts; doubles per attempt.
pub const WEBHOOK_RETRY_BASE_MS: u64 = 200;
/// Amount bound, in cents.
pub const MAX_AMOUNT_CENTS: i64 = 10_000_000_000;

/// Why the fake refused or failed a request; each maps to an HTTP status and problem type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FakeError {
    /// Malformed request (400).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// No payment with this key was ever processed (404).
    #[error("no payment with idempotency key {0}")]
    NotFound(Uuid),
    /// The idempotency key was used with other parameters (409).
    #[error("idempotency key {0} reused with different parameters")]
    KeyReused(Uuid),
    /// A refund of a payment that is not charged, or beyond its amount (409).
    #[error("cannot refund: {0}")]
    NotRefundable(String),
    /// The refund attempt failed; retry with the same key (402).
    #[error("refund failed: {0}")]
    RefundFailed(String),
    /// Injected: failed before processing (503).
    #[error("injected error before processing")]
    Injected,
    /// Injected: processed, response lost (500).
    #[error("injected: processed but the response was lost")]
    LostResponse,
    /// The ledger is full (503).
    #[error("ledger full")]
    Full,
}

impl FakeError {
    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            FakeError::InvalidRequest(_) => 400,
            FakeError::NotFound(_) => 404,
            FakeError::KeyReused(_) | FakeError::NotRefundable(_) => 409,
            FakeError::RefundFailed(_) => 402,
            FakeError::Injected | FakeError::Full => 503,
            FakeError::LostResponse => 500,
        }
    }
    /// The stable problem type name.
    pub fn kind(&self) -> &'static str {
        match self {
            FakeError::InvalidRequest(_) => "invalid-request",
            FakeError::NotFound(_) => "payment-not-found",
            FakeError::KeyReused(_) => "idempotency-key-reused",
            FakeError::NotRefundable(_) => "not-refundable",
            FakeError::RefundFailed(_) => "refund-failed",
            FakeError::Injected => "injected-error",
            FakeError::LostResponse => "response-lost",
            FakeError::Full => "ledger-full",
        }
    }
}

/// Counters of what the fake did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerStats {
    /// `/v1` requests handled.
    pub requests: u64,
    /// Injected 503s.
    pub injected_errors: u64,
    /// Responses lost after processing.
    pub lost_responses: u64,
    /// Payments declined.
    pub declines: u64,
    /// Payments that answered `processing` first.
    pub late_successes: u64,
    /// Refund attempts failed (402).
    pub refund_failures: u64,
    /// Webhook copies delivered (2xx).
    pub webhooks_delivered: u64,
    /// Webhook copies that exhausted their attempts.
    pub webhooks_failed: u64,
    /// Delivery attempts the endpoint refused with a 4xx (a sound endpoint
    /// refuses none of the provider's own, correctly signed, webhooks).
    #[serde(default)]
    pub webhooks_refused: u64,
    /// Webhook copies dropped (fault or bound).
    pub webhooks_dropped: u64,
    /// Extra copies sent by the duplicate fault.
    pub webhooks_duplicated: u64,
    /// Webhook copies held back `webhook_hold_ms` by the hold fault.
    #[serde(default)]
    pub webhooks_held: u64,
}

/// The fake's books: what was charged and refunded (the provider-side truth
/// invariant checkers compare the store against).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Every payment (current state), by idempotency key.
    pub payments: Vec<PaymentRecord>,
    /// Every succeeded refund, by idempotency key.
    pub refunds: Vec<RefundRecord>,
    /// Counters.
    pub stats: LedgerStats,
}

#[derive(Debug, Clone)]
struct StoredPayment {
    /// `None` for a cancel tombstone (matches any parameters).
    params: Option<CreatePaymentBody>,
    first_response: PaymentRecord,
    current: PaymentRecord,
}

#[derive(Debug)]
struct Inner {
    faults: ProviderFaults,
    rng: ChaCha8Rng,
    payments: BTreeMap<Uuid, StoredPayment>,
    refunds: BTreeMap<Uuid, (CreateRefundBody, RefundRecord)>,
    refund_attempts: BTreeMap<Uuid, u32>,
    next_payment_no: u64,
    next_refund_no: u64,
    next_event_seq: u64,
    stats: LedgerStats,
}

impl Inner {
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.rng.random_bool(p.min(1.0))
    }
}

/// A webhook copy to send after `delay_ms`.
struct Delivery {
    delay_ms: u64,
    event: WebhookEvent,
}

/// The fake provider. Cheap to clone (clones share state).
#[derive(Clone)]
pub struct FakeProvider {
    inner: Arc<Mutex<Inner>>,
    clock: Arc<dyn Clock>,
    webhooks: Option<Arc<dyn WebhookTransport>>,
    secret: Arc<[u8]>,
    pending_tasks: Arc<AtomicUsize>,
}

impl std::fmt::Debug for FakeProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeProvider").finish_non_exhaustive()
    }
}

impl FakeProvider {
    /// A fake with `faults`, whose draws come from `seed`, whose timestamps come
    /// from `clock`, and which signs webhooks with `webhook_secret` and sends them
    /// through `webhooks` (none: webhooks are not sent).
    /// Errors when `faults` is invalid.
    pub fn new(
        seed: u64,
        faults: ProviderFaults,
        clock: Arc<dyn Clock>,
        webhooks: Option<Arc<dyn WebhookTransport>>,
        webhook_secret: &[u8],
    ) -> Result<Self, String> {
        faults.validate()?;
        Ok(Self {
            inner: Arc::new(Mutex::new(Inner {
                faults,
                rng: ChaCha8Rng::seed_from_u64(seed),
                payments: BTreeMap::new(),
                refunds: BTreeMap::new(),
                refund_attempts: BTreeMap::new(),
                next_payment_no: 1,
                next_refund_no: 1,
                next_event_seq: 1,
                stats: LedgerStats::default(),
            })),
            clock,
            webhooks,
            secret: Arc::from(webhook_secret),
            pending_tasks: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().expect("fake provider poisoned")
    }

    /// The current fault knobs.
    pub fn faults(&self) -> ProviderFaults {
        self.lock().faults.clone()
    }

    /// Replaces the fault knobs. Errors (and changes nothing) when invalid.
    pub fn set_faults(&self, faults: ProviderFaults) -> Result<(), String> {
        faults.validate()?;
        self.lock().faults = faults;
        Ok(())
    }

    /// The books, sorted by key.
    pub fn ledger(&self) -> Ledger {
        let g = self.lock();
        Ledger {
            payments: g.payments.values().map(|p| p.current.clone()).collect(),
            refunds: g.refunds.values().map(|(_, r)| r.clone()).collect(),
            stats: g.stats,
        }
    }

    /// Number of delayed tasks (webhook copies, late successes) not finished yet.
    pub fn pending_tasks(&self) -> usize {
        self.pending_tasks.load(Ordering::SeqCst)
    }

    /// Sleeps the latency knob (a uniform draw when it is a range), then
    /// draws the injected-error fault.
    async fn enter(&self) -> Result<(), FakeError> {
        let latency_ms = {
            let mut g = self.lock();
            let (least, most) = (g.faults.latency_ms, g.faults.latency_max_ms);
            if most > least { g.rng.random_range(least..=most) } else { least }
        };
        if latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(latency_ms)).await;
        }
        let mut g = self.lock();
        g.stats.requests += 1;
        let p = g.faults.error_rate;
        if g.chance(p) {
            g.stats.injected_errors += 1;
            return Err(FakeError::Injected);
        }
        Ok(())
    }

    /// `POST /v1/payments`: creates or replays the payment keyed by `key`.
    pub async fn create_payment(&self, key: Uuid, body: CreatePaymentBody) -> Result<PaymentRecord, FakeError> {
        if body.amount_cents < 0 || body.amount_cents > MAX_AMOUNT_CENTS {
            return Err(FakeError::InvalidRequest(format!("amount_cents must be 0..={MAX_AMOUNT_CENTS}")));
        }
        self.enter().await?;
        let mut deliveries = Vec::new();
        let mut late: Option<u64> = None;
        let result = {
            let mut g = self.lock();
            let answer = if let Some(p) = g.payments.get(&key) {
                match &p.params {
                    None => p.current.clone(), // canceled before it was ever created
                    Some(params) if *params != body => return Err(FakeError::KeyReused(key)),
                    Some(_) => p.first_response.clone(),
                }
            } else {
                self.new_payment(&mut g, key, body, &mut late, &mut deliveries)?
            };
            let lost = g.faults.lost_response_rate;
            if g.chance(lost) {
                g.stats.lost_responses += 1;
                Err(FakeError::LostResponse)
            } else {
                Ok(answer)
            }
        };
        self.spawn_deliveries(deliveries);
        if let Some(delay_ms) = late {
            self.spawn_late_success(key, delay_ms);
        }
        result
    }

    /// A payment never seen under `key`: its outcome drawn (declined, late
    /// success, or succeeded), recorded, and its webhook planned.
    fn new_payment(
        &self,
        g: &mut Inner,
        key: Uuid,
        body: CreatePaymentBody,
        late: &mut Option<u64>,
        deliveries: &mut Vec<Delivery>,
    ) -> Result<PaymentRecord, FakeError> {
        if g.payments.len() >= MAX_LEDGER_ENTRIES {
            return Err(FakeError::Full);
        }
        let id = format!("pay_{:08}", g.next_payment_no);
        g.next_payment_no += 1;
        let (decline, late_p) = (g.faults.decline_rate, g.faults.late_success_rate);
        let (status, failure_reason) = if g.chance(decline) {
            g.stats.declines += 1;
            ("failed", Some("card_declined".to_string()))
        } else if g.chance(late_p) {
            g.stats.late_successes += 1;
            *late = Some(g.faults.late_success_delay_ms);
            ("processing", None)
        } else {
            ("succeeded", None)
        };
        let rec = PaymentRecord {
            id,
            idempotency_key: key,
            order_id: body.order_id,
            amount_cents: body.amount_cents,
            status: status.into(),
            failure_reason,
        };
        g.payments.insert(key, StoredPayment { params: Some(body), first_response: rec.clone(), current: rec.clone() });
        match rec.status.as_str() {
            "succeeded" => self.plan_webhook(g, WebhookKind::PaymentSucceeded, &rec, None, None, deliveries),
            "failed" => {
                self.plan_webhook(g, WebhookKind::PaymentFailed, &rec, None, rec.failure_reason.clone(), deliveries)
            }
            _ => {}
        }
        Ok(rec)
    }

    /// `GET /v1/payments/{key}`: the payment's current record.
    pub async fn fetch_payment(&self, key: Uuid) -> Result<PaymentRecord, FakeError> {
        self.enter().await?;
        self.lock().payments.get(&key).map(|p| p.current.clone()).ok_or(FakeError::NotFound(key))
    }

    /// `POST /v1/payments/{key}/cancel`: makes sure the payment can never be
    /// charged; returns its final record (`failed`/`canceled`, or `succeeded`
    /// when it was charged before).
    pub async fn cancel_payment(&self, key: Uuid) -> Result<PaymentRecord, FakeError> {
        self.enter().await?;
        let mut deliveries = Vec::new();
        let rec = {
            let mut g = self.lock();
            if !g.payments.contains_key(&key) {
                if g.payments.len() >= MAX_LEDGER_ENTRIES {
                    return Err(FakeError::Full);
                }
                let id = format!("pay_{:08}", g.next_payment_no);
                g.next_payment_no += 1;
                let rec = PaymentRecord {
                    id,
                    idempotency_key: key,
                    order_id: crate::model::OrderId::nil(),
                    amount_cents: 0,
                    status: "failed".into(),
                    failure_reason: Some("canceled".into()),
                };
                g.payments
                    .insert(key, StoredPayment { params: None, first_response: rec.clone(), current: rec.clone() });
                rec
            } else {
                let p = g.payments.get_mut(&key).expect("present");
                if p.current.status == "processing" {
                    p.current.status = "failed".into();
                    p.current.failure_reason = Some("canceled".into());
                    let rec = p.current.clone();
                    self.plan_webhook(
                        &mut g,
                        WebhookKind::PaymentFailed,
                        &rec,
                        None,
                        rec.failure_reason.clone(),
                        &mut deliveries,
                    );
                    rec
                } else {
                    p.current.clone()
                }
            }
        };
        self.spawn_deliveries(deliveries);
        Ok(rec)
    }

    /// `POST /v1/refunds`: refunds (or replays the refund keyed by `key`).
    pub async fn refund(&self, key: Uuid, body: CreateRefundBody) -> Result<RefundRecord, FakeError> {
        if body.amount_cents <= 0 || body.amount_cents > MAX_AMOUNT_CENTS {
            return Err(FakeError::InvalidRequest(format!("amount_cents must be 1..={MAX_AMOUNT_CENTS}")));
        }
        self.enter().await?;
        let mut deliveries = Vec::new();
        let result = {
            let mut g = self.lock();
            let answer = if let Some((params, rec)) = g.refunds.get(&key) {
                if *params != body {
                    return Err(FakeError::KeyReused(key));
                }
                Ok(rec.clone())
            } else {
                let payment = Self::refundable(&g, &body)?;
                self.attempt_refund(&mut g, key, body, &payment, &mut deliveries)
            };
            // A processed refund whose answer is lost: the client must retry with the key.
            let lost = g.faults.lost_response_rate;
            if answer.is_ok() && g.chance(lost) {
                g.stats.lost_responses += 1;
                Err(FakeError::LostResponse)
            } else {
                answer
            }
        };
        self.spawn_deliveries(deliveries);
        result
    }

    /// The payment `body` refunds, if a refund of it may be attempted: it
    /// succeeded, and the refunds stay within its charge (each alone, when
    /// the provider is lenient); the ledger has room.
    fn refundable(g: &Inner, body: &CreateRefundBody) -> Result<PaymentRecord, FakeError> {
        let payment = g.payments.get(&body.payment_key).ok_or(FakeError::NotFound(body.payment_key))?.current.clone();
        if payment.status != "succeeded" {
            return Err(FakeError::NotRefundable(format!("payment is {}", payment.status)));
        }
        let refunded: i64 =
            g.refunds.values().filter(|(p, _)| p.payment_key == body.payment_key).map(|(p, _)| p.amount_cents).sum();
        // Strict: the refunds together stay within the charge. Lenient
        // (`ProviderFaults::lenient_refunds`): only each refund does, so a new key
        // refunds again however much went back before.
        let already = if g.faults.lenient_refunds { 0 } else { refunded };
        if already + body.amount_cents > payment.amount_cents {
            return Err(FakeError::NotRefundable(format!(
                "{} + {} exceeds the payment's {}",
                refunded, body.amount_cents, payment.amount_cents
            )));
        }
        if g.refunds.len() >= MAX_LEDGER_ENTRIES {
            return Err(FakeError::Full);
        }
        Ok(payment)
    }

    /// One attempt at a new refund under `key`: refused as the fault knobs
    /// say (the first N attempts, or at random), else recorded; its webhook
    /// planned either way.
    fn attempt_refund(
        &self,
        g: &mut Inner,
        key: Uuid,
        body: CreateRefundBody,
        payment: &PaymentRecord,
        deliveries: &mut Vec<Delivery>,
    ) -> Result<RefundRecord, FakeError> {
        let attempt = {
            let a = g.refund_attempts.entry(key).or_insert(0);
            *a += 1;
            *a
        };
        let fail_p = g.faults.refund_failure_rate;
        let reason = if attempt <= g.faults.refund_fail_first_n {
            Some(format!("refund attempt {attempt} refused (fail-first-n)"))
        } else if g.chance(fail_p) {
            Some(format!("refund attempt {attempt} refused (random)"))
        } else {
            None
        };
        if let Some(reason) = reason {
            g.stats.refund_failures += 1;
            self.plan_webhook(g, WebhookKind::RefundFailed, payment, Some(key), Some(reason.clone()), deliveries);
            return Err(FakeError::RefundFailed(reason));
        }
        let rec = RefundRecord {
            id: format!("re_{:08}", g.next_refund_no),
            idempotency_key: key,
            payment_key: body.payment_key,
            amount_cents: body.amount_cents,
            status: "succeeded".into(),
        };
        g.next_refund_no += 1;
        g.refunds.insert(key, (body, rec.clone()));
        self.plan_webhook(g, WebhookKind::RefundSucceeded, payment, Some(key), None, deliveries);
        Ok(rec)
    }

    /// Plans the copies of one webhook (drop, delay, duplicate, reorder), drawing under the lock.
    fn plan_webhook(
        &self,
        g: &mut Inner,
        kind: WebhookKind,
        payment: &PaymentRecord,
        refund_key: Option<Uuid>,
        failure_reason: Option<String>,
        out: &mut Vec<Delivery>,
    ) {
        if self.webhooks.is_none() {
            return;
        }
        let sequence = g.next_event_seq;
        g.next_event_seq += 1;
        let event = WebhookEvent {
            provider_event_id: format!("evt_{sequence:08}"),
            sequence,
            kind,
            payment_key: payment.idempotency_key,
            provider_payment_id: payment.id.clone(),
            refund_key,
            failure_reason,
            created_at_ms: self.clock.now_ms(),
        };
        let f = g.faults.clone();
        if g.chance(f.webhook_drop_rate) {
            g.stats.webhooks_dropped += 1;
            return;
        }
        let copies = if g.chance(f.webhook_duplicate_rate) {
            g.stats.webhooks_duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut delay_ms = if f.webhook_delay_ms > 0 { g.rng.random_range(0..=f.webhook_delay_ms) } else { 0 };
            if g.chance(f.webhook_reorder_rate) {
                delay_ms += 2 * f.webhook_delay_ms + 1;
            }
            if g.chance(f.webhook_hold_rate) {
                g.stats.webhooks_held += 1;
                delay_ms += f.webhook_hold_ms;
            }
            out.push(Delivery { delay_ms, event: event.clone() });
        }
    }

    /// Reserves a delayed-task slot; false when at [`MAX_PENDING_TASKS`].
    fn reserve_task(&self) -> bool {
        self.pending_tasks
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < MAX_PENDING_TASKS).then_some(n + 1))
            .is_ok()
    }

    fn spawn_deliveries(&self, deliveries: Vec<Delivery>) {
        let Some(transport) = self.webhooks.clone() else { return };
        for d in deliveries {
            if !self.reserve_task() {
                self.lock().stats.webhooks_dropped += 1;
                continue;
            }
            let me = self.clone();
            let transport = transport.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(d.delay_ms)).await;
                let body = Bytes::from(serde_json::to_vec(&d.event).expect("serializable"));
                let mut delivered = false;
                for attempt in 0..WEBHOOK_ATTEMPTS {
                    if attempt > 0 {
                        tokio::time::sleep(Duration::from_millis(WEBHOOK_RETRY_BASE_MS << (attempt - 1))).await;
                    }
                    let ts = me.clock.now_ms();
                    let sig = sign(&me.secret, ts, &body);
                    match transport.deliver(ts, &sig, body.clone()).await {
                        Ok(()) => {
                            delivered = true;
                            break;
                        }
                        Err(e) => {
                            if matches!(e, DeliveryError::Refused(_)) {
                                me.lock().stats.webhooks_refused += 1;
                            }
                            tracing::debug!(event = %d.event.provider_event_id, error = %e, "webhook delivery failed")
                        }
                    }
                }
                {
                    let mut g = me.lock();
                    if delivered {
                        g.stats.webhooks_delivered += 1;
                    } else {
                        g.stats.webhooks_failed += 1;
                    }
                }
                me.pending_tasks.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }

    fn spawn_late_success(&self, key: Uuid, delay_ms: u64) {
        // Not bounded by MAX_PENDING_TASKS: dropping it would leave the payment
        // processing forever. Bounded by MAX_LEDGER_ENTRIES instead.
        self.pending_tasks.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            let mut deliveries = Vec::new();
            {
                let mut g = me.lock();
                let p = g.payments.get_mut(&key).expect("late payment exists");
                if p.current.status == "processing" {
                    p.current.status = "succeeded".into();
                    let rec = p.current.clone();
                    me.plan_webhook(&mut g, WebhookKind::PaymentSucceeded, &rec, None, None, &mut deliveries);
                }
            }
            me.spawn_deliveries(deliveries);
            me.pending_tasks.fetch_sub(1, Ordering::SeqCst);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::model::OrderId;

    async fn charged(faults: ProviderFaults) -> (FakeProvider, Uuid) {
        let fake = FakeProvider::new(7, faults, ManualClock::new(1_000), None, b"secret").expect("valid faults");
        let key = Uuid::from_u128(1);
        let rec = fake
            .create_payment(key, CreatePaymentBody { amount_cents: 1_000, order_id: OrderId::from_u128(2) })
            .await
            .expect("charged");
        assert_eq!(rec.status, "succeeded");
        (fake, key)
    }

    fn full_refund(payment_key: Uuid) -> CreateRefundBody {
        CreateRefundBody { payment_key, amount_cents: 1_000 }
    }

    /// By default a second refund key cannot give back more than was charged.
    #[tokio::test]
    async fn strict_refunds_refuse_a_second_key_beyond_the_charge() {
        let (fake, key) = charged(ProviderFaults::default()).await;
        let first = fake.refund(Uuid::from_u128(10), full_refund(key)).await.expect("first refund");
        assert_eq!(fake.refund(Uuid::from_u128(10), full_refund(key)).await, Ok(first), "same key replays");
        let second = fake.refund(Uuid::from_u128(11), full_refund(key)).await;
        assert!(matches!(second, Err(FakeError::NotRefundable(_))), "{second:?}");
        assert_eq!(fake.ledger().refunds.len(), 1);
    }

    /// A lenient provider refunds again under a new key; the same key still replays.
    #[tokio::test]
    async fn lenient_refunds_accept_a_second_key_beyond_the_charge() {
        let (fake, key) = charged(ProviderFaults { lenient_refunds: true, ..ProviderFaults::default() }).await;
        let first = fake.refund(Uuid::from_u128(10), full_refund(key)).await.expect("first refund");
        assert_eq!(fake.refund(Uuid::from_u128(10), full_refund(key)).await, Ok(first.clone()), "same key replays");
        let second = fake.refund(Uuid::from_u128(11), full_refund(key)).await.expect("second refund accepted");
        assert_ne!(second.id, first.id);
        let ledger = fake.ledger();
        assert_eq!(ledger.refunds.len(), 2);
        assert!(ledger.refunds.iter().all(|r| r.payment_key == key && r.amount_cents == 1_000));
        // Each refund alone is still bounded, and an uncharged payment is still not refundable.
        let too_big = CreateRefundBody { payment_key: key, amount_cents: 1_001 };
        assert!(matches!(fake.refund(Uuid::from_u128(12), too_big).await, Err(FakeError::NotRefundable(_))));
        let canceled = Uuid::from_u128(3);
        fake.cancel_payment(canceled).await.expect("cancel");
        let r = fake.refund(Uuid::from_u128(13), full_refund(canceled)).await;
        assert!(matches!(r, Err(FakeError::NotRefundable(_))), "{r:?}");
    }
}
