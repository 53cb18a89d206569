//! Manifest feature flags (FORMAT-FACTS §5): names, and the consistency rules that Lance 14
//! checks before every read and write, plus lancet's fragment-tree pairing rule.

use crate::table::Manifest;

pub const DELETION_FILES: u64 = 1;
pub const STABLE_ROW_IDS: u64 = 2;
pub const USE_V2_FORMAT_DEPRECATED: u64 = 4;
pub const TABLE_CONFIG: u64 = 8;
pub const BASE_PATHS: u64 = 16;
pub const DISABLE_TRANSACTION_FILE: u64 = 32;
pub const DATA_OVERLAY_FILES: u64 = 64;
pub const COVERED_INDEX_METADATA: u64 = 128;
pub const MIXED_DATA_FILE_VERSIONS: u64 = 256;
pub const FRAG_REUSE_WITH_STABLE_ROW_IDS: u64 = 512;
pub const FRAGMENT_REUSE_INDEX: u64 = 1024;
pub const SPILLED_ROW_LINEAGE: u64 = 2048;
pub const FRAGMENT_TREE: u64 = 4096;
pub const INDEPENDENT_COVERING_FIELDS: u64 = 8192;
pub const MANAGED_BLOBS: u64 = 16384;
pub const NON_REUSABLE_FIELD_IDS: u64 = 32768;
pub const ZONE_WRITE_SEEDS: u64 = 65536;
pub const OBJECT_METADATA: u64 = 131072;

/// The writer flags lancet sets when a table becomes a fragment tree: the tree flag, and
/// transactions inlined in the manifest only (flag 32). A tree commit is small, and the
/// `_transactions/` file would be one more object (and ~1 ms of file creation on a local
/// disk) per commit; readers, lancet's rebase included, take the inline section first.
/// Flattening keeps flag 32: Lance honours it.
pub const TREE_WRITER: u64 = FRAGMENT_TREE | DISABLE_TRANSACTION_FILE;

/// Every flag Lance 14.0.2 defines, with the name lancet prints.
pub const FLAG_NAMES: [(u64, &str); 18] = [
    (DELETION_FILES, "deletion_files"),
    (STABLE_ROW_IDS, "stable_row_ids"),
    (USE_V2_FORMAT_DEPRECATED, "use_v2_format_deprecated"),
    (TABLE_CONFIG, "table_config"),
    (BASE_PATHS, "base_paths"),
    (DISABLE_TRANSACTION_FILE, "disable_transaction_file"),
    (DATA_OVERLAY_FILES, "data_overlay_files"),
    (COVERED_INDEX_METADATA, "covered_index_metadata"),
    (MIXED_DATA_FILE_VERSIONS, "mixed_data_file_versions"),
    (
        FRAG_REUSE_WITH_STABLE_ROW_IDS,
        "frag_reuse_with_stable_row_ids",
    ),
    (FRAGMENT_REUSE_INDEX, "fragment_reuse_index"),
    (SPILLED_ROW_LINEAGE, "spilled_row_lineage"),
    (FRAGMENT_TREE, "fragment_tree"),
    (INDEPENDENT_COVERING_FIELDS, "independent_covering_fields"),
    (MANAGED_BLOBS, "managed_blobs"),
    (NON_REUSABLE_FIELD_IDS, "non_reusable_field_ids"),
    (ZONE_WRITE_SEEDS, "zone_write_seeds"),
    (OBJECT_METADATA, "object_metadata"),
];

/// One set bit of a flag word: a known name, or the bit's value when Lance 14 defines none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagName {
    Known(&'static str),
    Unknown(u64),
}

/// The set bits of `word`, lowest first.
pub fn flag_names(word: u64) -> Vec<FlagName> {
    (0..64)
        .map(|bit| 1u64 << bit)
        .filter(|v| word & v != 0)
        .map(|v| {
            FLAG_NAMES
                .iter()
                .find(|(f, _)| *f == v)
                .map_or(FlagName::Unknown(v), |(_, n)| FlagName::Known(n))
        })
        .collect()
}

/// Reader flags lancet interprets. A version with any other reader flag is refused rather than
/// misread: spilled lineage columns (2048) change what fragments mean. Fragment trees (4096)
/// are read through lancet-tree; data overlay files (64) pass through resolution unchanged,
/// and commands that would read column data through them refuse.
pub const LANCET_READER_SUPPORTED: u64 = DELETION_FILES
    | DATA_OVERLAY_FILES
    | FRAGMENT_TREE
    | STABLE_ROW_IDS
    | USE_V2_FORMAT_DEPRECATED
    | TABLE_CONFIG
    | BASE_PATHS
    | DISABLE_TRANSACTION_FILE
    | COVERED_INDEX_METADATA
    | MIXED_DATA_FILE_VERSIONS
    | FRAG_REUSE_WITH_STABLE_ROW_IDS
    | FRAGMENT_REUSE_INDEX
    | MANAGED_BLOBS
    | OBJECT_METADATA;

