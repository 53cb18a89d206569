//! Targets `rowid_sequence`, `version_sequence`, `deletion_arrow` and `deletion_bitmap`.

use lancet_rowid::deletion::{decode_arrow, decode_bitmap, encode_arrow, encode_bitmap};
use lancet_rowid::{RowIdSequence, VersionSequence};
use roaring::RoaringBitmap;

use super::Target;

fn sequence_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    let shapes: Vec<Vec<u64>> = vec![
        (0..100).collect(),
        (0..100).filter(|v| v % 17 != 3).collect(),
        (0..1000).filter(|v| v % 3 == 0).collect(),
        vec![5, 1 << 20, 1 << 40, u64::MAX],
        vec![9, 3, 7, 1],
        vec![],
    ];
    for s in &shapes {
        seeds.push(RowIdSequence::from_values(s).encode());
    }
    let mut multi = RowIdSequence::from_range(0..10);
    for s in &shapes {
        multi.extend(RowIdSequence::from_values(s));
    }
    seeds.push(multi.encode());
    seeds
}

pub struct SequenceTarget;

impl Target for SequenceTarget {
    fn name(&self) -> &'static str {
        "rowid_sequence"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        sequence_seeds()
    }

    fn check(&self, input: &[u8]) -> bool {
        let Ok(seq) = RowIdSequence::decode(input) else {
            return false;
        };
        // What decodes re-encodes to bytes that decode to the same sequence. (Byte identity
        // holds only for canonical encodings: an explicit default such as `base: 0` is valid
        // protobuf that prost re-encodes shorter; `lancet rowid --segments` reports it.)
        let again = seq.encode();
        assert_eq!(
            RowIdSequence::decode(&again).expect("re-encoded bytes decode"),
            seq
        );
        assert_eq!(
            RowIdSequence::decode(&again).expect("decodes").encode(),
            again
        );
        // Probing must be bounded and consistent (without iterating huge ranges).
        let len = seq.len();
        for offset in [0, 1, len / 2, len.saturating_sub(1), len] {
            if let Some(id) = seq.get(offset) {
                let p = seq.position(id).expect("a present id has a position");
                assert!(p <= offset, "position of a value is its first occurrence");
            } else {
                assert!(offset >= len);
            }
        }
        true
    }
}

pub struct VersionTarget;

impl Target for VersionTarget {
    fn name(&self) -> &'static str {
        "version_sequence"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![
            VersionSequence::from_versions(&[1, 1, 2, 2, 2, 5]).encode(),
            VersionSequence::from_versions(&[7; 40]).encode(),
            VersionSequence::from_versions(&[]).encode(),
        ]
    }

    fn check(&self, input: &[u8]) -> bool {
        let Ok(v) = VersionSequence::decode(input) else {
            return false;
        };
        let again = v.encode();
        assert_eq!(
            VersionSequence::decode(&again).expect("re-encoded bytes decode"),
            v
        );
        let len = v.len();
        assert!(v.version_at(len).is_none());
        if len > 0 {
            assert!(v.version_at(len - 1).is_some());
        }
        true
    }
}

fn bitmaps() -> Vec<RoaringBitmap> {
    vec![
        RoaringBitmap::new(),
        [0u32, 1, 2, 77, 4096].into_iter().collect(),
        (0..7000).collect(),
        (0..200_000).step_by(3).collect(),
    ]
}

const MAX_ROWS: u64 = 1 << 20;

pub struct ArrowDeletionTarget;

impl Target for ArrowDeletionTarget {
    fn name(&self) -> &'static str {
        "deletion_arrow"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        bitmaps()
            .iter()
            .take(3)
            .filter_map(|b| encode_arrow(b).ok())
            .collect()
    }

    fn check(&self, input: &[u8]) -> bool {
        // A fragment of up to a million rows.
        match decode_arrow(input, MAX_ROWS) {
            Ok(b) => {
                assert!(b.len() <= MAX_ROWS);
                // What decodes re-encodes to the same set.
                let again = encode_arrow(&b).expect("encodes");
                assert_eq!(decode_arrow(&again, MAX_ROWS).expect("decodes"), b);
                true
            }
            Err(_) => false,
        }
    }
}

/// Bitmap deletion files, and every stored `fragment_bitmap` of an index entry: both decode
/// through `lancet_proto::roaring_wire::decode_roaring32` (the `manifest` target also reaches
/// the bitmaps inside whole index sections).
pub struct BitmapDeletionTarget;

impl Target for BitmapDeletionTarget {
    fn name(&self) -> &'static str {
        "deletion_bitmap"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds: Vec<Vec<u8>> = bitmaps().iter().map(encode_bitmap).collect();
        let mut with_runs: RoaringBitmap = (0..100_000).collect();
        with_runs.optimize();
        seeds.push(encode_bitmap(&with_runs));
        seeds
    }

    fn hot_offsets(&self, _seed: &[u8]) -> Vec<usize> {
        // cookie, container count, first key/cardinality, first offset
        vec![0, 2, 4, 8, 10, 12, 16]
    }

    fn check(&self, input: &[u8]) -> bool {
        match decode_bitmap(input) {
            Ok(b) => {
                assert_eq!(decode_bitmap(&encode_bitmap(&b)).expect("decodes"), b);
                true
            }
            Err(_) => false,
        }
    }
}
