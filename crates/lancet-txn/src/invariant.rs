//! The named rules a published version keeps: each [`Invariant`] says what it requires, why,
//! and the spec sentence or Lance 14.0.2 behaviour it keeps. [`crate::check`] judges them.

use std::fmt;

/// One invariant of a published version. `Display` is its name; [`Invariant::rule`] says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Invariant {
    /// The manifest object decodes and opens under the reader's rules (lancet-paths'
    /// `decode_manifest`, the fragment tree's root checks, the reader feature flags lancet
    /// interprets): what a reader refuses is never published. Judged by the caller, which
    /// decodes the exact bytes it is about to put.
    ManifestDecodes,
    /// No fragment field lancet does not model is dropped (tree spec: a write "must fail if any
    /// such reference cannot be preserved"; the reserved ExternalFile arms are such fields): a
    /// fragment of the previous flat version that holds one is not listed again by a flat
    /// candidate, nor carried into a tree (lancet re-encodes both). Tree versions hold only
    /// modelled records (the leaf schema is exact). Its kind is `Unsupported`: what is wrong
    /// is lancet's reach, not the caller's change.
    UnmodelledFieldsKept,
    /// The manifest decodes under lancet-paths' rules: feature flags paired as Lance 14's
    /// `validate_paired_feature_flags` requires, flag 4096 exactly when a fragment tree is set
    /// and the flat list then empty. Lance and lancet refuse to open a version that breaks it.
    ManifestFlags,
    /// Flat fragment ids strictly increase (FORMAT-FACTS §3: readers binary-search them; the
    /// tree spec: "rows must be ordered by strictly increasing id").
    FragmentIdsIncrease,
    /// Every fragment id is at most `max_fragment_id`, which fits in u32 (Lance allocates the
    /// next id from `max_fragment_id + 1`: a fragment above it is taken again by the next
    /// append).
    FragmentIdWithinMax,
    /// A fragment new to the table takes an id above the previous `max_fragment_id`, or one the
    /// caller established as reserved and unused ([`crate::Candidate::reserved`]): removed ids stay
    /// dead. Index fragment bitmaps and FRI lineage name fragments by id, so a reused
    /// id would attach them to another fragment.
    FragmentIdFresh,
    /// `max_fragment_id` never decreases (Lance's Restore keeps the higher one).
    MaxFragmentIdMonotone,
    /// `next_row_id` never decreases: ids below it have been handed out.
    NextRowIdMonotone,
    /// With stable row ids (flag 2) every fragment has a row-id sequence (FORMAT-FACTS flag
    /// table: "all fragments must carry row ids"; Lance refuses to open a version without).
    RowIdSequencePresent,
    /// A fragment's row-id sequence has one id per physical row (stable-row-ids spec).
    RowIdSequenceLength,
    /// No stable row id is live in two fragments (stable-row-ids spec: a row id identifies
    /// one row; an update deletes the old copy in the commit that writes the new one).
    RowIdLiveOnce,
    /// Every live row id is below `next_row_id` (else the next append hands it out again).
    RowIdBelowNext,
    /// A row id a changed fragment holds live that no changed fragment held live before is
    /// fresh: at or above the previous `next_row_id`. Ids below it are live in another fragment
    /// or were deleted, and neither may be given to a new row.
    RowIdFresh,
    /// A deletion file deletes at most the fragment's physical rows.
    DeletionsWithinRows,
    /// A deletion file a changed fragment names exists (judged where the caller read it: on
    /// stable-row-id tables, whose row ids it decides). A reader of the fragment fails on a
    /// missing one, and reading it as deleting nothing would bring deleted ids back.
    DeletionFileExists,
    /// Every `base_id` a data, deletion or index reference sets names a `BasePath` of this
    /// manifest (tree spec: "a set base_id matches a BasePath of this manifest").
    BaseIdKnown,
    /// A data file's path stays in its directory (`data/`, or its base's): relative, with no
    /// `.` or `..` segment, no absolute path or URI. A path that leaves it would have every
    /// reader open, and a cleanup delete, files outside the table.
    DataFilePathInside,
    /// A data file a fragment names exists and opens as a Lance file (its footer and schema
    /// decode): a version naming a missing file fails every scan of that fragment.
    DataFileOpens,
    /// A data file holds the fragment's `physical_rows` rows (every data file of a fragment
    /// covers all of its rows; Lance addresses row `o` of the fragment as row `o` of each
    /// file). Not judged when `physical_rows` is 0, which Lance 14 reads as unknown.
    DataFileRows,
    /// The field ids a data file's schema holds are the ids its `DataFile.fields` lists, plus
    /// one retired field per tombstone (-2, where a cast retired a column the file holds), plus
    /// struct fields (in files of 2.1 and later a struct stores no column of its own, and Lance
    /// lists only its children): a reader takes a column from the file whose `fields` name it.
    DataFileFields,
    /// Index entries have distinct uuids (an entry is found by uuid: its files live under
    /// `_indices/{uuid}/`). Entries sharing a name are segments of one index and cover the
    /// same fields (Lance's delta indices).
    IndexEntriesDistinct,
    /// At most one Fragment Reuse Index entry (`__lance_frag_reuse`): translation reads one
    /// history.
    SingleFragmentReuseIndex,
    /// A flag the content needs is set in both words: 1 for deletion files, 16 for base paths,
    /// 64 for data overlay files, 1024 for a tagged FRI entry (FRI spec: "the first commit
    /// publishing FRI index version 1 sets FLAG_FRAGMENT_REUSE_INDEX (1024)"), 512 for an FRI
    /// on a stable-row-id table (FRI spec, Stable Row IDs).
    FlagRequired,
    /// Sticky flags stay set: 1024 ("subsequent manifests retain both bits"), 256, 16384, 65536
    /// and writer flag 32768 (Lance's `apply_feature_flags` carries them forward), and 2 (a
    /// table does not stop having stable row ids, except by Overwrite).
    FlagKept,
    /// Tables with stable row ids do not hold a tagged FRI entry (FRI spec: "writers must not
    /// publish index_version >= 1 on them").
    TaggedFriWithoutStableRowIds,
    /// An index's coverage grows only by fragments the commit indexed: any fragment for a
    /// CreateIndex (an index build or optimize trains on what it adds); for a Rewrite, a
    /// group's destinations when the index covered every source of the group (Lance 14.0.2's
    /// `recalculate_fragment_bitmap`); for an Update on a stable-row-id table, the new
    /// fragments when the index covered every fragment the rows came from. Otherwise the
    /// index would answer for rows it never indexed: a filter misses them.
    IndexCoverageIndexed,
    /// A fragment whose data file holding an indexed column is rewritten in place
    /// (DataReplacement, an Update's `fields_modified`, a Merge) leaves that column's
    /// indexes (Lance 14.0.2's `prune_updated_fields_from_indices`): they hold the old
    /// values.
    IndexCoverageRewritten,
    /// On a stable-row-id table the segments of one BTree index hold one kind of row
    /// reference: all row ids (`index_version` 0) or all row addresses (Lance 14.0.2 refuses a
    /// commit that mixes them, and its reader refuses to query one).
    IndexRowIdDomain,
    /// A Merge keeps every fragment of the table with its `physical_rows` (Lance 14.0.2's
    /// `merge_fragments_valid`): it adds columns, never rows or fragments' removal.
    MergeKeepsFragments,
    /// An Overwrite's fragments are newly written: ids above the previous `max_fragment_id`,
    /// no deletion file (Lance 14.0.2's `overwrite_fragments_valid`).
    OverwriteFresh,
    /// A field new to the schema takes an id above every id the table allocated: a reader
    /// takes a column from the data file whose `fields` name its id, and old files name
    /// old ids.
    FieldIdFresh,
    /// Every field id a new data file lists is a field of the schema (tombstones, -2, aside).
    DataFileFieldsInSchema,
    /// A transition new to the Fragment Reuse Index references only fragments committed no
    /// later than itself (FRI spec): its sources are fragments this commit removes, its
    /// destinations fragments it creates. A transition naming fragments of another version
    /// would translate addresses into rows that are not where it says.
    FriTransitionCommitted,
}

