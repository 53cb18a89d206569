//! Target `manifest`: the manifest file decoder (`lancet_paths::manifest::decode_manifest`).

use bytes::Bytes;
use lancet_paths::flags;
use lancet_paths::manifest::{decode_manifest, encode_manifest};
use lancet_proto::table::{
    deletion_file::DeletionFileType, BasePath, DataFile, DataFragment, DeletionFile, IndexMetadata,
    Manifest, Uuid,
};
use prost::Message;

use super::Target;

pub struct ManifestTarget;

fn fragment(id: u64, deletions: bool) -> DataFragment {
    DataFragment {
        id,
        files: vec![DataFile {
            path: format!("{id}.lance"),
            fields: vec![0, 1],
            column_indices: vec![0, 1],
            file_major_version: 2,
            file_minor_version: 1,
            file_size_bytes: 1234,
            base_id: id.is_multiple_of(2).then_some(0),
        }],
        deletion_file: deletions.then_some(DeletionFile {
            file_type: DeletionFileType::Bitmap as i32,
            read_version: 3,
            id: 77,
            num_deleted_rows: 4,
            base_id: None,
        }),
        physical_rows: 100,
        row_id_sequence: Some(
            lancet_proto::table::data_fragment::RowIdSequence::InlineRowIds(vec![
                10, 2, 8, 0, 16, 100,
            ]),
        ),
        ..Default::default()
    }
}

fn seeds() -> Vec<Vec<u8>> {
    let index = IndexMetadata {
        uuid: Some(Uuid { uuid: vec![9; 16] }),
        fields: vec![0],
        name: "id_idx".into(),
        dataset_version: 2,
        fragment_bitmap: vec![
            0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 0, 0, 1, 0,
        ],
        ..Default::default()
    };
    let full = Manifest {
        version: 4,
        fragments: (0..4).map(|i| fragment(i, i % 2 == 1)).collect(),
        max_fragment_id: Some(3),
        reader_feature_flags: flags::DELETION_FILES | flags::STABLE_ROW_IDS | flags::BASE_PATHS,
        writer_feature_flags: flags::DELETION_FILES | flags::STABLE_ROW_IDS | flags::BASE_PATHS,
        next_row_id: 400,
        base_paths: vec![BasePath {
            id: 0,
            name: Some("src".into()),
            is_dataset_root: true,
            path: "/src".into(),
        }],
        ..Default::default()
    };
    let unknown = [0xd0u8, 0x01, 0x05, 0xca, 0x01, 0x02, 0x08, 0x01];
    let mut out = vec![
        encode_manifest(&Manifest::default(), &[], &[], None).unwrap_or_default(),
        encode_manifest(&full, &[], &[], None).unwrap_or_default(),
        encode_manifest(
            &full,
            &[index.clone(), index],
            &unknown,
            Some(&[0x08, 0x07]),
        )
        .unwrap_or_default(),
    ];
    let mut flat = full.clone();
    flat.reader_feature_flags = 0;
    flat.writer_feature_flags = 0;
    out.push(encode_manifest(&flat, &[], &[], None).unwrap_or_default());
    out
}

