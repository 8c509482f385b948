//! The store's input rules, as the `Store` trait and the OpenAPI document
//! state them: ids are 1..=64 characters of `[A-Za-z0-9_.-]`; a selection
//! is 1..=8 distinct seats; lifetimes and delays are positive and bounded;
//! an idempotency key is 1..=128 printable ASCII characters without spaces.
//! A refusal of input is `invalid-input` whatever it says, so the model
//! answers the kind, with a message of its own.

use booking::model::{
    MAX_HOLD_TTL_MS, MAX_IDEMPOTENCY_KEY_LEN, MAX_PAYMENT_TTL_MS, MAX_SEATS_PER_EVENT, MAX_SEATS_PER_HOLD, SeatId,
};
use booking::store::{MAX_PRICE_CENTS, MAX_RETRY_DELAY_MS, StoreError};

fn bad(what: &str) -> StoreError {
    StoreError::InvalidInput(format!("model: {what}"))
}

/// An event, seat or user id.
pub fn id(what: &str, text: &str) -> Result<(), StoreError> {
    let ok = (1..=64).contains(&text.len())
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
    if ok { Ok(()) } else { Err(bad(what)) }
}

/// A list of distinct seat ids, 1..=`max` of them; returned sorted.
pub fn seats(ids: &[SeatId], max: usize) -> Result<Vec<SeatId>, StoreError> {
    if ids.is_empty() || ids.len() > max {
        return Err(bad("seat count"));
    }
    for s in ids {
        id("seat_id", s)?;
    }
    let mut sorted = ids.to_vec();
    sorted.sort();
    sorted.dedup();
    if sorted.len() != ids.len() {
        return Err(bad("duplicate seats"));
    }
    Ok(sorted)
}

/// A hold's selection.
pub fn hold_seats(ids: &[SeatId]) -> Result<Vec<SeatId>, StoreError> {
    seats(ids, MAX_SEATS_PER_HOLD)
}

/// An event's seats.
pub fn event_seats(ids: &[SeatId]) -> Result<Vec<SeatId>, StoreError> {
    seats(ids, MAX_SEATS_PER_EVENT)
}

/// A seat price.
pub fn price(cents: i64) -> Result<(), StoreError> {
    if (0..=MAX_PRICE_CENTS).contains(&cents) { Ok(()) } else { Err(bad("price")) }
}

/// A hold's lifetime.
pub fn hold_ttl(ms: i64) -> Result<(), StoreError> {
    if (1..=MAX_HOLD_TTL_MS).contains(&ms) { Ok(()) } else { Err(bad("hold ttl")) }
}

/// The per-user cap.
pub fn cap(cap: Option<u32>) -> Result<(), StoreError> {
    match cap {
        Some(n) if n < 1 || n as usize > MAX_SEATS_PER_EVENT => Err(bad("cap")),
        _ => Ok(()),
    }
}

/// A payment's deadline after checkout.
pub fn payment_ttl(ms: i64) -> Result<(), StoreError> {
    if (1..=MAX_PAYMENT_TTL_MS).contains(&ms) { Ok(()) } else { Err(bad("payment ttl")) }
}

/// An idempotency key: printable ASCII without spaces.
pub fn key(key: &str) -> Result<(), StoreError> {
    let ok = (1..=MAX_IDEMPOTENCY_KEY_LEN).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic());
    if ok { Ok(()) } else { Err(bad("idempotency key")) }
}

/// A lease (outbox claim, refund attempt): 1 ms to a day.
pub fn lease(ms: i64) -> Result<(), StoreError> {
    if (1..=MAX_RETRY_DELAY_MS).contains(&ms) { Ok(()) } else { Err(bad("lease")) }
}

/// A retry delay: 0 to a day.
pub fn delay(ms: i64) -> Result<(), StoreError> {
    if (0..=MAX_RETRY_DELAY_MS).contains(&ms) { Ok(()) } else { Err(bad("delay")) }
}

/// The provider's payment id: 1..=128 bytes, no NUL.
pub fn provider_payment_id(text: &str) -> Result<(), StoreError> {
    if (1..=128).contains(&text.len()) && !text.contains('\0') { Ok(()) } else { Err(bad("provider payment id")) }
}

/// Stored texts: at most 500 characters, no NUL.
pub fn stored_text(text: &str) -> String {
    text.chars().filter(|c| *c != '\0').take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_keys_and_selections_follow_the_documented_limits() {
        assert!(id("x", "a").is_ok() && id("x", &"a".repeat(64)).is_ok());
        for bad in ["", "a b", "é", &"a".repeat(65)] {
            assert!(id("x", bad).is_err(), "{bad:?}");
        }
        assert_eq!(hold_seats(&["b".into(), "a".into()]).unwrap(), vec!["a", "b"]);
        assert!(hold_seats(&[]).is_err());
        assert!(hold_seats(&["a".into(), "a".into()]).is_err());
        assert!(hold_seats(&(0..9).map(|i| SeatId::from(format!("s{i}"))).collect::<Vec<_>>()).is_err());
        assert!(key("k-1").is_ok() && key("a b").is_err() && key("").is_err());
        assert!(key(&"k".repeat(128)).is_ok() && key(&"k".repeat(129)).is_err());
        assert!(lease(0).is_err() && lease(1).is_ok() && delay(0).is_ok() && delay(-1).is_err());
        assert_eq!(stored_text("a\0b"), "ab");
    }
}
