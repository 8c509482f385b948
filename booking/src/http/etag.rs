//! Conditional reads: the `If-None-Match` request header (RFC 9110 §13.1.2)
//! and the weak comparison of entity tags it calls for (§8.8.3.2). A header
//! that does not parse is no condition at all: the full answer is always a
//! correct answer, so bad input here is never an error.

use axum::http::HeaderMap;
use axum::http::header::IF_NONE_MATCH;

/// The longest `If-None-Match` (all its field lines together) that is parsed;
/// a longer one is ignored (treated as absent).
pub const MAX_IF_NONE_MATCH_BYTES: usize = 8 * 1024;

/// A parsed `If-None-Match`: `*`, or a non-empty list of entity tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfNoneMatch(Condition);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Condition {
    /// `*`: any current representation.
    Any,
    /// The opaque tags (quotes included, `W/` dropped) of the listed entity tags.
    Tags(Vec<Vec<u8>>),
}

impl IfNoneMatch {
    /// The request's condition: `None` when the header is absent, empty,
    /// longer than [`MAX_IF_NONE_MATCH_BYTES`] or malformed (a list mixing
    /// `*` with tags, an unquoted tag, a character outside `etagc`, ...).
    /// Several field lines are one comma-separated list.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let mut lines = headers.get_all(IF_NONE_MATCH).iter().peekable();
        lines.peek()?;
        let mut value = Vec::new();
        for line in lines {
            if !value.is_empty() {
                value.push(b',');
            }
            value.extend_from_slice(line.as_bytes());
            if value.len() > MAX_IF_NONE_MATCH_BYTES {
                return None;
            }
        }
        Self::parse(&value)
    }

    /// Parses one field value (see [`IfNoneMatch::from_headers`]).
    pub fn parse(value: &[u8]) -> Option<Self> {
        if value.len() > MAX_IF_NONE_MATCH_BYTES {
            return None;
        }
        if trim_ows(value) == b"*" {
            return Some(Self(Condition::Any));
        }
        let mut tags = Vec::new();
        let mut rest = value;
        loop {
            // Empty list elements are allowed (RFC 9110 §5.6.1.2).
            rest = skip_while(rest, |b| is_ows(b) || b == b',');
            if rest.is_empty() {
                break;
            }
            let (opaque, after) = entity_tag(rest)?;
            tags.push(opaque.to_vec());
            rest = skip_while(after, is_ows);
            match rest.first() {
                None => break,
                Some(b',') => {}
                Some(_) => return None,
            }
        }
        if tags.is_empty() { None } else { Some(Self(Condition::Tags(tags))) }
    }

    /// Whether the condition matches a resource whose current entity tag is
    /// `current` (strong or weak, well-formed): `*` always does (the caller
    /// has established that the resource exists); a list does when one of its
    /// tags is weakly equal to `current` (same opaque tag, `W/` ignored).
    pub fn matches(&self, current: &str) -> bool {
        let Some((current, rest)) = entity_tag(current.as_bytes()) else {
            debug_assert!(false, "current entity tag {current:?} is malformed");
            return false;
        };
        debug_assert!(rest.is_empty(), "current entity tag has trailing bytes");
        match &self.0 {
            Condition::Any => true,
            Condition::Tags(tags) => tags.iter().any(|t| t == current),
        }
    }
}

/// Whether `tag` is exactly one strong entity tag (`"..."`, no `W/`).
pub fn is_strong_entity_tag(tag: &[u8]) -> bool {
    tag.first() == Some(&b'"') && entity_tag(tag).is_some_and(|(_, rest)| rest.is_empty())
}

/// Splits a leading `entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE` off `s`:
/// its opaque tag (quotes included) and what follows; `None` if malformed.
fn entity_tag(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let s = s.strip_prefix(b"W/").unwrap_or(s);
    if s.first() != Some(&b'"') {
        return None;
    }
    let len = s[1..].iter().position(|&b| b == b'"')?;
    let inner = &s[1..1 + len];
    if !inner.iter().all(|&b| is_etagc(b)) {
        return None;
    }
    Some(s.split_at(len + 2))
}

