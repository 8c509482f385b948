//! The `fake-provider` binary as a real process, its idempotency over real
//! HTTP through `HttpProvider`: same key, same response; same key with other
//! parameters, a 409 refusal; status reads; idempotent refunds; fault knobs.

use booking::fake_provider::Ledger;
use booking::model::{CompensationId, OrderId, PaymentOpId};
use booking::payment::HttpProvider;
use booking::payment::provider::{CreatePayment, PaymentProvider, ProviderError, ProviderStatus, RefundStatus};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Proc(Child);
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary on a free port (port 0, the bound address read from its first line).
fn start() -> (Proc, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-provider"))
        .args(["--listen", "127.0.0.1:0", "--seed", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("fake-provider starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (Proc(child), url)
}

/// A minimal blocking HTTP/1.0 call for the admin endpoints.
fn admin(url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status: u16 = out.split(' ').nth(1).unwrap().parse().unwrap();
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

#[tokio::test]
async fn fake_provider_process_is_idempotent_over_http() {
    let (_proc, url) = start();
    let p = HttpProvider::with_http(&url, Duration::from_secs(5)).unwrap();
    let key = PaymentOpId::from_u128(1);
    let req = CreatePayment { idempotency_key: key, amount_cents: 1_500, order_id: OrderId::from_u128(100) };
    let first = p.create_payment(&req).await.unwrap();
    assert_eq!(first.status, ProviderStatus::Succeeded);
    let replay = p.create_payment(&req).await.unwrap();
    assert_eq!(replay, first, "same key, same response");
    let other = CreatePayment { amount_cents: 2_000, ..req.clone() };
    match p.create_payment(&other).await {
        Err(ProviderError::Refused { status: 409, detail }) => {
            assert!(detail.contains("idempotency-key-reused"), "{detail}")
        }
        r => panic!("expected a 409 refusal, got {r:?}"),
    }
    assert_eq!(p.fetch_payment(key).await.unwrap(), Some(first.clone()));
    assert_eq!(p.fetch_payment(PaymentOpId::from_u128(2)).await.unwrap(), None, "never processed: 404");

    // Refunds: idempotent by their key; only one refund is booked.
    let rk = CompensationId::from_u128(50);
    assert_eq!(p.refund(rk, key, 1_500).await.unwrap(), RefundStatus::Succeeded);
    assert_eq!(p.refund(rk, key, 1_500).await.unwrap(), RefundStatus::Succeeded);
    assert!(
        matches!(
            p.refund(CompensationId::from_u128(51), key, 1_500).await,
            Err(ProviderError::Refused { status: 409, .. })
        ),
        "no double refund"
    );
    let (status, body) = admin(&url, "GET", "/admin/ledger", "");
    assert_eq!(status, 200);
    let ledger: Ledger = serde_json::from_str(&body).unwrap();
    assert_eq!(ledger.payments.len(), 1);
    assert_eq!(ledger.refunds.len(), 1);

    // Cancel of a never-seen key tombstones it: a later create is not charged.
    let k3 = PaymentOpId::from_u128(3);
    assert!(matches!(p.cancel_payment(k3).await.unwrap().status, ProviderStatus::Failed { .. }));
    let late = CreatePayment { idempotency_key: k3, ..req.clone() };
    assert!(matches!(p.create_payment(&late).await.unwrap().status, ProviderStatus::Failed { .. }));

    // Fault knobs over HTTP: bad knobs are a 400 problem; decline_rate 1 declines.
    let (status, body) = admin(&url, "POST", "/admin/faults", r#"{"decline_rate": 2.0}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("/problems/invalid-request"));
    let (status, _) = admin(&url, "POST", "/admin/faults", r#"{"decline_rate": 1.0}"#);
    assert_eq!(status, 200);
    let k4 = CreatePayment { idempotency_key: PaymentOpId::from_u128(4), ..req.clone() };
    assert_eq!(p.create_payment(&k4).await.unwrap().status, ProviderStatus::Failed { reason: "card_declined".into() });
    // error_rate 1: a 503 before processing is an unknown outcome for the client, and nothing is recorded.
    admin(&url, "POST", "/admin/faults", r#"{"error_rate": 1.0}"#);
    let k5 = CreatePayment { idempotency_key: PaymentOpId::from_u128(5), ..req.clone() };
    assert!(matches!(p.create_payment(&k5).await, Err(ProviderError::Unknown(_))));
    admin(&url, "POST", "/admin/faults", "{}");
    assert_eq!(p.fetch_payment(PaymentOpId::from_u128(5)).await.unwrap(), None);
    // Bad input is a 4xx problem, not a 5xx.
    let (status, body) = admin(&url, "POST", "/v1/payments", r#"{"amount_cents": 1}"#);
    assert_eq!(status, 400, "{body}");
}

#[test]
fn fake_provider_help_explains_every_flag() {
    let out = Command::new(env!("CARGO_BIN_EXE_fake-provider")).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in ["--listen", "--webhook-url", "--webhook-secret", "--seed", "--faults", "--webhook-timeout-ms"] {
        assert!(help.contains(flag), "{flag} missing from --help:\n{help}");
    }
    assert!(help.contains("fake payment provider"), "its own description, not the booking crate's:\n{help}");
    // Every fault knob is listed in --help and in docs/RUNNING_BOOKINGD.md.
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/RUNNING_BOOKINGD.md")).unwrap();
    let knobs = serde_json::to_value(booking::fake_provider::ProviderFaults::default()).unwrap();
    let knobs = knobs.as_object().expect("ProviderFaults is a JSON object");
    assert!(knobs.len() >= 13, "{knobs:?}");
    for knob in knobs.keys() {
        assert!(help.contains(&format!("  {knob} ")), "knob {knob} missing from --help:\n{help}");
        assert!(docs.contains(&format!("| `{knob}` |")), "knob {knob} missing from docs/RUNNING_BOOKINGD.md");
    }
}

#[test]
fn fake_provider_has_no_default_webhook_secret() {
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_fake-provider"));
        cmd.args(args).env_remove("HOLDFAST_WEBHOOK_SECRET").env_remove("FAKE_PROVIDER_WEBHOOK_SECRET");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().unwrap()
    };
    let hook = ["--listen", "127.0.0.1:0", "--webhook-url", "http://127.0.0.1:1/v1/webhooks/provider"];
    let out = run(&hook, &[("FAKE_PROVIDER_WEBHOOK_SECRET", "dev-webhook-secret-0123")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--webhook-secret"), "{out:?}");
    let out = run(&[&hook[..], &["--webhook-secret", "short"]].concat(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 16 bytes"), "{out:?}");
}
