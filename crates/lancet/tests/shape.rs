//! The facade's shape, checked on its source: files a reader can hold (at most 500 lines
//! before their tests), functions read whole (at most 80 lines), and `Dataset` a type of
//! delegations (`impl Dataset` in `dataset.rs` only, at most 35 `pub` methods).

use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 500;
const MAX_FUNCTION_LINES: usize = 80;
const MAX_DATASET_METHODS: usize = 35;

fn sources() -> Vec<(PathBuf, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
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

#[test]
fn every_facade_file_is_short() {
    for (path, text) in sources() {
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
    for (path, text) in sources() {
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
    let dataset = sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("dataset.rs"))
        .expect("dataset.rs");
    assert!(dataset.1.lines().any(|l| l.starts_with("    pub fn ")));
}
