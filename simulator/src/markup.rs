//! Text put into HTML or XML (the timeline page, JUnit files): every
//! character that could end a text node or an attribute value becomes an
//! entity, and control characters other than tab and newlines, which XML 1.0
//! cannot carry, are dropped.

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by entities (`&#39;` for
/// the apostrophe, which both HTML and XML read), safe as element text and
/// inside a double- or single-quoted attribute value; control characters
/// other than `\t`, `\n` and `\r` dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_characters_become_entities_and_controls_go() {
        assert_eq!(escape(r#"<a href="x">'&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
        assert_eq!(escape("a<b & \"c\" 'd'>\u{1}\n"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;\n");
        assert_eq!(escape("plain ünïcode"), "plain ünïcode");
    }
}
