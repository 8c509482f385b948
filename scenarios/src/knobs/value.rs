//! A knob's value, whatever its type, so one table can read and write them all.

use crate::model::RangeMs;

/// The value of one knob.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A count or a duration.
    Int(i64),
    /// A probability or share.
    Share(f64),
    /// A `{ min, max }` range, ms.
    Range(RangeMs),
    /// A boolean.
    Flag(bool),
    /// A name.
    Name(String),
    /// A list of names.
    Names(Vec<String>),
    /// An optional table, present.
    Table,
    /// Written to a table's row: remove the table.
    Absent,
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Share(v)
    }
}

impl From<RangeMs> for Value {
    fn from(v: RangeMs) -> Value {
        Value::Range(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Flag(v)
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Name(v)
    }
}

impl From<Vec<String>> for Value {
    fn from(v: Vec<String>) -> Value {
        Value::Names(v)
    }
}

/// A field's type read back from a [`Value`] of its own variant.
pub trait FromValue {
    /// The field's value; panics when `v` is another variant (a table bug,
    /// caught by the round-trip test over the library).
    fn from_value(v: Value) -> Self;
}

impl FromValue for i64 {
    fn from_value(v: Value) -> i64 {
        match v {
            Value::Int(i) => i,
            other => panic!("an integer knob written with {other:?}"),
        }
    }
}

impl FromValue for u32 {
    fn from_value(v: Value) -> u32 {
        u32::try_from(i64::from_value(v)).expect("a u32 knob written out of range")
    }
}

impl FromValue for u64 {
    fn from_value(v: Value) -> u64 {
        u64::try_from(i64::from_value(v)).expect("a u64 knob written out of range")
    }
}

impl FromValue for f64 {
    fn from_value(v: Value) -> f64 {
        match v {
            Value::Share(p) => p,
            other => panic!("a probability knob written with {other:?}"),
        }
    }
}

impl FromValue for RangeMs {
    fn from_value(v: Value) -> RangeMs {
        match v {
            Value::Range(r) => r,
            other => panic!("a range knob written with {other:?}"),
        }
    }
}

impl FromValue for bool {
    fn from_value(v: Value) -> bool {
        match v {
            Value::Flag(b) => b,
            other => panic!("a flag knob written with {other:?}"),
        }
    }
}

impl FromValue for String {
    fn from_value(v: Value) -> String {
        match v {
            Value::Name(n) => n,
            other => panic!("a name knob written with {other:?}"),
        }
    }
}

impl FromValue for Vec<String> {
    fn from_value(v: Value) -> Vec<String> {
        match v {
            Value::Names(n) => n,
            other => panic!("a list knob written with {other:?}"),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: Value) -> Option<T> {
        Some(T::from_value(v))
    }
}