impl Target for ManifestTarget {
    fn name(&self) -> &'static str {
        "manifest"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        seeds()
    }

    fn hot_offsets(&self, seed: &[u8]) -> Vec<usize> {
        let n = seed.len();
        let mut hot = vec![n.saturating_sub(16), n.saturating_sub(12), 0];
        if let Some(pos) = seed
            .get(n.saturating_sub(16)..n.saturating_sub(8))
            .and_then(|b| b.try_into().ok())
            .map(i64::from_le_bytes)
        {
            hot.push(usize::try_from(pos).unwrap_or(0));
        }
        hot
    }

    fn check(&self, input: &[u8]) -> bool {
        let path = object_store_path();
        let Ok(d) = decode_manifest(&path, Bytes::copy_from_slice(input)) else {
            return false;
        };
        // What decodes is internally consistent and re-encodes to the same content.
        assert_eq!(d.fragment_spans.len(), d.manifest.fragments.len());
        for (i, f) in d.manifest.fragments.iter().enumerate() {
            let bytes = d.fragment_bytes(i).expect("span inside the manifest");
            assert_eq!(
                &DataFragment::decode(bytes).expect("fragment bytes decode"),
                f
            );
        }
        // the walk for fields lancet does not model never panics, and names stored fragments
        for u in d.unmodelled_fragments() {
            assert!(d.manifest.fragments.iter().any(|f| f.id == u.id));
            assert!(!u.fields.is_empty());
        }
        assert!(d
            .indices
            .iter()
            .all(|i| i.uuid.as_ref().is_some_and(|u| u.uuid.len() == 16)));
        assert!(flags::validate_flags(&d.manifest).is_ok());
        // Every index entry's fragment_bitmap through the strict decoder the facade uses
        // (Dataset::index_fragments): what decodes re-encodes to a bitmap that decodes equal.
        for index in &d.indices {
            if let Ok(b) = lancet_proto::roaring_wire::decode_roaring32(&index.fragment_bitmap) {
                let again = lancet_proto::roaring_wire::encode_roaring32(&b);
                assert_eq!(
                    lancet_proto::roaring_wire::decode_roaring32(&again).expect("re-encoded"),
                    b
                );
            }
        }
        let again = encode_manifest(&d.manifest, &d.indices, &d.unknown_fields, None)
            .expect("a decoded manifest re-encodes");
        let d2 = decode_manifest(&path, Bytes::from(again)).expect("re-encoded manifest decodes");
        assert_eq!(d2.manifest.fragments, d.manifest.fragments);
        assert_eq!(d2.indices, d.indices);
        assert_eq!(d2.unknown_fields, d.unknown_fields);
        true
    }
}

fn object_store_path() -> object_store::path::Path {
    object_store::path::Path::from("_versions/fuzz.manifest")
}

/// Target `transaction`: a `.txn` file or inline transaction section. Accepted inputs name
/// an operation that re-encodes to what was decoded; unmodelled operation numbers are kept.
pub struct TransactionTarget;

impl Target for TransactionTarget {
    fn name(&self) -> &'static str {
        "transaction"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use lancet_proto::prost::Message;
        use lancet_proto::table::transaction::{Append, CreateIndex, Delete, Operation};
        use lancet_proto::table::{DataFragment, Transaction};
        let txn = |op| Transaction {
            read_version: 4,
            uuid: "9c1d7a52-58f4-4d2a-9f3e-1f0c2b7e6a10".into(),
            operation: Some(op),
            ..Default::default()
        };
        let mut unknown = txn(Operation::Append(Append::default())).encode_to_vec();
        unknown.extend_from_slice(&[0xb2, 0x09, 2, 0x08, 0x01]);
        vec![
            txn(Operation::Append(Append {
                fragments: vec![DataFragment {
                    id: 3,
                    physical_rows: 10,
                    ..Default::default()
                }],
            }))
            .encode_to_vec(),
            txn(Operation::Delete(Delete {
                deleted_fragment_ids: vec![1, 2],
                predicate: "id < 3".into(),
                ..Default::default()
            }))
            .encode_to_vec(),
            txn(Operation::CreateIndex(CreateIndex::default())).encode_to_vec(),
            unknown,
        ]
    }

    fn check(&self, input: &[u8]) -> bool {
        use lancet_proto::prost::Message;
        let path = object_store::path::Path::from("_transactions/fuzz.txn");
        match lancet_paths::transaction::decode_transaction(&path, input) {
            Ok(t) => {
                let name = t.operation_name();
                assert!(!name.is_empty());
                let again = lancet_paths::transaction::decode_transaction(
                    &path,
                    &t.transaction.encode_to_vec(),
                )
                .expect("a decoded transaction re-encodes");
                assert_eq!(again.transaction, t.transaction);
                true
            }
            Err(e) => {
                assert!(e.to_string().contains("fuzz.txn"), "{e}");
                false
            }
        }
    }
}
