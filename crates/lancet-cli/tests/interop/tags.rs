//! Issue 32: tags written by lancet are pylance's, and the reverse; read commands open a
//! version by its tag; bad names and missing tags are refused with nothing written.

use super::*;

fn tag_map(v: &Value) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = v["tags"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect();
    out.sort();
    out
}

fn lancet_tags(uri: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = lancet(&["tag", "list", uri])
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["name"].as_str().unwrap().to_string(),
                v["version"].as_u64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn tags_are_shared_with_pylance_and_name_versions_for_reads() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    // two versions: created, then rows deleted
    let latest = peer(&["create", uri, "30"])["version"].as_u64().unwrap();
    assert_eq!(latest, 2);
    let rows_at = |version: &str| {
        let v = peer(&["scan", uri, version]);
        v["rows"].clone()
    };
    // lancet tags version 1 and the latest; pylance sees both
    lancet(&["tag", "create", uri, "first", "--version", "1"]);
    lancet(&["tag", "create", uri, "latest"]);
    let theirs = peer(&["tags", uri, "list"]);
    assert_eq!(
        tag_map(&theirs),
        [("first".to_string(), 1), ("latest".to_string(), latest)]
    );
    let opened = peer(&["tags", uri, "open", "first"]);
    assert_eq!(opened["version"], 1);
    assert_eq!(opened["rows"], rows_at("1"));
    // pylance tags a version; lancet lists it and reads by it
    peer(&["tags", uri, "create", "py", "1"]);
    assert_eq!(
        lancet_tags(uri),
        [
            ("first".to_string(), 1),
            ("latest".to_string(), latest),
            ("py".to_string(), 1)
        ]
    );
    let by_tag = lancet(&["scan", uri, "--tag", "py", "--format", "jsonl"]);
    let by_version = lancet(&["scan", uri, "--version", "1", "--format", "jsonl"]);
    assert_eq!(by_tag, by_version);
    assert!(lancet(&["inspect", uri, "--tag", "py", "--json"]).contains("\"version\":1"));
    // moved and deleted by lancet, as pylance then sees
    lancet(&["tag", "update", uri, "py", "--version", &latest.to_string()]);
    lancet(&["tag", "delete", uri, "first"]);
    assert_eq!(
        tag_map(&peer(&["tags", uri, "list"])),
        [("latest".to_string(), latest), ("py".to_string(), latest)]
    );
    // and the reverse
    peer(&["tags", uri, "update", "latest", "1"]);
    peer(&["tags", uri, "delete", "py"]);
    assert_eq!(lancet_tags(uri), [("latest".to_string(), 1)]);

    // refused, typed, with nothing written
    let before = std::fs::read_dir(dir.path().join("t/_refs/tags"))
        .unwrap()
        .count();
    for (args, says) in [
        (
            vec!["tag", "create", uri, "latest"],
            "tag \"latest\" already exists",
        ),
        (vec!["tag", "create", uri, "a/b"], "invalid reference name"),
        (vec!["tag", "create", uri, ".x"], "invalid reference name"),
        (
            vec!["tag", "create", uri, "far", "--version", "99"],
            "version 99 not found",
        ),
        (
            vec!["tag", "delete", uri, "nope"],
            "tag \"nope\" does not exist",
        ),
        (
            vec!["tag", "update", uri, "nope"],
            "tag \"nope\" does not exist",
        ),
        (
            vec!["scan", uri, "--tag", "nope"],
            "tag \"nope\" does not exist",
        ),
    ] {
        super::schema::refused(&args, says, uri);
    }
    let after = std::fs::read_dir(dir.path().join("t/_refs/tags"))
        .unwrap()
        .count();
    assert_eq!(before, after);
    assert_eq!(lancet_tags(uri), [("latest".to_string(), 1)]);
}

/// Branches in Lance's layout: a branch lancet creates is pylance's (listed, read, and
/// written through `checkout_version((name, None))`), one pylance creates is lancet's (listed,
/// read and written at `tree/NAME`); bad names and an existing branch are refused.
#[test]
fn branches_are_shared_with_pylance_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    peer(&["create", uri, "30"]);
    let v1 = peer(&["scan", uri, "1"]);
    // lancet branches version 1; pylance lists it and reads version 1's rows there
    lancet(&["branch", "create", uri, "feat", "--version", "1"]);
    let theirs = peer(&["branches", uri, "list"]);
    assert_eq!(theirs["branches"]["feat"], 1, "{theirs}");
    let rows = peer(&["branches", uri, "rows", "feat"]);
    assert_eq!(rows["rows"], v1["rows"]);
    // lancet writes on its branch (a dataset root of its own); pylance reads the new rows
    let feat = format!("{uri}/tree/feat");
    let extra = dir.path().join("rows.csv");
    std::fs::write(&extra, "id,name,value\n1000,x,1.5\n").unwrap();
    lancet(&["append", &feat, "--from", extra.to_str().unwrap()]);
    let rows = peer(&["branches", uri, "rows", "feat"]);
    assert_eq!(rows["version"], 2);
    assert_eq!(
        rows["rows"].as_array().unwrap().len(),
        v1["rows"].as_array().unwrap().len() + 1
    );
    // the main line is untouched
    assert_eq!(peer(&["scan", uri])["version"], 2);
    // pylance branches version 2 and writes on it; lancet lists and reads it
    peer(&["branches", uri, "create", "dev", "2"]);
    peer(&["branches", uri, "append", "dev", "500"]);
    let listed: Vec<Value> = lancet(&["branch", "list", uri])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<(&str, u64)> = listed
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap(),
                b["parent_version"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("dev", 2), ("feat", 1)]);
    let dev = format!("{uri}/tree/dev");
    let mine = lancet(&["scan", &dev, "--format", "jsonl"]);
    let theirs = peer(&["branches", uri, "rows", "dev"]);
    assert_eq!(
        mine.lines().count(),
        theirs["rows"].as_array().unwrap().len()
    );
    lancet(&["verify", &dev, "--data"]);
    // refused, typed, one line, nothing written
    for (args, says) in [
        (
            vec!["branch", "create", uri, "feat"],
            "branch \"feat\" already exists",
        ),
        (
            vec!["branch", "create", uri, "main"],
            "reserved for the default branch",
        ),
        (
            vec!["branch", "create", uri, "a//b"],
            "invalid reference name",
        ),
        (
            vec!["branch", "create", uri, "far", "--version", "99"],
            "version 99 not found",
        ),
    ] {
        super::schema::refused(&args, says, uri);
    }
    assert!(!dir.path().join("t/tree/far").exists());
    assert!(!dir.path().join("t/tree/main").exists());
}

