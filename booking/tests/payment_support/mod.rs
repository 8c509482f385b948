//! Shared by the payment tests: a scripted in-process provider double (with
//! its own books, the provider-side truth), store factories, the standard
//! setup, and the "nothing charged is hidden" check.
//!
//! Store-generic: every scenario takes a [`StoreFactory`]; `payment_workflow.rs`
//! instantiates them on MemStore ([`mem_store`]) and on PgStore (its `pg_store`,
//! `PgClock::Manual(clock)` on a fresh database).

#![allow(dead_code)]

use async_trait::async_trait;
use booking::clock::ManualClock;
use booking::ids::SeededIds;
use booking::model::{CompensationId, Order, OrderStatus, PaymentOpId, PaymentStatus, SeatId, Snapshot};
use booking::payment::provider::{
    CreatePayment, PaymentProvider, ProviderError, ProviderPayment, ProviderStatus, RefundStatus,
};
use booking::payment::{Workflow, WorkflowConfig};
use booking::store::{AcquireHold, BeginPayment, CreateEvent, MemStore, Store};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

/// The store clock's start: 2025-01-01T00:00:00Z.
pub const T0_MS: i64 = 1_735_689_600_000;
/// The payment TTL used by [`checkout`].
pub const PAYMENT_TTL_MS: i64 = 60_000;

/// Builds a fresh, empty store on `clock`.
pub type StoreFactory = fn(Arc<ManualClock>) -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>>;

/// A `MemStore` on `clock` with seeded ids.
pub fn mem_store(clock: Arc<ManualClock>) -> Pin<Box<dyn Future<Output = Arc<dyn Store>> + Send>> {
    Box::pin(async move { Arc::new(MemStore::new(clock, Arc::new(SeededIds::new(7)))) as Arc<dyn Store> })
}

/// How the double answers one `create_payment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateScript {
    /// Charged; answers succeeded.
    Succeed,
    /// Declined; answers failed.
    Decline,
    /// Charged, but the answer is lost (Unknown).
    ChargedAnswerLost,
    /// Never reached the provider's books; answer lost (Unknown).
    LostBeforeProcessing,
    /// Accepted as processing (decided later with [`ScriptedProvider::settle`]).
    Processing,
}

/// How the double answers one `refund`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefundScript {
    /// The money goes back.
    Succeed,
    /// Refused (402-like), retryable.
    Fail,
    /// Outcome unknown, nothing refunded.
    Unknown,
    /// Refunded, but the answer is lost (Unknown); a repeat with the same key answers succeeded.
    RefundedAnswerLost,
}

#[derive(Debug, Default)]
struct Books {
    create_script: VecDeque<CreateScript>,
    refund_script: VecDeque<RefundScript>,
    /// The provider's truth, by payment key.
    payments: BTreeMap<PaymentOpId, ProviderPayment>,
    /// Succeeded refunds: refund key -> (payment key, amount).
    refunds: BTreeMap<CompensationId, (PaymentOpId, i64)>,
    create_calls: u32,
    refund_calls: u32,
    cancel_calls: u32,
    fetch_calls: u32,
    /// How many of the next cancels time out (nothing changes at the provider).
    failing_cancels: u32,
    next_no: u32,
}

/// A scripted in-process provider with its own books. Unscripted creates
/// succeed; unscripted refunds succeed.
#[derive(Debug, Default)]
pub struct ScriptedProvider {
    books: Mutex<Books>,
    /// How long each create takes, in ms (0: answers at once).
    create_delay_ms: std::sync::atomic::AtomicU64,
    /// Creates in flight now, and the most ever at once.
    in_flight: std::sync::atomic::AtomicU32,
    max_in_flight: std::sync::atomic::AtomicU32,
}

impl ScriptedProvider {
    /// A double with empty scripts.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
    /// Makes the next `n` cancels time out, changing nothing.
    pub fn fail_cancels(&self, n: u32) {
        self.books.lock().unwrap().failing_cancels = n;
    }
    /// Makes every create take `ms` of real time (provider latency).
    pub fn delay_creates(&self, ms: u64) {
        self.create_delay_ms.store(ms, std::sync::atomic::Ordering::SeqCst);
    }
    /// The most creates ever in flight at once.
    pub fn max_in_flight(&self) -> u32 {
        self.max_in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }
    /// Appends answers for the next creates that reach a new key.
    pub fn script_creates(&self, s: &[CreateScript]) {
        self.books.lock().unwrap().create_script.extend(s.iter().copied());
    }
    /// Appends answers for the next refunds.
    pub fn script_refunds(&self, s: &[RefundScript]) {
        self.books.lock().unwrap().refund_script.extend(s.iter().cloned());
    }
    /// Decides a processing payment: `true` charged, `false` declined.
    pub fn settle(&self, key: PaymentOpId, charged: bool) {
        let mut b = self.books.lock().unwrap();
        let p = b.payments.get_mut(&key).expect("payment exists");
        assert_eq!(p.status, ProviderStatus::Processing);
        p.status =
            if charged { ProviderStatus::Succeeded } else { ProviderStatus::Failed { reason: "declined late".into() } };
    }
    /// The provider's record for `key`.
    pub fn payment(&self, key: PaymentOpId) -> Option<ProviderPayment> {
        self.books.lock().unwrap().payments.get(&key).cloned()
    }
    /// Payment keys charged (succeeded) at the provider.
    pub fn charged(&self) -> Vec<PaymentOpId> {
        let b = self.books.lock().unwrap();
        b.payments.iter().filter(|(_, p)| p.status == ProviderStatus::Succeeded).map(|(k, _)| *k).collect()
    }
    /// Payment keys refunded (and how much).
    pub fn refunded(&self) -> BTreeMap<PaymentOpId, i64> {
        let b = self.books.lock().unwrap();
        let mut out = BTreeMap::new();
        for (pk, amount) in b.refunds.values() {
            *out.entry(*pk).or_insert(0) += amount;
        }
        out
    }
    /// (create, fetch, cancel, refund) calls so far.
    pub fn calls(&self) -> (u32, u32, u32, u32) {
        let b = self.books.lock().unwrap();
        (b.create_calls, b.fetch_calls, b.cancel_calls, b.refund_calls)
    }
}

