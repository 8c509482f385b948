//! Admission tokens: what a waiting-room event asks of every hold and
//! checkout, checked before the store is touched. `a1.<payload>.<mac>`, both
//! base64url without padding; the MAC is HMAC-SHA256 over `a1.<payload>` with
//! the service's admission secret. The payload binds the admission to one
//! event and one user, names the checkout session it opened and the queue
//! position it was admitted from, and carries its issue time and expiry by
//! the service's clock. A forged, expired, other-event, other-user or
//! used-after-session-end token is refused with an error of its own.

use crate::model::{EventId, SessionId, UserId};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use chrono::{DateTime, SecondsFormat};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Tokens longer than this are refused before any work.
pub const MAX_ADMISSION_TOKEN_LEN: usize = 2048;

/// What an admission token says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionClaims {
    /// The event it admits to.
    pub event_id: EventId,
    /// The user it admits.
    pub user_id: UserId,
    /// The checkout session it opened (ends on a purchase or on expiry).
    pub session_id: SessionId,
    /// The queue position it was admitted from (1 = first in line).
    pub position: u64,
    /// When it was issued, ms since the Unix epoch (service clock).
    pub issued_at_ms: i64,
    /// When it stops admitting, ms since the Unix epoch (service clock); after `issued_at_ms`.
    pub expires_at_ms: i64,
}

impl AdmissionClaims {
    /// The expiry as RFC 3339 (UTC, milliseconds), for people.
    pub fn expires_at_rfc3339(&self) -> String {
        rfc3339_ms(self.expires_at_ms)
    }

    /// The refusal of a token past its expiry at `now_ms` (service clock), if it is.
    pub fn expired(&self, now_ms: i64) -> Option<AdmissionError> {
        (self.expires_at_ms <= now_ms).then(|| AdmissionError::Expired { expired_at: self.expires_at_rfc3339() })
    }
}

/// `ms` since the Unix epoch as RFC 3339 in UTC with milliseconds
/// (`2026-12-02T03:04:05.678Z`); times outside chrono's range print as the epoch.
pub fn rfc3339_ms(ms: i64) -> String {
    DateTime::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Why an admission token does not admit. Each is its own problem kind on HTTP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// No token was presented on a waiting-room event.
    #[error("this event has a waiting room: present the admission token it gave you")]
    Missing,
    /// Not an admission token (length, format, encoding).
    #[error("malformed admission token: {0}")]
    Malformed(&'static str),
    /// The MAC does not verify: not issued by this service.
    #[error("admission token signature does not verify")]
    Forged,
    /// Issued for another event.
    #[error("admission token is for event {token_event}, not {event_id}")]
    OtherEvent {
        /// The event presented to.
        event_id: EventId,
        /// The event it admits to.
        token_event: EventId,
    },
    /// Issued to another user.
    #[error("admission token belongs to another user")]
    OtherUser,
    /// Past its expiry by the service's clock.
    #[error("admission token expired at {expired_at}")]
    Expired {
        /// When, RFC 3339.
        expired_at: String,
    },
    /// Its checkout session has ended (a purchase, or its expiry): rejoin the queue (a new arrival).
    #[error("the checkout session of this admission has ended")]
    SessionEnded,
}

/// Issues and verifies admission tokens. Precondition: the secret is at least 16 bytes.
#[derive(Clone)]
pub struct AdmissionSigner {
    keyed: HmacSha256,
}

impl std::fmt::Debug for AdmissionSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdmissionSigner { .. }")
    }
}

impl AdmissionSigner {
    /// A signer keyed with `secret` (>= 16 bytes; keep it apart from the user-token secret).
    pub fn new(secret: &[u8]) -> Self {
        assert!(secret.len() >= 16, "admission secret must be at least 16 bytes");
        Self { keyed: HmacSha256::new_from_slice(secret).expect("hmac takes any key length") }
    }

