//! The CLI on tree versions lancet builds itself (no pylance): `verify` and `tree show`, and
//! every command on a corrupt tree version failing with one line that names the rule, never a
//! panic.

use std::path::Path;
use std::process::{Command, Output};

use lancet::paths::flags::FRAGMENT_TREE;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::table::{DataFile, DataFragment, Manifest};
use lancet_tree::testing::TreeBuilder;
use lancet_tree::Action;
use serde_json::Value;

fn fragment(id: u64) -> DataFragment {
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!("{id}.lance"),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: 1,
            ..Default::default()
        }],
        physical_rows: 100,
        ..Default::default()
    }
}

/// Version 1: a tree of 30 fragments (leaves of 4 under interiors of 3, an external root, two
/// appends buffered, one in `mutations_since_root`). Returns the leaf paths written.
async fn tree_table(dir: &Path) -> Vec<String> {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let built = TreeBuilder {
        records: (0..30).map(fragment).collect(),
        actions: vec![
            (30, Action::Upsert(Box::new(fragment(30)))),
            (31, Action::Upsert(Box::new(fragment(31)))),
        ],
        leaf_records: 4,
        fanout: 3,
        interior_levels: 1,
        external_root: true,
        since_root: 1,
        ..Default::default()
    }
    .build(&store)
    .await
    .unwrap();
    let m = Manifest {
        version: 1,
        reader_feature_flags: FRAGMENT_TREE,
        writer_feature_flags: FRAGMENT_TREE,
        max_fragment_id: Some(31),
        fragment_tree: Some(built.metadata),
        ..Default::default()
    };
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    built
        .objects
        .into_iter()
        .map(|(_, p)| p)
        .filter(|p| p.ends_with(".lance"))
        .collect()
}

