//! A JSON integer as the API documents it: JSON Schema's `integer`, any
//! number with no fractional part. Written as an integer (`5000`) it is
//! read as written; written as a float (`5000.0`, `1.5e3`) it is read only
//! up to 2^53 in magnitude, the largest range in which a float holds every
//! integer (RFC 7493 §2.2). Anything else is `400 bad-request`, as is a
//! number outside the field's type.

use serde_json::Value;

/// 2^53: the largest magnitude of an integer written as a float that is read.
pub const MAX_FLOAT_INT: f64 = 9_007_199_254_740_992.0;

/// The integer `v` states, if it is one.
pub fn of(v: &Value) -> Option<i128> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    let f = n.as_f64()?;
    (f.trunc() == f && (-MAX_FLOAT_INT..=MAX_FLOAT_INT).contains(&f)).then_some(f as i128)
}

/// The integer `v` states, if it is one that `T` holds.
pub fn of_type<T: TryFrom<i128>>(v: &Value) -> Option<T> {
    of(v).and_then(|i| T::try_from(i).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_as_written_and_integral_floats_up_to_two_to_the_53() {
        assert_eq!(of(&json!(5000)), Some(5000));
        assert_eq!(of(&json!(5000.0)), Some(5000));
        assert_eq!(of(&serde_json::from_str::<Value>("1.5e3").unwrap()), Some(1500));
        assert_eq!(of(&json!(u64::MAX)), Some(u64::MAX.into()));
        assert_eq!(of(&json!(9_007_199_254_740_992.0)), Some(1 << 53));
        assert_eq!(of(&json!(-9_007_199_254_740_992.0)), Some(-(1 << 53)));
        assert_eq!(of(&json!(9_007_199_254_740_994.0)), None);
        assert_eq!(of(&json!(100.5)), None);
        assert_eq!(of(&json!("5")), None);
        assert_eq!(of_type::<u32>(&json!(4_294_967_296u64)), None);
        assert_eq!(of_type::<i64>(&json!(u64::MAX)), None);
    }
}
