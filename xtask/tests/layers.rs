//! The layer table of `docs/architecture.md`, enforced on the resolved dependency graph
//! (`cargo metadata`): every workspace crate depends only on crates of lower layers, and a
//! crate the document lists as pure reaches neither `object_store` nor `tokio`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// `crate -> layer` from the document's table (`L0 lancet-proto ...`, `bin lancet-cli ...`).
fn layers(doc: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let mut words = line.split_whitespace();
        let (Some(layer), Some(name)) = (words.next(), words.next()) else {
            continue;
        };
        let level = match layer {
            "bin" => 9,
            l => match l.strip_prefix('L').and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => continue,
            },
        };
        if name.starts_with("lancet") {
            out.insert(name.to_string(), level);
        }
    }
    out
}

/// The crates the document calls pure.
fn pure(doc: &str) -> BTreeSet<String> {
    let line = doc
        .lines()
        .find(|l| l.starts_with("Pure crates"))
        .expect("docs/architecture.md names its pure crates");
    let rest = doc.split(line).nth(1).unwrap_or_default();
    let text = format!("{line}{}", rest.split("\n\n").next().unwrap_or_default());
    let list = text
        .split("I/O):")
        .nth(1)
        .expect("the pure list after `I/O):`");
    list.split(|c: char| c == ',' || c == '.' || c.is_whitespace())
        .filter(|w| w.starts_with("lancet"))
        .map(str::to_string)
        .collect()
}

struct Graph {
    names: BTreeMap<String, String>,
    /// id -> normal (non-dev, non-build) dependency ids
    deps: BTreeMap<String, Vec<String>>,
}

fn graph() -> Graph {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = m["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["id"].as_str().unwrap().to_string(),
                p["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let deps = m["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let normal = n["deps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().unwrap().to_string())
                .collect();
            (n["id"].as_str().unwrap().to_string(), normal)
        })
        .collect();
    Graph { names, deps }
}

impl Graph {
    fn id(&self, name: &str) -> &str {
        self.names
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .map(|(id, _)| id.as_str())
            .unwrap_or_else(|| panic!("{name} is not in the workspace"))
    }

    fn direct(&self, name: &str) -> BTreeSet<String> {
        self.deps[self.id(name)]
            .iter()
            .map(|d| self.names[d].clone())
            .collect()
    }

    fn reachable(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![self.id(name).to_string()];
        while let Some(id) = stack.pop() {
            for d in &self.deps[&id] {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen.iter().map(|id| self.names[id].clone()).collect()
    }
}

/// The violations of `layers` and `pure` in `g`.
fn violations(g: &Graph, layers: &BTreeMap<String, u32>, pure: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, level) in layers {
        for dep in g.direct(name) {
            if let Some(l) = layers.get(&dep) {
                if l >= level {
                    out.push(format!("{name} (L{level}) depends on {dep} (L{l})"));
                }
            }
        }
    }
    for name in pure {
        let reached = g.reachable(name);
        for io in ["object_store", "tokio"] {
            if reached.contains(io) {
                out.push(format!("{name} is pure but reaches {io}"));
            }
        }
    }
    out
}

#[test]
fn dependencies_follow_the_documented_layers() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let layers = layers(&doc);
    let pure = pure(&doc);
    // the table lists every workspace crate but xtask
    for name in [
        "lancet-proto",
        "lancet-paths",
        "lancet-file",
        "lancet-txn",
        "lancet-filter",
        "lancet-rowid",
        "lancet-btree",
        "lancet-reuse",
        "lancet-tree",
        "lancet",
        "lancet-cli",
        "lancet-python",
    ] {
        assert!(
            layers.contains_key(name),
            "{name} missing from the layer table"
        );
    }
    assert_eq!(
        pure,
        ["lancet-filter", "lancet-proto", "lancet-txn"]
            .map(String::from)
            .into(),
    );
    let g = graph();
    let broken = violations(&g, &layers, &pure);
    assert!(broken.is_empty(), "{broken:#?}");
}

/// The check itself fails on what it forbids: the same graph judged by a table that puts
/// lancet-tree below lancet-paths, or calls lancet-paths pure.
#[test]
fn the_layer_check_refuses_a_dependency_the_table_does_not_allow() {
    let doc = std::fs::read_to_string(root().join("docs/architecture.md")).unwrap();
    let g = graph();
    let mut layers = layers(&doc);
    layers.insert("lancet-tree".into(), 1);
    let broken = violations(&g, &layers, &BTreeSet::new());
    assert!(
        broken
            .iter()
            .any(|v| v.starts_with("lancet-tree (L1) depends on lancet-paths")),
        "{broken:?}"
    );
    let broken = violations(
        &g,
        &self::layers(&doc),
        &["lancet-paths".to_string()].into(),
    );
    assert!(
        broken.contains(&"lancet-paths is pure but reaches object_store".to_string()),
        "{broken:?}"
    );
}