fn lancet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn verify_and_tree_show_on_a_valid_tree() {
    let dir = tempfile::tempdir().unwrap();
    tree_table(dir.path()).await;
    let uri = dir.path().to_str().unwrap();
    let out = lancet(&["verify", uri, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["valid"], true);
    assert_eq!(v["version"], 1);
    let out = lancet(&["tree", "show", uri, "--json"]);
    assert!(out.status.success());
    let s = json(&out);
    assert_eq!(s["height"], 2);
    assert_eq!(s["leaves"], 8);
    assert_eq!(s["interiors"], 3);
    assert_eq!(s["mutations_since_root"], 1);
    assert_eq!(s["fragments"], 32);
    assert_eq!(s["root"], "external");
    let out = lancet(&["inspect", uri, "--json"]);
    let i = json(&out);
    assert_eq!(i["fragments"].as_array().unwrap().len(), 32);
    assert_eq!(i["num_rows"], 3200);
    // a flat version has no tree to show
    let flat = tempfile::tempdir().unwrap();
    let store = DatasetStore::create(flat.path().to_str().unwrap()).unwrap();
    write_manifest(
        &store,
        &ManifestContent::new(&Manifest {
            version: 1,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    let out = lancet(&["tree", "show", flat.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("flat"));
    assert!(lancet(&["verify", flat.path().to_str().unwrap()])
        .status
        .success());
}

#[tokio::test]
async fn a_corrupt_tree_version_fails_every_command_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let leaves = tree_table(dir.path()).await;
    std::fs::remove_file(dir.path().join(&leaves[3])).unwrap();
    let uri = dir.path().to_str().unwrap();

    let out = lancet(&["verify", uri]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("lancet: object-missing in ") && lines[0].ends_with(&leaves[3]),
        "{err}"
    );
    // the object is named by its absolute path, leading `/` included
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let leaf = root.join(&leaves[3]);
    assert!(lines[0].ends_with(&format!(" {}", leaf.display())), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let out = lancet(&["inspect", empty.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    let versions = std::fs::canonicalize(empty.path())
        .unwrap()
        .join("_versions");
    assert_eq!(
        err.trim_end(),
        format!(
            "lancet: no Lance table here: no manifest versions under {}",
            versions.display()
        )
    );
    let out = lancet(&["verify", uri, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["valid"], false);
    assert_eq!(v["rule"], "object-missing");
    assert!(v["object"].as_str().unwrap().ends_with(&leaves[3]));

    // every command that reads fragments meets the missing leaf
    let fails_in_one_line = |args: &[&str]| {
        let out = lancet(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} succeeded on a corrupt version"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("lancet: "), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    };
    for args in [
        &["inspect", uri, "--json"][..],
        &["rowid", uri, "--json"],
        &["index", "search", uri, "--filter", "x = 1"],
        &["tree", "show", uri],
    ] {
        fails_in_one_line(args);
    }
    // opening is lazy (the manifest and the root): a command that needs no fragment answers,
    // and a broken root fails them all
    assert!(lancet(&["index", "list", uri]).status.success());
    let root = std::fs::read_dir(dir.path().join("_bt/root"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&root, b"\xff\xff\xff").unwrap();
    for args in [
        &["inspect", uri][..],
        &["rowid", uri],
        &["index", "list", uri],
        &["fri", "show", uri],
        &["tree", "show", uri],
        &["verify", uri],
    ] {
        fails_in_one_line(args);
    }
    let v = json(&lancet(&["verify", uri, "--json"]));
    assert_eq!(v["rule"], "object-decode");
}

#[tokio::test]
async fn verify_data_opens_the_data_files_verify_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    tree_table(dir.path()).await;
    let uri = dir.path().to_str().unwrap();
    // the records name data files that were never written
    assert!(lancet(&["verify", uri]).status.success());
    let out = lancet(&["verify", uri, "--data"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("lancet: DataFileOpens in "), "{err}");
    let out = lancet(&["verify", uri, "--data", "--json"]);
    let v = json(&out);
    assert_eq!(v["rule"], "DataFileOpens", "{v}");
    assert!(
        v["object"]
            .as_str()
            .unwrap()
            .ends_with("(fragment 0 data file 0.lance)"),
        "{v}"
    );
    assert!(
        v["detail"].as_str().unwrap().ends_with("no such object"),
        "{v}"
    );
}

#[tokio::test]
async fn check_previous_compares_max_fragment_id() {
    let dir = tempfile::tempdir().unwrap();
    tree_table(dir.path()).await;
    let uri = dir.path().to_str().unwrap();
    let store = DatasetStore::open(uri).unwrap();
    let v1 = lancet::Dataset::open(uri).await.unwrap();
    let mut m = v1.storage().manifest().clone();
    m.version = 2;
    m.max_fragment_id = Some(40);
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    assert!(lancet(&["verify", uri, "--check-previous"])
        .status
        .success());
    // version 3 lowers it: valid alone, a broken lineage against version 2
    m.version = 3;
    m.max_fragment_id = Some(35);
    write_manifest(&store, &ManifestContent::new(&m))
        .await
        .unwrap();
    assert!(lancet(&["verify", uri]).status.success());
    let out = lancet(&["verify", uri, "--check-previous", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["rule"], "MaxFragmentIdMonotone");
}

#[test]
fn bench_commit_prints_one_json_object_and_verbose_logs_each_commit_to_stderr() {
    let args = [
        "bench",
        "commit",
        "--fragments",
        "3000",
        "--commits",
        "4",
        "--changed",
        "3",
        "--layout",
        "tree",
        "--json",
    ];
    let quiet = lancet(&args);
    assert!(quiet.status.success(), "{quiet:?}");
    let report = json(&quiet);
    for key in [
        "bytes_written_per_commit",
        "commit_latency_ms",
        "open_to_first_resolve",
    ] {
        assert!(report.get(key).is_some(), "{key} missing: {report}");
    }
    assert!(report["bytes_written_per_commit"].as_f64().unwrap() > 0.0);
    let quiet_err = String::from_utf8_lossy(&quiet.stderr);
    assert!(!quiet_err.contains("committed"), "{quiet_err}");

    let mut verbose_args = vec!["-vv"];
    verbose_args.extend(args);
    let verbose = lancet(&verbose_args);
    assert!(verbose.status.success(), "{verbose:?}");
    json(&verbose); // stdout still holds exactly the report
    let log = String::from_utf8_lossy(&verbose.stderr);
    // every commit's event, and the span timings -vv adds
    assert!(log.matches("committed").count() >= 4, "{log}");
    assert!(
        log.contains("tree_commit") && log.contains("time.busy"),
        "{log}"
    );
    // object requests: each manifest is put if absent, each reopen gets it back
    assert!(log.matches("put if absent").count() >= 4, "{log}");
    assert!(log.contains(" get "), "{log}");
}

#[tokio::test]
async fn cleanup_on_the_command_line_reports_per_kind_and_refuses_unsafe_arguments() {
    let dir = tempfile::tempdir().unwrap();
    tree_table(dir.path()).await;
    let uri = dir.path().to_str().unwrap();
    // an orphan an in-progress commit could own
    std::fs::create_dir_all(dir.path().join("data")).unwrap();
    std::fs::write(dir.path().join("data/young.lance"), b"x").unwrap();
    // deleting unverified objects needs the age that protects in-progress commits
    let refused = lancet(&["cleanup", uri, "--delete-unverified"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.starts_with("lancet: --delete-unverified needs --older-than"),
        "{err}"
    );
    for bad in [
        &["cleanup", uri, "--older-than", "7 parsecs"][..],
        &["cleanup", uri, "--retain-versions", "0"],
    ] {
        let out = lancet(bad);
        assert!(!out.status.success(), "{bad:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
    // the young orphan stays without --delete-unverified, and the report says so
    let dry = lancet(&["cleanup", uri, "--older-than", "0s", "--dry-run", "--json"]);
    assert!(dry.status.success(), "{dry:?}");
    let report = json(&dry);
    assert_eq!(report["dry_run"], true);
    assert_eq!(report["kept_young"], 1, "{report}");
    let out = lancet(&[
        "cleanup",
        uri,
        "--older-than",
        "0s",
        "--delete-unverified",
        "--json",
    ]);
    assert!(out.status.success(), "{out:?}");
    let report = json(&out);
    assert_eq!(report["deleted"]["data"]["objects"], 1, "{report}");
    assert!(!dir.path().join("data/young.lance").exists());
    assert!(lancet(&["verify", uri]).status.success());
}
