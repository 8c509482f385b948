//! Functions fit on a screen: no production function of the workspace's
//! crates is longer than [`MAX_LINES`] (TigerBeetle's limit), from its `fn`
//! line to its closing brace. Every production file is parsed whole (`syn`),
//! and a file that does not parse fails the test; every function is measured,
//! free, in an `impl` or a trait, nested or after a test module. Tests
//! (`#[cfg(test)]` modules, inline or in their own file, and `tests/`),
//! examples and benches are not held to it; tables belong in data, not code.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

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

/// Whether `attrs` hold `#[cfg(test)]` or `#[test]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

/// What one file's walk finds.
#[derive(Default)]
struct Walk {
    /// `(name, first line, length)` of every production function over the limit.
    long: Vec<(String, usize, usize)>,
    /// Modules declared `#[cfg(test)] mod name;`: their files are tests.
    test_mods: Vec<String>,
    max_lines: usize,
}

impl Walk {
    fn measure(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let first = sig.fn_token.span.start().line;
        let last = block.brace_token.span.close().end().line;
        let length = last - first + 1;
        if length > self.max_lines {
            self.long.push((name.to_string(), first, length));
        }
    }
}

impl<'ast> Visit<'ast> for Walk {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test(&m.attrs) {
            if m.content.is_none() {
                self.test_mods.push(m.ident.to_string());
            }
            return;
        }
        syn::visit::visit_item_mod(self, m);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        self.measure(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_test(&f.attrs) {
            return;
        }
        self.measure(&f.sig.ident, &f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.measure(&f.sig.ident, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
}

/// Parses `text` whole and walks it: `Err` when it does not parse.
fn walk(text: &str, max_lines: usize) -> Result<Walk, String> {
    let file = syn::parse_file(text).map_err(|e| {
        let at = e.span().start();
        format!("line {}:{}: {e}", at.line, at.column)
    })?;
    let mut w = Walk { max_lines, ..Walk::default() };
    w.visit_file(&file);
    Ok(w)
}

/// The files `file`'s `#[cfg(test)] mod name;` declarations load.
fn test_mod_files(file: &Path, names: &[String]) -> Vec<PathBuf> {
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let dir = match stem {
        "mod" | "lib" | "main" => file.parent().unwrap().to_path_buf(),
        _ => file.with_extension(""),
    };
    names.iter().flat_map(|n| [dir.join(format!("{n}.rs")), dir.join(n).join("mod.rs")]).collect()
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
    let mut walks = Vec::new();
    let mut unparsed = Vec::new();
    let mut tests = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        match walk(&text, MAX_LINES) {
            Ok(w) => {
                tests.extend(test_mod_files(file, &w.test_mods));
                walks.push((file, w));
            }
            Err(e) => unparsed.push(format!("{}: {e}", file.strip_prefix(root).unwrap().display())),
        }
    }
    assert!(unparsed.is_empty(), "files the guard cannot read:\n{}", unparsed.join("\n"));
    assert!(!tests.is_empty(), "test modules in files of their own are recognized");
    let mut long = Vec::new();
    for (file, w) in walks.iter().filter(|(f, _)| !tests.contains(*f)) {
        for (name, line, length) in &w.long {
            long.push(format!("{}:{line}: {name} is {length} lines", file.strip_prefix(root).unwrap().display()));
        }
    }
    assert!(long.is_empty(), "functions over {MAX_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_guard_measures_every_body_and_skips_signatures_and_tests() {
    let body: String = (0..69).map(|i| format!("    let x{i} = {i};\n")).collect();
    let text = format!(
        "trait T {{\n    fn sig(&self);\n}}\n\npub async fn long() {{\n{body}}}\n\nfn short() {{\n}}\n\n\
         #[cfg(test)]\nmod tests {{\n    fn also_long() {{\n{body}{body}    }}\n}}\n\n\
         impl S {{\n    pub(crate) fn after_the_tests(&self) {{\n{body}    }}\n}}\n\n#[cfg(test)]\nmod more;\n"
    );
    let w = walk(&text, 70).unwrap();
    assert_eq!(w.long, vec![("long".to_string(), 5, 71), ("after_the_tests".to_string(), 225, 71)]);
    assert_eq!(w.test_mods, vec!["more".to_string()]);
    assert!(walk(&text, 71).unwrap().long.is_empty());
    assert!(walk("fn broken( {", 70).is_err(), "a file the guard cannot parse is an error");
    let f = Path::new("/w/src/a/b.rs");
    assert_eq!(test_mod_files(f, &["tests".into()])[0], Path::new("/w/src/a/b/tests.rs"));
    assert_eq!(test_mod_files(Path::new("/w/src/a/mod.rs"), &["t".into()])[0], Path::new("/w/src/a/t.rs"));
}