#[async_trait]
impl PaymentProvider for ScriptedProvider {
    async fn create_payment(&self, req: &CreatePayment) -> Result<ProviderPayment, ProviderError> {
        use std::sync::atomic::Ordering::SeqCst;
        let delay_ms = self.create_delay_ms.load(SeqCst);
        if delay_ms > 0 {
            let now = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.max_in_flight.fetch_max(now, SeqCst);
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            self.in_flight.fetch_sub(1, SeqCst);
        }
        let mut b = self.books.lock().unwrap();
        b.create_calls += 1;
        if let Some(p) = b.payments.get(&req.idempotency_key) {
            return Ok(p.clone());
        }
        let script = b.create_script.pop_front().unwrap_or(CreateScript::Succeed);
        b.next_no += 1;
        let id = format!("pay_{}", b.next_no);
        let status = match script {
            CreateScript::Succeed | CreateScript::ChargedAnswerLost => ProviderStatus::Succeeded,
            CreateScript::Decline => ProviderStatus::Failed { reason: "card_declined".into() },
            CreateScript::Processing => ProviderStatus::Processing,
            CreateScript::LostBeforeProcessing => return Err(ProviderError::Unknown("timed out".into())),
        };
        let p = ProviderPayment { provider_payment_id: id, status };
        b.payments.insert(req.idempotency_key, p.clone());
        match script {
            CreateScript::ChargedAnswerLost => Err(ProviderError::Unknown("connection reset after send".into())),
            _ => Ok(p),
        }
    }

    async fn fetch_payment(&self, key: PaymentOpId) -> Result<Option<ProviderPayment>, ProviderError> {
        let mut b = self.books.lock().unwrap();
        b.fetch_calls += 1;
        Ok(b.payments.get(&key).cloned())
    }

    async fn cancel_payment(&self, key: PaymentOpId) -> Result<ProviderPayment, ProviderError> {
        let mut b = self.books.lock().unwrap();
        b.cancel_calls += 1;
        if b.failing_cancels > 0 {
            b.failing_cancels -= 1;
            return Err(ProviderError::Unknown("cancel timed out".into()));
        }
        b.next_no += 1;
        let id = format!("pay_{}", b.next_no);
        let p = b.payments.entry(key).or_insert(ProviderPayment {
            provider_payment_id: id,
            status: ProviderStatus::Failed { reason: "canceled".into() },
        });
        if p.status == ProviderStatus::Processing {
            p.status = ProviderStatus::Failed { reason: "canceled".into() };
        }
        Ok(p.clone())
    }

    async fn refund(
        &self,
        refund_key: CompensationId,
        payment_key: PaymentOpId,
        amount_cents: i64,
    ) -> Result<RefundStatus, ProviderError> {
        let mut b = self.books.lock().unwrap();
        b.refund_calls += 1;
        if b.refunds.contains_key(&refund_key) {
            return Ok(RefundStatus::Succeeded);
        }
        assert_eq!(
            b.payments.get(&payment_key).map(|p| &p.status),
            Some(&ProviderStatus::Succeeded),
            "refund of an uncharged payment"
        );
        match b.refund_script.pop_front().unwrap_or(RefundScript::Succeed) {
            RefundScript::Succeed => {
                b.refunds.insert(refund_key, (payment_key, amount_cents));
                Ok(RefundStatus::Succeeded)
            }
            RefundScript::Fail => Ok(RefundStatus::Failed { reason: "insufficient_balance".into() }),
            RefundScript::Unknown => Err(ProviderError::Unknown("timed out".into())),
            RefundScript::RefundedAnswerLost => {
                b.refunds.insert(refund_key, (payment_key, amount_cents));
                Err(ProviderError::Unknown("connection reset after send".into()))
            }
        }
    }
}

