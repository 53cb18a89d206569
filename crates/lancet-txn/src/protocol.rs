//! Which feature flags a version carries, decided here once: every publishing path (a commit
//! of actions or of an operation, a rewrite, a conversion, a clone, a create) asks this
//! module rather than setting bits itself, so the reader and writer gates a table advertises
//! follow one table of features.
//!
//! | feature | reader bits | writer bits | set by |
//! | --- | --- | --- | --- |
//! | deletion files | 1 | 1 | a commit whose changed fragments carry a deletion file |
//! | fragment tree | 4096 | 4096 + 32 | create and convert on the tree layout (cleared by flatten, 32 kept) |
//! | base paths | 16 | 16 | a version naming a base path (a shallow clone, UpdateBases) |
//! | Fragment Reuse Index | 1024 | 1024 | a version whose index list holds a tagged FRI entry |
//!
//! [`settle`] derives the content-driven rows from the version itself (tree, base paths, FRI),
//! as Lance 14.0.2's `apply_feature_flags` derives its own from the manifest; the plan of every
//! change ([`crate::build::plan_change`]) and every first version call it, so no writer names a
//! feature.
//!
//! Flag 32 on a tree table: the tree writer inlines each transaction in its manifest and
//! writes no `_transactions/` file; Lance honours the flag, so flattening keeps it.

use lancet_proto::flags;
use lancet_proto::table::{IndexMetadata, Manifest};
use lancet_proto::FragmentChange;

/// A format feature a version may need readers and writers to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    DeletionFiles,
    FragmentTree,
    BasePaths,
    FragmentReuseIndex,
}

impl Feature {
    /// `(reader bits, writer bits)` the feature sets.
    pub const fn bits(self) -> (u64, u64) {
        match self {
            Feature::DeletionFiles => (flags::DELETION_FILES, flags::DELETION_FILES),
            Feature::FragmentTree => (flags::FRAGMENT_TREE, flags::TREE_WRITER),
            Feature::BasePaths => (flags::BASE_PATHS, flags::BASE_PATHS),
            Feature::FragmentReuseIndex => {
                (flags::FRAGMENT_REUSE_INDEX, flags::FRAGMENT_REUSE_INDEX)
            }
        }
    }
}

/// Sets `feature`'s bits in both words of `m`.
pub fn enable(m: &mut Manifest, feature: Feature) {
    let (reader, writer) = feature.bits();
    m.reader_feature_flags |= reader;
    m.writer_feature_flags |= writer;
}

/// A version with its fragments back in a flat list: flag 4096 cleared in both words (flag
/// 32 stays: the versions written under it recorded their transactions inline).
pub fn disable_tree(m: &mut Manifest) {
    m.reader_feature_flags &= !flags::FRAGMENT_TREE;
    m.writer_feature_flags &= !flags::FRAGMENT_TREE;
}

/// The features a commit's changed fragments need: deletion files once any changed fragment
/// carries one. (Lance sets flag 1 on the first commit that writes a deletion file.)
pub fn enable_for_changes(m: &mut Manifest, changes: &[FragmentChange]) {
    if changes
        .iter()
        .filter_map(|c| c.after.as_ref())
        .any(|f| f.deletion_file.is_some())
    {
        enable(m, Feature::DeletionFiles);
    }
}

/// The features `m`'s content needs, with `indices` its index list: the fragment tree while
/// it keeps its fragments in one (flag 4096 cleared when it lists them flat; flag 32 kept, see
/// [`disable_tree`]), base paths once it names one (Lance 14.0.2's rule), the Fragment Reuse
/// Index while an entry holds a tagged (`index_version` 1 or more) history. Flags set for other
/// reasons are left as they are.
pub fn settle(m: &mut Manifest, indices: &[IndexMetadata]) {
    match m.fragment_tree.is_some() {
        true => enable(m, Feature::FragmentTree),
        false => disable_tree(m),
    }
    if !m.base_paths.is_empty() {
        enable(m, Feature::BasePaths);
    }
    let tagged_fri = indices
        .iter()
        .any(|i| i.name == crate::FRI_INDEX_NAME && i.index_version.unwrap_or(0) >= 1);
    if tagged_fri {
        enable(m, Feature::FragmentReuseIndex);
    }
}

/// Whether the table assigns stable row ids (flag 2).
pub fn has_stable_row_ids(m: &Manifest) -> bool {
    m.reader_feature_flags & flags::STABLE_ROW_IDS != 0
}

