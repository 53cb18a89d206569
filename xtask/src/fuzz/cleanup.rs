//! Targets `refs` (Lance's tag and branch JSON) and `cleanup_plan` (the decision of what a
//! cleanup deletes, driven by `arbitrary`: listings, references and ages).

use std::collections::HashSet;

use arbitrary::Arbitrary;
use lancet_paths::cleanup::{plan, Decide, Listed, References};
use lancet_paths::refs::{decode_branch, decode_tag};
use lancet_paths::PathsError;
use object_store::path::Path;

use super::{unstructured, Target};

pub struct RefsTarget;

impl Target for RefsTarget {
    fn name(&self) -> &'static str {
        "refs"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            br#"{"branch": null, "version": 2, "createdAt": "2026-12-01T09:04:13.120019853Z", "updatedAt": "2026-12-01T09:04:13.120019853Z", "manifestSize": 459, "metadata": {}}"#.to_vec(),
            br#"{"parentBranch": null, "identifier": {"version_mapping": [[2, "fc5ba125693743a2938a04b257ce46ed"]]}, "parentVersion": 2, "version": 3, "createAt": 1796116035, "manifestSize": 459, "metadata": {}}"#.to_vec(),
        ]
    }

    fn near_misses(&self) -> Vec<Vec<u8>> {
        vec![
            br#"{"branch": null}"#.to_vec(),
            br#"{"version": -1}"#.to_vec(),
            b"[".repeat(300),
        ]
    }

    fn check(&self, input: &[u8]) -> bool {
        let path = Path::from("_refs/tags/t.json");
        let tag = decode_tag("t", &path, input);
        let branch = decode_branch("b", &path, input);
        for e in [tag.as_ref().err(), branch.as_ref().err()]
            .into_iter()
            .flatten()
        {
            assert!(matches!(e, PathsError::CorruptRef { .. }), "{e}");
        }
        if let Ok(t) = &tag {
            // accepted only with a `version` key and its number (fields the decoder skips are
            // not validated further, as serde skips them)
            let text = String::from_utf8_lossy(input);
            assert!(
                text.contains("\"version\""),
                "accepted without a version: {text}"
            );
            assert!(text.contains(&t.version.to_string()), "{text}");
            assert_eq!(
                decode_tag("t", &path, input).ok().map(|d| d.version),
                Some(t.version)
            );
        }
        tag.is_ok()
    }
}

#[derive(Debug, Arbitrary)]
struct PlanInput {
    listing: Vec<(u8, String, u16, i8)>,
    referenced: Vec<(u8, String)>,
    verified: Vec<(u8, String)>,
    removed: Vec<String>,
    threshold: i8,
}

const PREFIXES: [&str; 9] = [
    "_versions/",
    "_transactions/",
    "data/",
    "_deletions/",
    "_indices/",
    "_fri/",
    "_bt/leaf/",
    "_refs/tags/",
    "tree/",
];

fn with_prefix(p: u8, rest: &str) -> String {
    let prefix = PREFIXES
        .get(usize::from(p) % PREFIXES.len())
        .copied()
        .unwrap_or("data/");
    format!("{prefix}{rest}")
}

/// `_indices/{x}/...` and `_fri/{x}/...` are referenced by their directory name.
fn add(refs: &mut References, p: u8, rest: &str) {
    let path = with_prefix(p, rest);
    if let Some(dir) = path
        .strip_prefix("_indices/")
        .and_then(|r| r.split('/').next())
    {
        refs.add_index(dir);
    } else if let Some(dir) = path.strip_prefix("_fri/").and_then(|r| r.split('/').next()) {
        refs.add_row_map(dir);
    } else {
        refs.add_path(path);
    }
}

pub struct CleanupPlanTarget;

impl Target for CleanupPlanTarget {
    fn name(&self) -> &'static str {
        "cleanup_plan"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![vec![0; 64], (0..=255u8).collect(), vec![7; 200]]
    }

    fn check(&self, input: &[u8]) -> bool {
        let Ok(input) = PlanInput::arbitrary_take_rest(unstructured(input)) else {
            return false;
        };
        let mut referenced = References::default();
        for (p, rest) in &input.referenced {
            add(&mut referenced, *p, rest);
        }
        let mut verified = References::default();
        for (p, rest) in &input.verified {
            add(&mut verified, *p, rest);
        }
        let removed: HashSet<String> = input
            .removed
            .iter()
            .map(|r| format!("_versions/{r}"))
            .collect();
        let listing: Vec<Listed> = input
            .listing
            .iter()
            .map(|(p, rest, size, age)| Listed {
                path: with_prefix(*p, rest),
                size: u64::from(*size),
                last_modified_ms: i64::from(*age),
            })
            .collect();
        let decided = plan(
            listing.clone(),
            Decide {
                referenced: &referenced,
                verified: &verified,
                removed_manifests: &removed,
                unverified_before_ms: i64::from(input.threshold),
            },
        );
        for (o, _) in &decided.delete {
            // never a listed object it was not given, never outside the candidates
            assert!(listing.contains(o), "{o:?}");
            assert!(
                !o.path.starts_with("_refs/") && !o.path.starts_with("tree/"),
                "{o:?}"
            );
            // never a referenced object (a manifest goes only when its version is removed)
            if o.path.starts_with("_versions/") && !o.path.contains("/.tmp") {
                assert!(removed.contains(&o.path), "{o:?}");
                continue;
            }
            let named = match o.path.split('/').collect::<Vec<_>>().as_slice() {
                ["_indices", dir, ..] => {
                    let mut r = References::default();
                    r.add_index(*dir);
                    referenced_contains(&referenced, &r)
                }
                ["_fri", dir, ..] => {
                    let mut r = References::default();
                    r.add_row_map(*dir);
                    referenced_contains(&referenced, &r)
                }
                _ => {
                    let mut r = References::default();
                    r.add_path(o.path.clone());
                    referenced_contains(&referenced, &r)
                }
            };
            assert!(!named, "deleted a referenced object {o:?}");
        }
        let totals: u64 = decided.totals().values().map(|(n, _)| n).sum();
        assert_eq!(totals as usize, decided.delete.len());
        true
    }
}

/// Whether every reference of `probe` is in `refs`.
fn referenced_contains(refs: &References, probe: &References) -> bool {
    let mut both = refs.clone();
    both.extend(probe.clone());
    both.len() == refs.len()
}
