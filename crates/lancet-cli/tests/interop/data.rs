//! Data in and out against pylance: the same sequence (create from Parquet, append from Arrow
//! IPC, delete `id % 7 = 3`, update `x = x * 2, s = 'u'` where `id < 60`, append from CSV)
//! run by `lancet` on one table and by pylance on a twin, with and without stable row ids,
//! flat and as a fragment tree. Rows, their order and `_rowid` must be pylance's; scans,
//! takes and index searches of either table must answer as pylance does.

use std::path::Path;

use serde_json::{json, Value};

use super::{lancet, lancet_search, peer};

/// The data sequence run by `lancet` on `uri`, the files in `dir`; a BTree on `id` is built
/// right after the create, so later appends are answered by scanning.
fn lancet_sequence(uri: &str, dir: &Path, stable: bool, tree: bool) {
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let mut create = vec!["create", uri, "--max-rows-per-file", "40"];
    let parquet = file("part1.parquet");
    create.extend(["--from", &parquet]);
    if stable {
        create.push("--stable-row-ids");
    }
    if tree {
        create.extend(["--layout", "tree"]);
    }
    lancet(&create);
    lancet(&["index", "build", uri, "--column", "id"]);
    lancet(&["append", uri, "--from", &file("part2.arrow")]);
    let deleted: Value = serde_json::from_str(&lancet(&[
        "delete",
        uri,
        "--filter",
        "id % 7 = 3",
        "--json",
    ]))
    .unwrap();
    assert_eq!(deleted, json!({"deleted_rows": 21, "version": 4}));
    let updated: Value = serde_json::from_str(&lancet(&[
        "update",
        uri,
        "--filter",
        "id < 60",
        "--set",
        "x = x * 2",
        "--set",
        "s = 'u'",
        "--json",
    ]))
    .unwrap();
    assert_eq!(updated, json!({"updated_rows": 51, "version": 5}));
    lancet(&["append", uri, "--from", &file("part3.csv")]);
}

/// `lancet scan` with `args`, as pylance's `table` prints rows: one array per row in
/// column order.
fn lancet_rows(uri: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["scan", uri, "--format", "jsonl"];
    all.extend(args);
    in_order(&lancet(&all))
}

/// JSON lines as arrays, each row's values in the order its keys were written.
fn in_order(lines: &str) -> Vec<Value> {
    lines
        .lines()
        .map(|l| Value::Array(serde_json::from_str::<Ordered>(l).unwrap().0))
        .collect()
}

/// A JSON object's values in the order they were written (serde_json's map sorts its keys).
struct Ordered(Vec<Value>);

