//! Typed ids: one type per kind of identifier, so an order id cannot be
//! passed where a payment operation's is meant, nor a seat where an event is.
//!
//! Each type serializes exactly as the value it wraps (`#[serde(transparent)]`,
//! `#[sqlx(transparent)]`, `Debug` and `Display` of the inner value): JSON
//! bodies, SQL columns, traces and their hashes are what they were with bare
//! `String`s and `Uuid`s.
//!
//! Text ids ([`EventId`], [`SeatId`], [`UserId`]) are not validated on
//! construction: the store and the HTTP layer refuse an invalid one with a
//! named error ([`valid_id`](crate::model::valid_id) is the rule), and a
//! checker must be able to hold any id it read.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A text id: a `String` newtype that reads as a `str`.
macro_rules! text_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(String);

        impl $name {
            /// The id whose text is `s` (not validated: see the module's docs).
            pub fn new(s: impl Into<String>) -> Self {
                Self(s.into())
            }
            /// The id's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
            /// The id's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(s: &String) -> Self {
                Self(s.clone())
            }
        }

        impl From<&$name> for $name {
            fn from(id: &$name) -> Self {
                id.clone()
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok(Self(s.to_owned()))
            }
        }
    };
}

/// A UUID id: a `Uuid` newtype, `Copy`.
macro_rules! uuid_id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, sqlx::Type)]
        #[serde(transparent)]
        #[sqlx(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// The id whose value is `uuid`.
            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }
            /// The id's value.
            pub const fn as_uuid(self) -> Uuid {
                self.0
            }
            /// The id of the all-zero UUID (a placeholder, never issued by an [`IdSource`](crate::ids::IdSource)).
            pub const fn nil() -> Self {
                Self(Uuid::nil())
            }
            /// Whether this is the all-zero id of [`nil`](Self::nil).
            pub fn is_nil(self) -> bool {
                self.0.is_nil()
            }
            /// The id whose UUID is `v` (tests and fixed fixtures).
            pub const fn from_u128(v: u128) -> Self {
                Self(Uuid::from_u128(v))
            }
            /// The id whose UUID is `bytes` (tests and fixed fixtures).
            pub const fn from_bytes(bytes: [u8; 16]) -> Self {
                Self(Uuid::from_bytes(bytes))
            }
        }

        impl From<Uuid> for $name {
            fn from(uuid: Uuid) -> Self {
                Self(uuid)
            }
        }

        impl From<$name> for Uuid {
            fn from(id: $name) -> Uuid {
                id.0
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&self.0, f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = uuid::Error;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s).map(Self)
            }
        }
    };
}

text_id! {
    /// An event's identifier: 1..=64 characters of `[A-Za-z0-9_.-]`.
    EventId
}
text_id! {
    /// A seat's identifier within its event: same alphabet and length as [`EventId`].
    SeatId
}
text_id! {
    /// A user's identifier: same alphabet and length as [`EventId`].
    UserId
}
uuid_id! {
    /// A hold's token: the proof of ownership a checkout presents.
    HoldToken
}
uuid_id! {
    /// An order's id.
    OrderId
}
uuid_id! {
    /// A payment operation's id; also the provider's idempotency key for its charge.
    PaymentOpId
}
uuid_id! {
    /// A confirmed booking's id.
    BookingId
}
uuid_id! {
    /// A compensation's id; also the provider's idempotency key for its refund.
    CompensationId
}
uuid_id! {
    /// A dispatch (outbox) event's id.
    OutboxId
}
uuid_id! {
    /// A waiting-room session's id: the session an admission token names.
    SessionId
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialize_as_the_value_they_wrap() {
        let u = Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        assert_eq!(serde_json::to_string(&OrderId::from(u)).unwrap(), serde_json::to_string(&u).unwrap());
        assert_eq!(format!("{:?}", OrderId::from(u)), format!("{u:?}"));
        assert_eq!(OrderId::from(u).to_string(), u.to_string());
        assert_eq!(serde_json::to_string(&SeatId::from("A-1")).unwrap(), "\"A-1\"");
        assert_eq!(format!("{:?}", SeatId::from("A-1")), format!("{:?}", "A-1"));
        let back: EventId = serde_json::from_str("\"gala\"").unwrap();
        assert_eq!(back, "gala");
    }

    #[test]
    fn text_ids_order_as_their_text() {
        let mut ids = vec![SeatId::from("b"), SeatId::from("a10"), SeatId::from("a2")];
        ids.sort();
        assert_eq!(ids, vec![SeatId::from("a10"), SeatId::from("a2"), SeatId::from("b")]);
    }
}
