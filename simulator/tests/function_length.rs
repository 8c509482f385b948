//! Functions fit on a screen: no production function of the workspace's
//! crates is longer than [`MAX_LINES`] (TigerBeetle's limit), from its `fn`
//! line to its closing brace. Tests (`#[cfg(test)]` modules, `tests/`),
//! examples and benches are not held to it; tables belong in data, not code.

use std::path::{Path, PathBuf};

/// The longest a production function may be, lines.
const MAX_LINES: usize = 70;

/// The crates' source trees, from the workspace root.
const SOURCE_DIRS: &[&str] = &["booking/src", "invariants/src", "scenarios/src", "simulator/src", "test-services/src"];

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `line` starts a function item (not a signature in a trait or an
/// `extern` block, which the caller tells apart by its `;`).
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for word in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
        rest = rest.trim_start();
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    Some(&rest[..end])
}

/// `(name, first line, length)` of every function of `text` longer than
/// `max_lines`, before its `#[cfg(test)]` module.
fn long_functions(text: &str, max_lines: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let end = lines
        .windows(2)
        .position(|w| w[0].trim() == "#[cfg(test)]" && w[1].trim_start().starts_with("mod "))
        .unwrap_or(lines.len());
    let mut out = Vec::new();
    for i in 0..end {
        let Some(name) = fn_name(lines[i]) else { continue };
        let Some(open) = (i..lines.len()).find(|&k| lines[k].contains('{') || lines[k].trim_end().ends_with(';'))
        else {
            continue;
        };
        if !lines[open].contains('{') {
            continue; // a signature without a body
        }
        let indent = &lines[i][..lines[i].len() - lines[i].trim_start().len()];
        let close = format!("{indent}}}");
        let Some(last) = (open..lines.len()).find(|&k| lines[k].trim_end() == close) else { continue };
        let length = last - i + 1;
        if length > max_lines {
            out.push((name.to_string(), i + 1, length));
        }
    }
    out
}

#[test]
fn no_production_function_is_longer_than_a_screen() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root");
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "{} source files", files.len());
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (name, line, length) in long_functions(&text, MAX_LINES) {
            long.push(format!("{}:{line}: {name} is {length} lines", file.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(long.is_empty(), "functions over {MAX_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_scanner_measures_bodies_and_skips_signatures_and_tests() {
    let body: String = (0..69).map(|i| format!("    let x{i} = {i};\n")).collect();
    let text = format!(
        "trait T {{\n    fn sig(&self);\n}}\n\npub async fn long() {{\n{body}}}\n\nfn short() {{\n}}\n\n#[cfg(test)]\nmod tests {{\n    fn also_long() {{\n{body}{body}    }}\n}}\n"
    );
    assert_eq!(long_functions(&text, 70), vec![("long".to_string(), 5, 71)]);
    assert!(long_functions(&text, 71).is_empty());
}