    fn mac(&self, signed: &str) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        mac.update(signed.as_bytes());
        mac
    }

    /// Issues a token carrying `claims`. Precondition: `claims.expires_at_ms > claims.issued_at_ms`.
    pub fn issue(&self, claims: &AdmissionClaims) -> String {
        assert!(claims.expires_at_ms > claims.issued_at_ms, "an admission expires after it is issued");
        let payload = B64.encode(serde_json::to_vec(claims).expect("claims serialize"));
        let signed = format!("a1.{payload}");
        let tag = B64.encode(self.mac(&signed).finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// Verifies `token` for a hold or checkout by `user_id` on `event_id` at
    /// `now_ms` (service clock), `session_open` saying whether a session is
    /// still open. Checked in this order: format, MAC (constant time), event,
    /// user, expiry, session; the first failure is the answer.
    pub fn verify(
        &self,
        token: Option<&str>,
        event_id: &EventId,
        user_id: &UserId,
        now_ms: i64,
        session_open: impl FnOnce(SessionId) -> bool,
    ) -> Result<AdmissionClaims, AdmissionError> {
        let claims = self.read(token, event_id, user_id)?;
        if let Some(expired) = claims.expired(now_ms) {
            return Err(expired);
        }
        if !session_open(claims.session_id) {
            return Err(AdmissionError::SessionEnded);
        }
        Ok(claims)
    }

    /// The claims of `token`, presented by `user_id` on `event_id`, whatever
    /// its expiry: checked in this order: format, MAC (constant time),
    /// event, user; the first failure is the answer. A caller that admits
    /// on these claims decides on the expiry itself ([`AdmissionClaims::expired`]).
    pub fn read(
        &self,
        token: Option<&str>,
        event_id: &EventId,
        user_id: &UserId,
    ) -> Result<AdmissionClaims, AdmissionError> {
        let token = token.ok_or(AdmissionError::Missing)?;
        if token.len() > MAX_ADMISSION_TOKEN_LEN {
            return Err(AdmissionError::Malformed("too long"));
        }
        let (signed, tag) = token.rsplit_once('.').ok_or(AdmissionError::Malformed("no signature"))?;
        let payload = signed.strip_prefix("a1.").ok_or(AdmissionError::Malformed("unknown version"))?;
        let tag = B64.decode(tag).map_err(|_| AdmissionError::Malformed("signature encoding"))?;
        self.mac(signed).verify_slice(&tag).map_err(|_| AdmissionError::Forged)?;
        let bytes = B64.decode(payload).map_err(|_| AdmissionError::Malformed("payload encoding"))?;
        let claims: AdmissionClaims =
            serde_json::from_slice(&bytes).map_err(|_| AdmissionError::Malformed("payload"))?;
        if claims.event_id != *event_id {
            return Err(AdmissionError::OtherEvent { event_id: event_id.clone(), token_event: claims.event_id });
        }
        if claims.user_id != *user_id {
            return Err(AdmissionError::OtherUser);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW_MS: i64 = 1_764_644_645_678; // 2025-12-02T03:04:05.678Z

    fn claims() -> AdmissionClaims {
        AdmissionClaims {
            event_id: "e1".into(),
            user_id: "alice".into(),
            session_id: SessionId::from_u128(9),
            position: 17,
            issued_at_ms: NOW_MS,
            expires_at_ms: NOW_MS + 90_000,
        }
    }

    fn signer() -> AdmissionSigner {
        AdmissionSigner::new(b"admission-secret-0123")
    }

    #[test]
    fn an_issued_token_admits_its_user_to_its_event_until_it_expires() {
        let (e1, alice) = (EventId::from("e1"), UserId::from("alice"));
        let s = signer();
        let t = s.issue(&claims());
        assert_eq!(s.verify(Some(&t), &e1, &alice, NOW_MS + 89_999, |_| true), Ok(claims()));
        assert_eq!(
            s.verify(Some(&t), &e1, &alice, NOW_MS + 90_000, |_| true),
            Err(AdmissionError::Expired { expired_at: "2025-12-02T03:05:35.678Z".into() })
        );
    }

    #[test]
    fn every_bypass_is_refused_with_its_own_error() {
        let (e1, e2, alice, bob) =
            (EventId::from("e1"), EventId::from("e2"), UserId::from("alice"), UserId::from("bob"));
        let s = signer();
        let t = s.issue(&claims());
        let ended = SessionId::from_u128(9);
        assert_eq!(s.verify(None, &e1, &alice, NOW_MS, |_| true), Err(AdmissionError::Missing));
        assert_eq!(
            s.verify(Some(&t), &e2, &alice, NOW_MS, |_| true),
            Err(AdmissionError::OtherEvent { event_id: "e2".into(), token_event: "e1".into() })
        );
        assert_eq!(s.verify(Some(&t), &e1, &bob, NOW_MS, |_| true), Err(AdmissionError::OtherUser));
        assert_eq!(s.verify(Some(&t), &e1, &alice, NOW_MS, |id| id != ended), Err(AdmissionError::SessionEnded));
        // Another service's token, and a payload rewritten under the original tag.
        let other = AdmissionSigner::new(b"another-secret-0123").issue(&claims());
        assert_eq!(s.verify(Some(&other), &e1, &alice, NOW_MS, |_| true), Err(AdmissionError::Forged));
        let moved = AdmissionClaims { position: 1, ..claims() };
        let forged =
            format!("a1.{}.{}", B64.encode(serde_json::to_vec(&moved).unwrap()), t.rsplit_once('.').unwrap().1);
        assert_eq!(s.verify(Some(&forged), &e1, &alice, NOW_MS, |_| true), Err(AdmissionError::Forged));
        for garbage in ["", "a1.x", "v1.abc.def", &"x".repeat(MAX_ADMISSION_TOKEN_LEN + 1)] {
            assert!(
                matches!(s.verify(Some(garbage), &e1, &alice, NOW_MS, |_| true), Err(AdmissionError::Malformed(_))),
                "{garbage:.20}"
            );
        }
    }

    #[test]
    fn the_first_failing_check_answers() {
        // Another user's expired token for another event: the event is named first.
        let (e1, e2, alice, bob) =
            (EventId::from("e1"), EventId::from("e2"), UserId::from("alice"), UserId::from("bob"));
        let s = signer();
        let t = s.issue(&claims());
        let e = s.verify(Some(&t), &e2, &bob, NOW_MS + 100_000, |_| false).unwrap_err();
        assert!(matches!(e, AdmissionError::OtherEvent { .. }), "{e:?}");
        let e = s.verify(Some(&t), &e1, &bob, NOW_MS + 100_000, |_| false).unwrap_err();
        assert_eq!(e, AdmissionError::OtherUser);
        let e = s.verify(Some(&t), &e1, &alice, NOW_MS + 100_000, |_| false).unwrap_err();
        assert!(matches!(e, AdmissionError::Expired { .. }), "{e:?}");
    }

    #[test]
    fn times_for_people_are_rfc3339() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(claims().expires_at_rfc3339(), "2025-12-02T03:05:35.678Z");
    }
}
