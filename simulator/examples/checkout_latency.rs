//! Checkout-to-confirmed latency on the real stack (PostgreSQL, one `bookingd`
//! process, the `fake-provider` process), under a steady stream of checkouts,
//! with the provider answering in 20 ms and in 200 ms, for the dispatcher
//! calling the provider one row at a time (`--dispatch-concurrency 1`, the
//! baseline, measured in the same run) and concurrently (the default).
//!
//! Latency is read from the authority's records: a confirmed order's
//! `updated_at_ms - created_at_ms` (checkout commit to confirmation commit,
//! both on the store's clock). Also reported: orders released unpaid at their
//! deadline.
//!
//! Needs the simulator binary (it runs `simulator bookingd`/`fake-provider`):
//! `cargo build --release -p simulator && cargo run --release -p simulator --example checkout_latency -- [USERS] [DURATION_S] [PACE_MS]`
//! `[USERS] [DURATION_S] [PACE_MS]` (defaults 20 users, 20 s, 500 ms between a user's checkouts). Prints a markdown table.

use serde_json::json;
use simulator::chaos::client::{Api, History};
use simulator::chaos::log::FaultLog;
use simulator::chaos::stack::{Stack, StackConfig};
use std::sync::Arc;
use std::time::Duration;

/// Events, each with `SEATS` seats (one event's seat list must fit a request body).
const EVENTS: usize = 5;
/// Seats per event: enough that users never collide.
const SEATS: usize = 4_000;
/// Payment deadline the service runs with, in ms.
const PAYMENT_TTL_MS: u64 = 20_000;