impl<'de> serde::Deserialize<'de> for Ordered {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Ordered;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut m: M,
            ) -> Result<Ordered, M::Error> {
                let mut out = Vec::new();
                while let Some((_, v)) = m.next_entry::<String, Value>()? {
                    out.push(v);
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

fn pylance_rows(uri: &str, options: Value) -> Vec<Value> {
    peer(&["table", uri, &options.to_string()])["rows"]
        .as_array()
        .unwrap()
        .clone()
}

/// Scans with options, as `lancet scan` flags and as pylance's `to_table` arguments.
fn scans() -> Vec<(Vec<&'static str>, Value)> {
    vec![
        (vec!["--with-row-id"], json!({"with_row_id": true})),
        (
            vec!["--with-row-id", "--with-row-address"],
            json!({"with_row_id": true, "with_row_address": true}),
        ),
        (
            vec!["--filter", "x > 100 AND s IS NOT NULL", "--with-row-id"],
            json!({"filter": "x > 100 AND s IS NOT NULL", "with_row_id": true}),
        ),
        (
            vec!["--columns", "s,id", "--filter", "id % 5 = 0"],
            json!({"columns": ["s", "id"], "filter": "id % 5 = 0"}),
        ),
        (
            vec!["--limit", "7", "--offset", "30", "--with-row-id"],
            json!({"limit": 7, "offset": 30, "with_row_id": true}),
        ),
        (
            vec!["--filter", "id >= 40", "--limit", "5", "--offset", "3"],
            json!({"filter": "id >= 40", "limit": 5, "offset": 3}),
        ),
        (
            vec!["--filter", "s = 'u'", "--columns", "id"],
            json!({"filter": "s = 'u'", "columns": ["id"]}),
        ),
    ]
}

#[test]
fn the_data_sequence_reads_as_pylance_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    peer(&["data-files", d]);
    for stable in [false, true] {
        let mine = dir.path().join(format!("lancet-{stable}"));
        let mine = mine.to_str().unwrap();
        let twin = dir.path().join(format!("pylance-{stable}"));
        let twin = twin.to_str().unwrap();
        lancet_sequence(mine, dir.path(), stable, false);
        peer(&["data-twin", twin, d, &stable.to_string()]);
        let all = json!({"with_row_id": true});
        // the same rows in the same order, and the same _rowid
        let theirs = pylance_rows(twin, all.clone());
        assert_eq!(theirs.len(), 180 - 21);
        assert_eq!(pylance_rows(mine, all.clone()), theirs, "stable={stable}");
        // lancet scans both tables as pylance does, with every option
        for (args, options) in scans() {
            for uri in [mine, twin] {
                assert_eq!(
                    lancet_rows(uri, &args),
                    pylance_rows(uri, options.clone()),
                    "stable={stable} {uri} {args:?}"
                );
            }
        }
        // take by row id, in the order asked
        let ids: Vec<u64> = [120, 3, 150, 59]
            .iter()
            .map(|k: &usize| theirs[*k].as_array().unwrap()[3].as_u64().unwrap())
            .collect();
        let ids_json = serde_json::to_string(&ids).unwrap();
        let id_args: Vec<String> = ids.iter().map(u64::to_string).collect();
        for uri in [mine, twin] {
            let mut args = vec![
                "take",
                uri,
                "--format",
                "jsonl",
                "--columns",
                "id,s",
                "--row-ids",
            ];
            args.extend(id_args.iter().map(String::as_str));
            let taken = in_order(&lancet(&args));
            let want = peer(&["take-rows", uri, &ids_json, "id,s"]);
            assert_eq!(Value::Array(taken), want["rows"], "stable={stable} {uri}");
        }
        // the BTree built before the appends answers exactly, the rest scanned
        for f in [
            "id = 13",
            "id >= 95 AND id < 160",
            "id IN (3, 10, 59, 60, 151)",
            "x > 200",
        ] {
            let filters = serde_json::to_string(&[f]).unwrap();
            let want = peer(&["filters", mine, "6", &filters]);
            let got = lancet_search(mine, "6", f);
            assert_eq!(got["row_ids"], want[0]["row_ids"], "stable={stable} {f}");
            assert!(got["scanned_fragments"].as_u64().unwrap() > 0, "{f}: {got}");
        }
        let got = lancet_search(mine, "6", "id = 13");
        assert!(got["pages_read"].as_u64().unwrap() > 0, "{got}");

        // the same sequence on a tree table scans exactly like the flat one
        let tree = dir.path().join(format!("tree-{stable}"));
        let tree = tree.to_str().unwrap();
        lancet_sequence(tree, dir.path(), stable, true);
        for (args, _) in scans() {
            let flat_rows = lancet_rows(mine, &args);
            let tree_rows = lancet_rows(tree, &args);
            assert_eq!(tree_rows, flat_rows, "tree stable={stable} {args:?}");
        }
        lancet(&["verify", tree, "--data"]);
        // flattened, pylance reads every row and _rowid
        lancet(&["tree", "flatten", tree]);
        assert_eq!(
            pylance_rows(tree, all.clone()),
            pylance_rows(mine, all.clone())
        );
    }
}