impl Invariant {
    /// What the invariant requires, in one line.
    pub fn rule(self) -> &'static str {
        use Invariant::*;
        match self {
            ManifestDecodes => "the manifest object decodes and opens as a reader would",
            UnmodelledFieldsKept => "no fragment field lancet does not model is dropped",
            ManifestFlags => "the manifest's feature flags follow Lance's pairing rules",
            FragmentIdsIncrease => "fragment ids strictly increase",
            FragmentIdWithinMax => "every fragment id is at most max_fragment_id",
            FragmentIdFresh => "a new fragment takes an id above the previous max_fragment_id",
            MaxFragmentIdMonotone => "max_fragment_id never decreases",
            NextRowIdMonotone => "next_row_id never decreases",
            RowIdSequencePresent => "with stable row ids every fragment has a row id sequence",
            RowIdSequenceLength => "a row id sequence has one id per physical row",
            RowIdLiveOnce => "no row id is live in two fragments",
            RowIdBelowNext => "every live row id is below next_row_id",
            RowIdFresh => {
                "a row id new to the changed fragments is at or above the previous next_row_id"
            }
            DeletionsWithinRows => "a deletion file deletes at most the fragment's physical rows",
            DeletionFileExists => "a deletion file a fragment names exists",
            BaseIdKnown => "every base_id names a BasePath of the manifest",
            DataFilePathInside => "a data file's path is relative and stays in its directory",
            DataFileOpens => "a data file a fragment names exists and opens as a Lance file",
            DataFileRows => "a data file holds the fragment's physical_rows rows",
            DataFileFields => "a data file's schema holds the field ids its DataFile lists",
            IndexEntriesDistinct => {
                "index entries have distinct uuids, and segments of one index the same fields"
            }
            SingleFragmentReuseIndex => "at most one Fragment Reuse Index entry",
            FlagRequired => "a flag the content needs is set",
            FlagKept => "sticky feature flags stay set",
            TaggedFriWithoutStableRowIds => "a stable-row-id table holds no tagged FRI entry",
            IndexCoverageIndexed => {
                "an index's coverage grows only by fragments the commit indexed"
            }
            IndexCoverageRewritten => {
                "a fragment whose indexed column is rewritten in place leaves that index"
            }
            IndexRowIdDomain => {
                "the segments of one index hold row ids or row addresses, never both"
            }
            MergeKeepsFragments => "a Merge keeps every fragment and its physical_rows",
            OverwriteFresh => "an Overwrite's fragments take fresh ids and carry no deletion file",
            FieldIdFresh => "a field new to the schema takes an id never allocated before",
            DataFileFieldsInSchema => {
                "every field a data file a commit adds lists is in the schema"
            }
            FriTransitionCommitted => {
                "a new FRI transition rewrites fragments this commit removes into ones it creates"
            }
        }
    }

    /// Every invariant, for listings and tests.
    pub const ALL: [Invariant; 33] = [
        Invariant::ManifestDecodes,
        Invariant::UnmodelledFieldsKept,
        Invariant::ManifestFlags,
        Invariant::FragmentIdsIncrease,
        Invariant::FragmentIdWithinMax,
        Invariant::FragmentIdFresh,
        Invariant::MaxFragmentIdMonotone,
        Invariant::NextRowIdMonotone,
        Invariant::RowIdSequencePresent,
        Invariant::RowIdSequenceLength,
        Invariant::RowIdLiveOnce,
        Invariant::RowIdBelowNext,
        Invariant::RowIdFresh,
        Invariant::DeletionsWithinRows,
        Invariant::DeletionFileExists,
        Invariant::BaseIdKnown,
        Invariant::DataFilePathInside,
        Invariant::DataFileOpens,
        Invariant::DataFileRows,
        Invariant::DataFileFields,
        Invariant::IndexEntriesDistinct,
        Invariant::SingleFragmentReuseIndex,
        Invariant::FlagRequired,
        Invariant::FlagKept,
        Invariant::TaggedFriWithoutStableRowIds,
        Invariant::IndexCoverageIndexed,
        Invariant::IndexCoverageRewritten,
        Invariant::IndexRowIdDomain,
        Invariant::MergeKeepsFragments,
        Invariant::OverwriteFresh,
        Invariant::FieldIdFresh,
        Invariant::DataFileFieldsInSchema,
        Invariant::FriTransitionCommitted,
    ];
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