struct Row {
    latency_ms: u64,
    concurrency: u32,
    orders: usize,
    confirmed: usize,
    released: usize,
    p50_ms: i64,
    p99_ms: i64,
    max_ms: i64,
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn measure(
    latency_ms: u64,
    concurrency: u32,
    users: usize,
    duration_s: u64,
    pace_ms: u64,
    admin_url: &str,
) -> Result<Row, String> {
    let stack = Stack::start(
        StackConfig {
            admin_url: admin_url.to_string(),
            redis_url: None,
            bookingds: 1,
            bookingd_args: vec![
                "--hold-attempts-per-minute".into(),
                "100000".into(),
                "--payment-ttl-ms".into(),
                PAYMENT_TTL_MS.to_string(),
                "--dispatch-concurrency".into(),
                concurrency.to_string(),
                "--max-db-connections".into(),
                "16".into(),
            ],
            provider_faults_json: json!({"latency_ms": latency_ms}).to_string(),
            provider_seed: 1,
            clock_skew_max_ms: 0,
            skew_seed: 0,
            db_direct: false,
        },
        |_| Vec::new(),
    )
    .await?;
    let log = Arc::new(FaultLog::new());
    let history = Arc::new(History::new(log.start()));
    let api = Api::new(vec![stack.slots[0].addr], history);
    let token = simulator::chaos::stack::token;
    let seats: Vec<String> = (0..SEATS).map(|s| format!("s{s:05}")).collect();
    for e in 0..EVENTS {
        let body = json!({"event_id": format!("bench{e}"), "seat_ids": seats, "price_cents": 2_500});
        let admin = [("authorization", format!("Bearer {}", token("op", true)))];
        let r = api.send("operator", 0, "POST", "/v1/events", &admin, Some(body)).await?;
        if r.status != 201 {
            return Err(format!("create event: {} {}", r.status, r.body));
        }
    }
    let per_event = users.div_ceil(EVENTS);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(duration_s);
    let tasks: Vec<_> = (0..users)
        .map(|u| {
            let api = api.clone();
            let bearer = format!("Bearer {}", token(&format!("u{u}"), false));
            tokio::spawn(async move {
                // Each user walks its own stripe of its event's seats: a steady stream of checkouts.
                let event = format!("bench{}", u % EVENTS);
                let mut seat = u / EVENTS;
                while tokio::time::Instant::now() < deadline && seat < SEATS {
                    let auth = [("authorization", bearer.clone())];
                    let held = api
                        .send(
                            "u",
                            0,
                            "POST",
                            &format!("/v1/events/{event}/holds"),
                            &auth,
                            Some(json!({"seat_ids": [format!("s{seat:05}")]})),
                        )
                        .await;
                    if let Ok(h) = held
                        && h.status == 201
                    {
                        let t = h.body["hold_token"].as_str().unwrap_or_default().to_string();
                        let headers = [auth[0].clone(), ("idempotency-key", format!("k{u}-{seat}"))];
                        let _ = api
                            .send(
                                "u",
                                0,
                                "POST",
                                &format!("/v1/events/{event}/holds/{t}/checkout"),
                                &headers,
                                Some(json!({"seat_ids": [format!("s{seat:05}")]})),
                            )
                            .await;
                    }
                    seat += per_event;
                    tokio::time::sleep(Duration::from_millis(pace_ms)).await;
                }
            })
        })
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    // Let the dispatcher drain (bounded by the payment deadline).
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&stack.db_url)
        .await
        .map_err(|e| e.to_string())?;
    let drain_until = tokio::time::Instant::now() + Duration::from_millis(PAYMENT_TTL_MS + 10_000);
    while tokio::time::Instant::now() < drain_until {
        let open: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status IN ('pending', 'reconciling')")
            .fetch_one(&pool)
            .await
            .map_err(|e| e.to_string())?;
        if open == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let rows: Vec<(String, i64)> = sqlx::query_as("SELECT status, updated_at_ms - created_at_ms FROM orders")
        .fetch_all(&pool)
        .await
        .map_err(|e| e.to_string())?;
    pool.close().await;
    stack.finish(false, &log).await?;
    let mut confirmed: Vec<i64> = rows.iter().filter(|(s, _)| s == "confirmed").map(|(_, l)| *l).collect();
    confirmed.sort_unstable();
    Ok(Row {
        latency_ms,
        concurrency,
        orders: rows.len(),
        confirmed: confirmed.len(),
        released: rows.iter().filter(|(s, _)| s == "released").count(),
        p50_ms: percentile(&confirmed, 0.5),
        p99_ms: percentile(&confirmed, 0.99),
        max_ms: confirmed.last().copied().unwrap_or(0),
    })
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let users: usize = args.get(1).map(|s| s.parse().map_err(|_| "USERS must be a number")).transpose()?.unwrap_or(20);
    let duration_s: u64 =
        args.get(2).map(|s| s.parse().map_err(|_| "DURATION_S must be a number")).transpose()?.unwrap_or(20);
    let pace_ms: u64 =
        args.get(3).map(|s| s.parse().map_err(|_| "PACE_MS must be a number")).transpose()?.unwrap_or(500);
    let admin_url = std::env::var("HOLDFAST_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    // The processes are the simulator binary: run from target/release/examples, it is one directory up.
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let sim = exe.parent().and_then(|d| d.parent()).map(|d| d.join("simulator")).ok_or("no simulator binary")?;
    if !sim.exists() {
        return Err(format!("{} not found: cargo build --release -p simulator first", sim.display()));
    }
    // SAFETY: single-threaded here, before the runtime starts any task.
    unsafe { std::env::set_var(simulator::chaos::stack::SIMULATOR_EXE_VAR, &sim) };
    let mut rows = Vec::new();
    for latency_ms in [20, 200] {
        for concurrency in [1, 8] {
            rows.push(rt.block_on(measure(latency_ms, concurrency, users, duration_s, pace_ms, &admin_url))?);
        }
    }
    println!(
        "| provider latency | dispatch concurrency | orders | confirmed | released unpaid | p50 ms | p99 ms | max ms | p99 vs concurrency 1 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let base = rows
            .iter()
            .find(|b| b.latency_ms == r.latency_ms && b.concurrency == 1)
            .map(|b| b.p99_ms)
            .unwrap_or(1)
            .max(1);
        println!(
            "| {} ms | {} | {} | {} | {} | {} | {} | {} | {:.2} |",
            r.latency_ms,
            r.concurrency,
            r.orders,
            r.confirmed,
            r.released,
            r.p50_ms,
            r.p99_ms,
            r.max_ms,
            r.p99_ms as f64 / base as f64
        );
    }
    println!(
        "\n{users} users, {duration_s} s of checkouts (each user: hold, checkout, then {pace_ms} ms), one bookingd, payment deadline {PAYMENT_TTL_MS} ms."
    );
    Ok(())
}