/// Whether a commit of this version writes a `_transactions/` file besides its manifest's
/// inline copy (not under flag 32).
pub fn writes_transaction_file(m: &Manifest) -> bool {
    m.writer_feature_flags & flags::DISABLE_TRANSACTION_FILE == 0
}

/// `max_fragment_id` as Lance 14 reads a flat manifest that leaves it unset (writers older
/// than the field): the highest fragment id listed.
pub fn known_max_fragment_id(m: &mut Manifest) {
    if m.max_fragment_id.is_none() {
        m.max_fragment_id = m.fragments.last().and_then(|f| u32::try_from(f.id).ok());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lancet_proto::table::{DataFragment, DeletionFile};

    #[test]
    fn features_set_their_bits_in_both_words() {
        let mut m = Manifest::default();
        enable(&mut m, Feature::FragmentTree);
        assert_eq!(m.reader_feature_flags, flags::FRAGMENT_TREE);
        assert_eq!(m.writer_feature_flags, flags::TREE_WRITER);
        assert!(flags::validate_flags(&m).is_ok() || m.fragment_tree.is_none());
        disable_tree(&mut m);
        assert_eq!(m.reader_feature_flags, 0);
        assert_eq!(m.writer_feature_flags, flags::DISABLE_TRANSACTION_FILE);
        assert!(!writes_transaction_file(&m));
        for f in [
            Feature::BasePaths,
            Feature::FragmentReuseIndex,
            Feature::DeletionFiles,
        ] {
            let mut m = Manifest::default();
            enable(&mut m, f);
            assert_eq!(m.reader_feature_flags, m.writer_feature_flags, "{f:?}");
            assert_eq!(m.reader_feature_flags.count_ones(), 1, "{f:?}");
        }
    }

    #[test]
    fn settle_derives_tree_base_path_and_fri_flags_from_the_content() {
        use lancet_proto::table::{BasePath, FragmentTreeMetadata};
        let mut m = Manifest {
            fragment_tree: Some(FragmentTreeMetadata::default()),
            ..Default::default()
        };
        settle(&mut m, &[]);
        assert_eq!(m.reader_feature_flags, flags::FRAGMENT_TREE);
        assert_eq!(m.writer_feature_flags, flags::TREE_WRITER);
        // flat again: 4096 cleared, 32 kept
        m.fragment_tree = None;
        settle(&mut m, &[]);
        assert_eq!(m.reader_feature_flags, 0);
        assert_eq!(m.writer_feature_flags, flags::DISABLE_TRANSACTION_FILE);
        m.base_paths.push(BasePath::default());
        let legacy = IndexMetadata {
            name: crate::FRI_INDEX_NAME.into(),
            index_version: Some(0),
            ..Default::default()
        };
        settle(&mut m, std::slice::from_ref(&legacy));
        assert_eq!(m.reader_feature_flags, flags::BASE_PATHS);
        let tagged = IndexMetadata {
            index_version: Some(1),
            ..legacy
        };
        settle(&mut m, &[tagged]);
        assert_eq!(
            m.reader_feature_flags,
            flags::BASE_PATHS | flags::FRAGMENT_REUSE_INDEX
        );
        assert_eq!(
            m.reader_feature_flags & m.writer_feature_flags,
            m.reader_feature_flags
        );
    }

    #[test]
    fn a_changed_fragment_with_a_deletion_file_needs_flag_1() {
        let plain = DataFragment::default();
        let deleted = DataFragment {
            deletion_file: Some(DeletionFile::default()),
            ..Default::default()
        };
        let mut m = Manifest::default();
        enable_for_changes(&mut m, &[FragmentChange::created(&plain)]);
        assert_eq!(m.reader_feature_flags, 0);
        enable_for_changes(&mut m, &[FragmentChange::created(&deleted)]);
        assert!(m.reader_feature_flags & flags::DELETION_FILES != 0);
        assert!(m.writer_feature_flags & flags::DELETION_FILES != 0);
    }

    #[test]
    fn an_unset_max_fragment_id_is_the_highest_listed() {
        let mut m = Manifest {
            fragments: vec![DataFragment {
                id: 3,
                ..Default::default()
            }],
            ..Default::default()
        };
        known_max_fragment_id(&mut m);
        assert_eq!(m.max_fragment_id, Some(3));
        m.max_fragment_id = Some(9);
        known_max_fragment_id(&mut m);
        assert_eq!(m.max_fragment_id, Some(9));
    }
}
