//! Targets `base_id` (BasePath tables and reference resolution) and `tree_path` (tree object
//! path rules), driven by `arbitrary` from the fuzz bytes.

use arbitrary::Arbitrary;
use lancet_paths::files::data_file_location;
use lancet_paths::tree_paths::{root_path_from_uuid_bytes, validate_tree_path, TreeObjectKind};
use lancet_paths::{BaseRequirement, BaseTable, PathsError, ResolvedBase};
use lancet_proto::table::{BasePath, DataFile};

use super::{unstructured, Target};

#[derive(Debug, Arbitrary)]
struct Input {
    bases: Vec<(u32, bool, String)>,
    refs: Vec<(Option<u32>, bool, String)>,
}

pub struct BaseIdTarget;

impl Target for BaseIdTarget {
    fn name(&self) -> &'static str {
        "base_id"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            vec![0; 64],
            b"\x03\x00\x00\x00\x01/a\x00\x00\x00\x00\x00/b\x05\x00\x00\x00\x01s3://x\x02\x01\x00\x00\x00\x00data.lance".to_vec(),
            (0..=255u8).collect(),
        ]
    }

    fn check(&self, input: &[u8]) -> bool {
        let Ok(input) = Input::arbitrary_take_rest(unstructured(input)) else {
            return false;
        };
        let bases: Vec<BasePath> = input
            .bases
            .iter()
            .map(|(id, root, path)| BasePath {
                id: *id,
                name: None,
                is_dataset_root: *root,
                path: path.clone(),
            })
            .collect();
        let mut ids: Vec<u32> = bases.iter().map(|b| b.id).collect();
        ids.sort_unstable();
        let has_dup = ids.windows(2).any(|w| w[0] == w[1]);
        let table = match BaseTable::new(&bases) {
            Err(PathsError::DuplicateBaseId { .. }) => {
                assert!(has_dup);
                return false;
            }
            Err(e) => panic!("unexpected error {e}"),
            Ok(t) => {
                assert!(!has_dup, "duplicate ids accepted");
                t
            }
        };
        let here = ResolvedBase::current_dataset("/ds");
        for (base_id, need_root, path) in &input.refs {
            let req = if *need_root {
                BaseRequirement::DatasetRoot
            } else {
                BaseRequirement::Any
            };
            match (table.resolve(*base_id, &here, req), base_id) {
                (Ok(r), None) => assert_eq!(r, here),
                (Ok(r), Some(id)) => {
                    let b = table.get(*id).expect("resolved id exists");
                    assert_eq!(r.base_id, Some(*id));
                    assert!(!*need_root || b.is_dataset_root);
                }
                (Err(PathsError::UnknownBaseId { id }), Some(want)) => {
                    assert_eq!(id, *want);
                    assert!(table.get(id).is_none());
                }
                (Err(PathsError::NotDatasetRoot { id, .. }), Some(_)) => {
                    assert!(*need_root && !table.get(id).expect("exists").is_dataset_root);
                }
                (Err(PathsError::InvalidUri { .. }), Some(_)) => {}
                (other, _) => panic!("unexpected resolution {other:?}"),
            }
            let file = DataFile {
                path: path.clone(),
                base_id: *base_id,
                ..Default::default()
            };
            if let Ok(loc) = data_file_location(&file, &table, &here) {
                assert!(!loc.path.split('/').any(|s| s == ".." || s.is_empty()));
                assert!(!loc.path.starts_with('/'));
            }
        }
        true
    }
}

pub struct TreePathTarget;

impl Target for TreePathTarget {
    fn name(&self) -> &'static str {
        "tree_path"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            b"_bt/leaf/0a0b0c0d-0000-0000-0000-000000000000.lance".to_vec(),
            b"_bt/node/x.node".to_vec(),
            b"_bt/root/y.root".to_vec(),
        ]
    }

    fn near_misses(&self) -> Vec<Vec<u8>> {
        vec![b"_bt/../data/z.lance".to_vec(), vec![0xab; 16]]
    }

    fn check(&self, input: &[u8]) -> bool {
        let text = String::from_utf8_lossy(input);
        let accepted = validate_tree_path(&text);
        if let Ok(kind) = accepted {
            assert!(text.starts_with("_bt/"));
            assert!(!text
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == ".."));
            assert!(!text.contains('\\') && !text.starts_with('/'));
            let suffix = match kind {
                TreeObjectKind::Leaf => ".lance",
                TreeObjectKind::Node => ".node",
                TreeObjectKind::Root => ".root",
            };
            assert!(text.ends_with(suffix));
        }
        assert_eq!(root_path_from_uuid_bytes(input).is_ok(), input.len() == 16);
        accepted.is_ok()
    }
}
