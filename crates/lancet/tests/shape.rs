//! The facade's shape, checked on its source: a thin crate (at most 5,000 lines of code
//! before the tests: not blank, not a comment), files a reader can hold (at most 500 lines
//! before their tests), functions read whole (at most 80 lines), and `Dataset` a type of
//! delegations (`impl Dataset` in `dataset.rs` only, at most 35 `pub` methods). The file and
//! function limits hold for `lancet-read`, the read side beneath it, too.

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 500;
const MAX_FUNCTION_LINES: usize = 80;
// 36 since `count_rows` (session 33): pylance's count rule lives once, in lancet-read, and
// the command line and the Python package reach it through the handle
const MAX_DATASET_METHODS: usize = 36;
const MAX_FACADE_CODE_LINES: usize = 5_000;

/// The facade's sources.
fn sources() -> Vec<(PathBuf, String)> {
    sources_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The facade's and `lancet-read`'s sources.
fn composed_sources() -> Vec<(PathBuf, String)> {
    let mut out = sources();
    out.extend(sources_in(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../lancet-read/src"),
    ));
    out
}

fn sources_in(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(dir)
        .expect("src/ lists")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a source file reads");
            (p, text)
        })
        .collect();
    out.sort();
    out
}

/// The lines before the file's test module.
fn before_tests(text: &str) -> Vec<&str> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .collect()
}

/// Each function's name and length in lines: from its `fn` line to the closing brace at
/// its indentation.
fn functions<'a>(lines: &[&'a str]) -> Vec<(&'a str, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let body = line.trim_start();
        let indent = line.len() - body.len();
        let signature = ["pub(crate) ", "pub ", ""].iter().any(|vis| {
            ["async fn ", "fn "]
                .iter()
                .any(|f| body.starts_with(&format!("{vis}{f}")))
        });
        if signature && !body.ends_with(';') {
            let name = body
                .split("fn ")
                .nth(1)
                .and_then(|rest| rest.split(['(', '<']).next())
                .unwrap_or(body);
            let close = format!("{}}}", " ".repeat(indent));
            let end = (i..lines.len())
                .find(|j| lines[*j] == close)
                .unwrap_or(lines.len() - 1);
            out.push((name, end - i + 1));
            i = end;
        }
        i += 1;
    }
    out
}

/// Lines of code: neither blank nor a comment (`//`, `///`, `//!`).
fn code_lines(lines: &[&str]) -> usize {
    lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

#[test]
fn the_facade_is_thin() {
    let total: usize = sources()
        .iter()
        .map(|(_, text)| code_lines(&before_tests(text)))
        .sum();
    assert!(
        total <= MAX_FACADE_CODE_LINES,
        "the facade has {total} lines of code before its tests (at most {MAX_FACADE_CODE_LINES})"
    );
}

#[test]
fn every_facade_file_is_short() {
    for (path, text) in composed_sources() {
        let n = before_tests(&text).len();
        assert!(
            n <= MAX_FILE_LINES,
            "{} has {n} lines before its tests (at most {MAX_FILE_LINES})",
            path.display()
        );
    }
}

#[test]
fn every_facade_function_reads_whole() {
    for (path, text) in composed_sources() {
        for (name, n) in functions(&before_tests(&text)) {
            assert!(
                n <= MAX_FUNCTION_LINES,
                "{}: fn {name} has {n} lines (at most {MAX_FUNCTION_LINES})",
                path.display()
            );
        }
    }
}

#[test]
fn dataset_is_one_block_of_delegations() {
    for (path, text) in sources() {
        let here = text.lines().any(|l| l.starts_with("impl Dataset"));
        let is_dataset = path.file_name().is_some_and(|n| n == "dataset.rs");
        assert_eq!(here, is_dataset, "{}: impl Dataset", path.display());
        if is_dataset {
            let public = text
                .lines()
                .filter(|l| l.starts_with("    pub fn ") || l.starts_with("    pub async fn "))
                .count();
            assert!(
                public <= MAX_DATASET_METHODS,
                "Dataset has {public} pub methods (at most {MAX_DATASET_METHODS})"
            );
        }
    }
}

#[test]
fn the_shape_checks_see_what_they_check() {
    // the measures find what they measure, so the checks above can fail
    let lines = [
        "fn a() {",
        "    x;",
        "}",
        "    pub(crate) async fn b(",
        "    ) {",
        "    }",
    ];
    assert_eq!(functions(&lines), [("a", 3), ("b", 3)]);
    let text = "x\n#[cfg(test)]\nmod tests {}\n";
    assert_eq!(before_tests(text), ["x"]);
    assert_eq!(code_lines(&["a", "", "  // c", "/// d", "//! e", "  b"]), 2);
    assert!(composed_sources().len() > sources().len());
    let dataset = sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("dataset.rs"))
        .expect("dataset.rs");
    assert!(dataset.1.lines().any(|l| l.starts_with("    pub fn ")));
}