/// A test world: a store on a manual clock, a scripted provider, a workflow.
pub struct World {
    /// The store's clock.
    pub clock: Arc<ManualClock>,
    /// The store.
    pub store: Arc<dyn Store>,
    /// The provider double.
    pub provider: Arc<ScriptedProvider>,
    /// The workflow under test.
    pub wf: Workflow,
}

/// The config the scenarios use: small numbers so that limits are reached.
pub fn test_config() -> WorkflowConfig {
    WorkflowConfig {
        dispatch_batch: 16,
        dispatch_concurrency: 4,
        outbox_lease_ms: 10_000,
        max_charge_attempts: 3,
        retry_backoff_base_ms: 1_000,
        retry_backoff_cap_ms: 8_000,
        reconcile_batch: 16,
        reconcile_backoff_base_ms: 1_000,
        reconcile_backoff_cap_ms: 8_000,
        dispatch_interval_ms: 50,
        reconcile_interval_ms: 200,
        max_compensation_attempts: 3,
        max_compensation_unknown_attempts: 5,
        compensation_backoff_base_ms: 2_000,
        compensation_backoff_cap_ms: 16_000,
    }
}

impl World {
    /// A world on a fresh store from `factory`, with an event `ev` of seats A1..A4 at 1500 cents.
    pub async fn new(factory: StoreFactory) -> World {
        let clock = ManualClock::new(T0_MS);
        let store = factory(clock.clone()).await;
        store
            .create_event(&CreateEvent {
                event_id: "ev".into(),
                seat_ids: ["A1", "A2", "A3", "A4"].iter().map(|&s| SeatId::from(s)).collect(),
                price_cents: 1_500,
            })
            .await
            .unwrap();
        let provider = ScriptedProvider::new();
        let wf = Workflow::new(store.clone(), provider.clone(), test_config()).unwrap();
        World { clock, store, provider, wf }
    }

    /// Holds `seats` for `user` and checks out (payment TTL [`PAYMENT_TTL_MS`]).
    pub async fn checkout(&self, user: &str, seats: &[&str]) -> Order {
        let seat_ids: Vec<SeatId> = seats.iter().map(|&s| SeatId::from(s)).collect();
        let grant = self
            .store
            .acquire_hold(&AcquireHold {
                event_id: "ev".into(),
                seat_ids: seat_ids.clone(),
                holder_id: user.into(),
                ttl_ms: 300_000,
                max_held_seats: None,
            })
            .await
            .unwrap();
        self.store
            .begin_payment(&BeginPayment {
                event_id: "ev".into(),
                holder_id: user.into(),
                hold_token: grant.hold_token,
                seat_ids,
                idempotency_key: format!("checkout-{user}"),
                payment_ttl_ms: PAYMENT_TTL_MS,
            })
            .await
            .unwrap()
            .order
    }

    /// The order now.
    pub async fn order(&self, order: &Order) -> Order {
        self.store.order(order.order_id).await.unwrap()
    }

    /// Everything.
    pub async fn snapshot(&self) -> Snapshot {
        self.store.snapshot().await.unwrap()
    }

    /// Checks, on the store's records and the provider's books:
    /// - every succeeded payment op is a confirmed order with one booking per
    ///   seat, or an order with a compensation record;
    /// - every payment the provider charged is recorded succeeded in the store
    ///   (when `settled`: nothing charged is invisible);
    /// - every refunded payment is a succeeded compensation, and nothing is refunded twice;
    /// - at most one booking per seat.
    pub async fn assert_nothing_charged_is_hidden(&self, settled: bool) {
        let snap = self.snapshot().await;
        for op in snap.payment_ops.iter().filter(|p| p.status == PaymentStatus::Succeeded) {
            let order = snap.orders.iter().find(|o| o.order_id == op.order_id).unwrap();
            let bookings = snap.bookings.iter().filter(|b| b.order_id == order.order_id).count();
            let comps = snap.compensations.iter().filter(|c| c.order_id == order.order_id).count();
            let booked = order.status == OrderStatus::Confirmed && bookings == order.seat_ids.len();
            assert!(
                booked || comps >= 1,
                "charged order {} has neither a booking nor a compensation: {order:?}",
                order.order_id
            );
            assert!(!(bookings > 0 && comps > 0), "order both booked and compensated");
        }
        let mut seats: Vec<(&str, &str)> =
            snap.bookings.iter().map(|b| (b.event_id.as_str(), b.seat_id.as_str())).collect();
        let n = seats.len();
        seats.sort_unstable();
        seats.dedup();
        assert_eq!(seats.len(), n, "a seat has two bookings");
        if settled {
            for key in self.provider.charged() {
                let op = snap.payment_ops.iter().find(|p| p.payment_op_id == key).expect("charged key is a payment op");
                assert_eq!(
                    op.status,
                    PaymentStatus::Succeeded,
                    "provider charged {key} but the store says {:?}",
                    op.status
                );
            }
        }
        for (pk, amount) in self.provider.refunded() {
            let c = snap.compensations.iter().find(|c| c.payment_op_id == pk).expect("refund without compensation");
            assert_eq!(c.amount_cents, amount, "refunded exactly once, the full amount");
        }
    }
}
