//! A fragment holding fields lancet does not model (a reserved ExternalFile arm, a field a
//! newer Lance added) is never written again without them (tree spec: the write "must fail if
//! any such reference cannot be preserved"): commits that re-encode it and conversions are
//! refused as `Unsupported`, naming the fragment and the fields, and write nothing visible.

mod common;
use common::CommitStaged;

use std::collections::BTreeMap;
use std::path::Path;

use common::fragment;
use lancet::paths::manifest::{write_manifest, ManifestContent};
use lancet::paths::DatasetStore;
use lancet::proto::prost::Message;
use lancet::proto::table::Manifest;
use lancet::tree::{Action, TreeWriterConfig};
use lancet::{Caches, Dataset, ErrorKind};

/// Fragment 2's bytes with `extra` (raw fields) appended, as a Manifest `fragments` entry
/// (field 2) to append to a manifest's encoding.
fn extra_fragment(extra: &[u8]) -> Vec<u8> {
    let mut f = fragment(2).encode_to_vec();
    f.extend_from_slice(extra);
    let mut out = vec![0x12];
    lancet::proto::prost::encoding::encode_varint(f.len() as u64, &mut out);
    out.extend(f);
    out
}

/// Version 1: fragments 0 and 1, and fragment 2 stored with `extra` raw fields.
async fn table(dir: &Path, extra: &[u8]) -> Dataset {
    let store = DatasetStore::create(dir.to_str().unwrap()).unwrap();
    let m = Manifest {
        version: 1,
        fragments: vec![fragment(0), fragment(1)],
        max_fragment_id: Some(2),
        timestamp: Some(lancet::paths::manifest::now_timestamp()),
        ..Default::default()
    };
    write_manifest(
        &store,
        &ManifestContent {
            unknown_fields: &extra_fragment(extra),
            ..ManifestContent::new(&m)
        },
    )
    .await
    .unwrap();
    Dataset::open_with(store, None, Caches::new(Default::default()))
        .await
        .unwrap()
}

fn versions_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::files(dir)
        .into_iter()
        .filter(|f| f.starts_with("_versions/"))
        .map(|f| {
            let bytes = std::fs::read(dir.join(&f)).unwrap();
            (f, bytes)
        })
        .collect()
}

fn append() -> Vec<(u64, Action)> {
    vec![(3, Action::Upsert(Box::new(fragment(3))))]
}

#[tokio::test]
async fn a_fragment_with_an_external_file_arm_is_never_written_again() {
    // field 6: external_row_ids, an ExternalFile {path: "r"}
    let external = [0x32, 0x03, 0x0a, 0x01, b'r'];
    // field 40: a field a newer writer added
    let newer = [0xc0, 0x02, 0x01];
    for (extra, named) in [(&external[..], "(6)"), (&newer[..], "(40)")] {
        let dir = tempfile::tempdir().unwrap();
        let ds = table(dir.path(), extra).await;
        assert_eq!(ds.fragments().await.unwrap().len(), 3);
        let before = versions_dir(dir.path());
        let err = ds
            .commit_staged(
                ds.storage().manifest().clone(),
                &[],
                &append(),
                &TreeWriterConfig::default(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert_eq!(
            err.invariant(),
            Some(lancet::Invariant::UnmodelledFieldsKept)
        );
        let message = err.to_string();
        assert!(
            message.contains("fragment 2: holds fields lancet does not model")
                && message.contains(named),
            "{message}"
        );
        let err = ds
            .storage()
            .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported, "{err}");
        assert_eq!(
            err.invariant(),
            Some(lancet::Invariant::UnmodelledFieldsKept)
        );
        assert_eq!(versions_dir(dir.path()), before, "a refused write wrote");
    }
    // the same table without the extra fields commits and converts
    let dir = tempfile::tempdir().unwrap();
    let ds = table(dir.path(), &[]).await;
    let next = ds
        .commit_staged(
            ds.storage().manifest().clone(),
            &[],
            &append(),
            &TreeWriterConfig::default(),
        )
        .await
        .unwrap();
    next.storage()
        .convert_to_tree(&TreeWriterConfig::default(), |_, _| {})
        .await
        .unwrap();
}