/// Flags that must be set in both words or in neither (Lance's `validate_paired_feature_flags`,
/// plus the fragment-tree flag, which lancet pairs: a one-sided 4096 would let Lance 14 open a
/// tree table as empty).
const PAIRED: [u64; 5] = [
    MIXED_DATA_FILE_VERSIONS,
    FRAGMENT_REUSE_INDEX,
    MANAGED_BLOBS,
    ZONE_WRITE_SEEDS,
    FRAGMENT_TREE,
];

/// Checks the flag words against each other and against the manifest. Returns the broken rule.
pub fn validate_flags(m: &Manifest) -> Result<(), crate::Malformed> {
    broken_flag_rule(m).map_err(crate::Malformed::from)
}

fn broken_flag_rule(m: &Manifest) -> Result<(), String> {
    let (r, w) = (m.reader_feature_flags, m.writer_feature_flags);
    for flag in PAIRED {
        if (r & flag != 0) != (w & flag != 0) {
            return Err(format!(
                "feature flag {flag} must be set in both the reader and writer words or in neither"
            ));
        }
    }
    if r & NON_REUSABLE_FIELD_IDS != 0 {
        return Err("feature flag 32768 is writer-only but is set in the reader word".into());
    }
    if m.max_allocated_field_id.is_some() != (w & NON_REUSABLE_FIELD_IDS != 0) {
        return Err(
            "max_allocated_field_id must be present exactly when writer flag 32768 is set".into(),
        );
    }
    if m.fragment_tree.is_some() && r & FRAGMENT_TREE == 0 {
        return Err("fragment_tree is set but feature flag 4096 is not".into());
    }
    if r & FRAGMENT_TREE != 0 && m.fragment_tree.is_none() {
        return Err("feature flag 4096 is set but fragment_tree is absent".into());
    }
    if r & FRAGMENT_TREE != 0 && !m.fragments.is_empty() {
        return Err("a fragment-tree manifest must have an empty flat fragment list".into());
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn names_known_and_unknown_bits() {
        assert_eq!(
            flag_names(1 | 2 | (1 << 40)),
            vec![
                FlagName::Known("deletion_files"),
                FlagName::Known("stable_row_ids"),
                FlagName::Unknown(1 << 40)
            ]
        );
        assert!(flag_names(0).is_empty());
    }

    #[test]
    fn every_flag_rule_rejects() {
        let ok = Manifest::default();
        assert!(validate_flags(&ok).is_ok());
        for flag in PAIRED {
            let m = Manifest {
                reader_feature_flags: flag,
                ..Default::default()
            };
            assert!(validate_flags(&m).unwrap_err().to_string().contains("both"));
            let m = Manifest {
                writer_feature_flags: flag,
                ..Default::default()
            };
            assert!(validate_flags(&m).is_err());
        }
        let m = Manifest {
            reader_feature_flags: NON_REUSABLE_FIELD_IDS,
            writer_feature_flags: NON_REUSABLE_FIELD_IDS,
            max_allocated_field_id: Some(3),
            ..Default::default()
        };
        assert!(validate_flags(&m)
            .unwrap_err()
            .to_string()
            .contains("writer-only"));
        let m = Manifest {
            writer_feature_flags: NON_REUSABLE_FIELD_IDS,
            ..Default::default()
        };
        assert!(validate_flags(&m)
            .unwrap_err()
            .to_string()
            .contains("max_allocated_field_id"));
        let m = Manifest {
            max_allocated_field_id: Some(1),
            ..Default::default()
        };
        assert!(validate_flags(&m).is_err());
        let m = Manifest {
            fragment_tree: Some(Default::default()),
            ..Default::default()
        };
        assert!(validate_flags(&m).unwrap_err().to_string().contains("4096"));
        let m = Manifest {
            reader_feature_flags: FRAGMENT_TREE,
            writer_feature_flags: FRAGMENT_TREE,
            ..Default::default()
        };
        assert!(validate_flags(&m)
            .unwrap_err()
            .to_string()
            .contains("fragment_tree is absent"));
        let m = Manifest {
            reader_feature_flags: FRAGMENT_TREE,
            writer_feature_flags: FRAGMENT_TREE,
            fragments: vec![Default::default()],
            fragment_tree: Some(Default::default()),
            ..Default::default()
        };
        assert!(validate_flags(&m)
            .unwrap_err()
            .to_string()
            .contains("empty flat fragment list"));
    }
}
