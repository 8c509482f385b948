//! Text put into HTML: [`escape`] (shared with the JUnit writer, see
//! `crate::markup`) and class-name fragments.

pub use crate::markup::escape;

/// `text` as a CSS class fragment: ASCII letters and digits kept (lowercased),
/// everything else a `-`. Class names built from trace values cannot break
/// out of their attribute or select anything unintended.
pub fn class_fragment(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_fragments_are_inert() {
        assert_eq!(class_fragment("payment_pending"), "payment-pending");
        assert_eq!(class_fragment("x\" onclick=\"y"), "x--onclick--y");
    }
}
