//! `If-None-Match` as RFC 9110 states it (§13.1.2, with the list rules of
//! §5.6.1 and the entity-tag grammar of §8.8.3), read apart from the
//! service's parser: what a seat-map request's condition is, if any.
//!
//! - `*` alone (optional whitespace around it) matches any current map.
//! - Otherwise the value is a comma-separated list of entity tags
//!   (`"..."` or `W/"..."`, the quoted part of `etagc` characters:
//!   `!`, `#`..`~`, and anything past ASCII); empty list elements and
//!   whitespace (space, tab) around elements are allowed; a comma inside
//!   quotes belongs to its tag.
//! - Anything else, an empty value or one longer than the service's bound
//!   is no condition at all (the full answer).
//! - A list matches when one tag is weakly equal to the current one: the
//!   same quoted part, `W/` ignored.

/// The most bytes of `If-None-Match` the service reads, as the API documents
/// it (the OpenAPI document, docs/RUNNING_BOOKINGD.md); a longer value is no
/// condition.
pub const MAX_BYTES: usize = 8_192;

/// A request's condition on the seat map's entity tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `*`.
    Any,
    /// The quoted parts (quotes included) of the listed tags.
    Tags(Vec<String>),
}

impl Condition {
    /// The condition `value` states, `None` when it states none.
    pub fn of(value: &str) -> Option<Self> {
        if value.is_empty() || value.len() > MAX_BYTES {
            return None;
        }
        if value.trim_matches(is_ows) == "*" {
            return Some(Self::Any);
        }
        let mut tags = Vec::new();
        for element in list_elements(value)? {
            let element = element.trim_matches(is_ows);
            if element.is_empty() {
                continue;
            }
            tags.push(quoted_part(element)?.to_string());
        }
        (!tags.is_empty()).then_some(Self::Tags(tags))
    }

    /// Whether the condition holds for a map whose entity tag is `current`.
    pub fn matches(&self, current: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Tags(tags) => {
                let current = current.strip_prefix("W/").unwrap_or(current);
                tags.iter().any(|t| t == current)
            }
        }
    }
}

/// Optional whitespace: space and horizontal tab.
fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// `value` cut at the commas outside quotes; `None` when a quote is left open.
fn list_elements(value: &str) -> Option<Vec<&str>> {
    let mut elements = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (i, c) in value.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                elements.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    elements.push(&value[start..]);
    Some(elements)
}

/// The quoted part of one entity tag that is the whole of `element`.
fn quoted_part(element: &str) -> Option<&str> {
    let quoted = element.strip_prefix("W/").unwrap_or(element);
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    inner.chars().all(|c| c == '!' || ('#'..='~').contains(&c) || !c.is_ascii()).then_some(quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CURRENT: &str = "\"sm-3-7\"";

    fn holds(value: &str) -> Option<bool> {
        Condition::of(value).map(|c| c.matches(CURRENT))
    }

    #[test]
    fn the_forms_rfc_9110_allows() {
        assert_eq!(holds("\"sm-3-7\""), Some(true));
        assert_eq!(holds("W/\"sm-3-7\""), Some(true));
        assert_eq!(holds("\"sm-3-6\""), Some(false));
        assert_eq!(holds("\"x\" , W/\"sm-3-7\""), Some(true));
        assert_eq!(holds(",\t, \"x\",,\"sm-3-7\" ,"), Some(true));
        assert_eq!(holds("\"a,b\""), Some(false));
        assert_eq!(holds("\"a,b\",\"sm-3-7\""), Some(true));
        assert_eq!(holds("\t*  "), Some(true));
        assert_eq!(holds("\"\""), Some(false));
        assert_eq!(holds("\"é\", \"sm-3-7\""), Some(true));
    }

    #[test]
    fn no_condition() {
        for value in [
            "",
            " ",
            ",,",
            "sm-3-7",
            "\"sm-3-7",
            "\"sm-3-7\" \"x\"",
            "*, \"sm-3-7\"",
            "**",
            "w/\"sm-3-7\"",
            "W/ \"sm-3-7\"",
            "\"sm 3 7\"",
            "\"sm-3-7\"x",
            "\"",
        ] {
            assert_eq!(Condition::of(value), None, "{value:?}");
        }
        assert_eq!(Condition::of(&format!("\"{}\"", "a".repeat(MAX_BYTES))), None);
    }
}