/// `etagc = %x21 / %x23-7E / obs-text`.
fn is_etagc(b: u8) -> bool {
    b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80
}

fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

fn skip_while(s: &[u8], f: impl Fn(u8) -> bool) -> &[u8] {
    let n = s.iter().take_while(|&&b| f(b)).count();
    &s[n..]
}

fn trim_ows(s: &[u8]) -> &[u8] {
    let s = skip_while(s, is_ows);
    let n = s.iter().rev().take_while(|&&b| is_ows(b)).count();
    &s[..s.len() - n]
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const CURRENT: &str = "\"sm-3-7\"";

    fn matches(value: &[u8]) -> Option<bool> {
        IfNoneMatch::parse(value).map(|c| c.matches(CURRENT))
    }

    #[test]
    fn lists_stars_and_weak_tags() {
        assert_eq!(matches(b"\"sm-3-7\""), Some(true));
        assert_eq!(matches(b"W/\"sm-3-7\""), Some(true), "weak comparison ignores W/");
        assert_eq!(matches(b"\"sm-3-6\""), Some(false));
        assert_eq!(matches(b"\"a\", W/\"sm-3-7\" ,\"b\""), Some(true));
        assert_eq!(matches(b" , \"x\",,\t\"sm-3-7\" , "), Some(true), "empty list elements are skipped");
        assert_eq!(matches(b"\"a,b\", \"sm-3-7\""), Some(true), "a comma inside a tag is part of it");
        assert_eq!(matches(b"\"a,b\""), Some(false));
        assert_eq!(matches(b" * "), Some(true));
        assert_eq!(matches(b"\"\""), Some(false));
        assert!(IfNoneMatch::parse(b"W/\"sm-3-7\"").unwrap().matches("W/\"sm-3-7\""));
    }

    #[test]
    fn malformed_is_no_condition() {
        for bad in [
            &b""[..],
            b" , ",
            b"sm-3-7",
            b"\"sm-3-7",
            b"\"sm-3-7\" \"x\"",
            b"*, \"sm-3-7\"",
            b"**",
            b"w/\"sm-3-7\"",
            b"W/ \"sm-3-7\"",
            b"\"sm 3 7\"",
            b"\"sm-3-7\"x",
        ] {
            assert_eq!(IfNoneMatch::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        let long = format!("\"{}\"", "a".repeat(MAX_IF_NONE_MATCH_BYTES));
        assert_eq!(IfNoneMatch::parse(long.as_bytes()), None);
    }

    #[test]
    fn field_lines_form_one_list() {
        let mut h = HeaderMap::new();
        assert_eq!(IfNoneMatch::from_headers(&h), None);
        h.append(IF_NONE_MATCH, HeaderValue::from_static("\"a\""));
        assert_eq!(IfNoneMatch::from_headers(&h).map(|c| c.matches(CURRENT)), Some(false));
        h.append(IF_NONE_MATCH, HeaderValue::from_static("\"sm-3-7\""));
        assert_eq!(IfNoneMatch::from_headers(&h).map(|c| c.matches(CURRENT)), Some(true));
        h.append(IF_NONE_MATCH, HeaderValue::from_static("*"));
        assert_eq!(IfNoneMatch::from_headers(&h), None, "* mixed with tags");
        let mut h = HeaderMap::new();
        h.append(IF_NONE_MATCH, HeaderValue::from_bytes(b"\"\xff\xfe\", \"sm-3-7\"").unwrap());
        assert_eq!(IfNoneMatch::from_headers(&h).map(|c| c.matches(CURRENT)), Some(true), "obs-text is etagc");
    }

    #[test]
    fn strong_tags() {
        assert!(is_strong_entity_tag(CURRENT.as_bytes()));
        assert!(!is_strong_entity_tag(b"W/\"sm-3-7\""));
        assert!(!is_strong_entity_tag(b"\"sm-3-7\" "));
        assert!(!is_strong_entity_tag(b"{\"event_id\":\"e1\"}"));
    }
}
