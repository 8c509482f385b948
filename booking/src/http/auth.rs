//! User and admin tokens: `v1.<payload>.<mac>`, both base64url (no padding);
//! the MAC is HMAC-SHA256 over `v1.<payload>` with the service secret. The
//! payload names the user, the events they may touch and an expiry judged by
//! the service's clock.

use crate::clock::Clock;
use crate::http::problem::Problem;
use crate::model::{EventId, UserId};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use std::sync::Arc;

type HmacSha256 = Hmac<Sha256>;

/// The claims of a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user.
    pub sub: UserId,
    /// Events the user may touch; `"*"` means all.
    pub events: Vec<String>,
    /// Expiry, ms since the Unix epoch.
    pub exp_ms: i64,
    /// Whether this is an operator (admin) credential.
    #[serde(default)]
    pub admin: bool,
    /// The holder's priority tier for priority waiting rooms (0 first); `None` is the public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
}

impl Claims {
    /// Whether the claims allow touching `event_id`.
    pub fn allows_event(&self, event_id: &EventId) -> bool {
        self.events.iter().any(|e| e == "*" || e == event_id.as_str())
    }
}

/// Issues and verifies tokens. Precondition: the secret is at least 16 bytes.
#[derive(Clone)]
pub struct Authenticator {
    /// HMAC-SHA256 keyed with the secret, cloned for each token: the key's
    /// padding blocks are hashed once, not per request.
    keyed: HmacSha256,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authenticator { .. }")
    }
}

/// Tokens longer than this are refused before any work.
const MAX_TOKEN_LEN: usize = 4096;

impl Authenticator {
    /// An authenticator with `secret` (>= 16 bytes) judging expiry by `clock`.
    pub fn new(secret: &[u8], clock: Arc<dyn Clock>) -> Self {
        assert!(secret.len() >= 16, "token secret must be at least 16 bytes");
        Self { keyed: HmacSha256::new_from_slice(secret).expect("hmac takes any key length"), clock }
    }

    fn mac(&self, signed: &str) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        mac.update(signed.as_bytes());
        mac
    }

    /// Issues a token carrying `claims`.
    pub fn issue(&self, claims: &Claims) -> String {
        let payload = B64.encode(serde_json::to_vec(claims).expect("claims serialize"));
        let signed = format!("v1.{payload}");
        let tag = B64.encode(self.mac(&signed).finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// Verifies a token: format, MAC (constant time), expiry.
    pub fn verify(&self, token: &str) -> Result<Claims, Problem> {
        if token.len() > MAX_TOKEN_LEN {
            return Err(Problem::unauthorized("token too long"));
        }
        let (signed, tag) = token.rsplit_once('.').ok_or_else(|| Problem::unauthorized("malformed token"))?;
        let payload = signed.strip_prefix("v1.").ok_or_else(|| Problem::unauthorized("unknown token version"))?;
        let tag = B64.decode(tag).map_err(|_| Problem::unauthorized("malformed token signature"))?;
        self.mac(signed).verify_slice(&tag).map_err(|_| Problem::unauthorized("bad token signature"))?;
        let bytes = B64.decode(payload).map_err(|_| Problem::unauthorized("malformed token payload"))?;
        let claims: Claims =
            serde_json::from_slice(&bytes).map_err(|_| Problem::unauthorized("malformed token claims"))?;
        if claims.exp_ms <= self.clock.now_ms() {
            return Err(Problem::unauthorized("token expired"));
        }
        if !crate::model::valid_id(&claims.sub) {
            return Err(Problem::unauthorized("token subject is not a valid user id"));
        }
        Ok(claims)
    }

    /// Verifies an `Authorization: Bearer <token>` header value.
    pub fn verify_header(&self, value: Option<&str>) -> Result<Claims, Problem> {
        let value = value.ok_or_else(|| Problem::unauthorized("missing Authorization: Bearer token"))?;
        // RFC 9110 §11.1: the scheme is case-insensitive; one or more spaces follow it.
        let token = match value.split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest,
            _ => return Err(Problem::unauthorized("Authorization must be a Bearer token")),
        };
        self.verify(token.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn auth() -> (Authenticator, Arc<ManualClock>) {
        let clock = ManualClock::new(1_000);
        (Authenticator::new(b"0123456789abcdef", clock.clone()), clock)
    }

    fn claims(exp_ms: i64) -> Claims {
        Claims { sub: "alice".into(), events: vec!["e1".into()], exp_ms, admin: false, tier: None }
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        let (a, _) = auth();
        let t = a.issue(&claims(2_000));
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            assert_eq!(a.verify_header(Some(&format!("{scheme} {t}"))).unwrap().sub, "alice", "{scheme}");
        }
        assert_eq!(a.verify_header(Some(&format!("Bearer   {t}"))).unwrap().sub, "alice", "extra spaces");
        for bad in [format!("Basic {t}"), format!("Bearer{t}"), t.clone(), format!("Bearerx {t}")] {
            assert_eq!(a.verify_header(Some(&bad)).unwrap_err().status, 401, "{bad}");
        }
    }

    #[test]
    fn issued_tokens_verify_until_they_expire() {
        let (a, clock) = auth();
        let t = a.issue(&claims(2_000));
        assert_eq!(a.verify(&t).unwrap(), claims(2_000));
        clock.set_ms(2_000);
        assert_eq!(a.verify(&t).unwrap_err().detail, "token expired");
    }

    #[test]
    fn tampered_or_foreign_tokens_are_refused() {
        let (a, clock) = auth();
        let t = a.issue(&claims(2_000));
        let other = Authenticator::new(b"another-secret-16", clock);
        assert_eq!(other.verify(&t).unwrap_err().detail, "bad token signature");
        let forged_payload = B64.encode(serde_json::to_vec(&Claims { admin: true, ..claims(2_000) }).unwrap());
        let tag = t.rsplit_once('.').unwrap().1;
        let forged = format!("v1.{forged_payload}.{tag}");
        assert_eq!(a.verify(&forged).unwrap_err().detail, "bad token signature");
        assert_eq!(a.verify("garbage").unwrap_err().status, 401);
    }

    #[test]
    fn event_scope_is_enforced() {
        let c = claims(2_000);
        assert!(c.allows_event(&"e1".into()));
        assert!(!c.allows_event(&"e2".into()));
        assert!(Claims { events: vec!["*".into()], ..c }.allows_event(&"e2".into()));
    }
}