/// Issue 32, branches: pylance forks a branch from a branch and tags a branch's version;
/// lancet reads either with `--branch` / `--tag` as pylance reads it; deleting a branch
/// others fork from, or one a tag names, is refused with nothing deleted; deleting the rest
/// removes their references and versions, and pylance lists none.
#[test]
fn branches_of_branches_tags_on_branches_and_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let uri = dir.path().join("t");
    let uri = uri.to_str().unwrap();
    peer(&["create", uri, "30"]);
    lancet(&["branch", "create", uri, "feat"]);
    peer(&["branches", uri, "append", "feat", "500"]);
    // `create` makes versions 1 and 2: feat forks from 2 and its append is 3
    peer(&["branches", uri, "create-from", "sub", "feat:3"]);
    peer(&["branches", uri, "append", "sub", "600"]);
    let count = |args: &[&str]| lancet(args).lines().count();
    for (branch, version) in [("feat", "3"), ("sub", "4")] {
        let theirs = peer(&["branches", uri, "rows", branch]);
        assert_eq!(theirs["version"].to_string(), version);
        let mine = count(&["scan", uri, "--branch", branch, "--format", "jsonl"]);
        assert_eq!(mine, theirs["rows"].as_array().unwrap().len(), "{branch}");
    }
    // an older version of a branch, and a tag on one
    let at_fork = count(&[
        "scan",
        uri,
        "--branch",
        "feat",
        "--version",
        "2",
        "--format",
        "jsonl",
    ]);
    assert_eq!(
        at_fork,
        peer(&["scan", uri, "2"])["rows"].as_array().unwrap().len()
    );
    peer(&["branches", uri, "tag", "t-sub", "sub:4"]);
    assert_eq!(
        count(&["scan", uri, "--tag", "t-sub", "--format", "jsonl"]),
        count(&["scan", uri, "--branch", "sub", "--format", "jsonl"])
    );
    // lancet forks a branch from pylance's branch: pylance reads it, and its identifier
    // extends the parent's (pylance refuses to delete the parent while it exists)
    lancet(&["branch", "create", uri, "sub2", "--from-branch", "sub"]);
    let theirs = peer(&["branches", uri, "rows", "sub2"]);
    assert_eq!(theirs["version"], 4);
    assert_eq!(
        count(&["scan", uri, "--branch", "sub2", "--format", "jsonl"]),
        theirs["rows"].as_array().unwrap().len()
    );
    assert_eq!(peer(&["branches", uri, "list"])["branches"]["sub2"], 4);
    let refusal = peer(&["branches", uri, "delete", "sub"]);
    assert!(
        refusal["refused"]
            .as_str()
            .is_some_and(|r| r.contains("referenced")),
        "{refusal}"
    );
    // refused while in use; a missing branch is not found
    let refused = super::schema::refused;
    refused(
        &["branch", "delete", uri, "feat"],
        "in use by branch \"sub\"",
        uri,
    );
    refused(
        &["branch", "delete", uri, "sub"],
        "in use by branch \"sub2\"",
        uri,
    );
    lancet(&["branch", "delete", uri, "sub2"]);
    refused(
        &["branch", "delete", uri, "sub"],
        "in use by tag \"t-sub\"",
        uri,
    );
    refused(
        &["branch", "delete", uri, "nope"],
        "branch \"nope\" does not exist",
        uri,
    );
    refused(
        &["scan", uri, "--branch", "nope"],
        "branch \"nope\" does not exist",
        uri,
    );
    assert!(dir.path().join("t/tree/feat").exists());
    lancet(&["tag", "delete", uri, "t-sub"]);
    for b in ["sub", "feat"] {
        lancet(&["branch", "delete", uri, b]);
        assert!(!dir.path().join("t/tree").join(b).exists(), "{b}");
    }
    assert_eq!(peer(&["branches", uri, "list"])["branches"], json!({}));
    // the main line is untouched
    lancet(&["verify", uri, "--data"]);
    assert_eq!(peer(&["scan", uri])["version"], 2);
}
