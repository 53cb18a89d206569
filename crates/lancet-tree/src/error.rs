//! Errors of lancet-tree: every broken rule of the fragment-tree spec and of lancet's decisions
//! page is one [`Rule`] variant, reported with the object it was found in.
//!
//! A corrupt snapshot is always an error, never an empty or partial answer. Tests match the
//! [`Rule`] variant, not the message text.

use std::sync::Arc;

/// The rule a corrupt snapshot breaks. `Display` gives a short kebab-case name (what
/// `lancet verify` prints); the doc line of each variant says where the rule comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    // ---- Snapshot (spec "Snapshot", FORMAT-FACTS §5, decisions 13, 15, 16)
    /// Flag 4096 must be set in both flag words exactly when `fragment_tree` is set.
    TreeFlag,
    /// A tree manifest must leave `Manifest.fragments` empty.
    FlatFragmentsInTree,
    /// `FragmentTreeMetadata.layout` must select exactly one recognized layout.
    Layout,
    /// A `FragmentTree` must hold exactly one of `inline_root` and `root_uuid` (decision 13).
    RootArm,
    /// `root_uuid` must be exactly 16 bytes.
    RootUuidLength,
    /// An inline root leaves `mutations_since_root` empty.
    InlineRootMutations,
    // ---- Sequence numbers (spec "Sequence numbers", decision 15)
    /// `FragmentTreeRoot.next_action_sequence` is at least 1, and
    /// `FragmentTree.next_action_sequence` is at least the root's (decision 15).
    NextSequence,
    /// Mutation sequences are nonzero.
    SequenceZero,
    /// Mutation sequences are unique across every source decoded for the operation.
    SequenceDuplicate,
    /// Root and interior buffer sequences and leaf watermarks are below the root's
    /// `next_action_sequence`.
    SequenceAboveRoot,
    /// `mutations_since_root` sequences are at or above the root's `next_action_sequence` and
    /// below `FragmentTree.next_action_sequence`.
    SinceRootSequence,
    /// A collected mutation must have a sequence above its leaf's
    /// `materialized_through_action_sequence`.
    MutationBelowWatermark,
    /// `materialized_through_action_sequence` is 0 on an interior child.
    InteriorWatermark,
    // ---- Fragment ids (spec "Fragment IDs")
    /// Every stored or targeted fragment id is at most `Manifest.max_fragment_id`; with no
    /// `max_fragment_id` the tree holds no records or fragment-targeting mutations.
    MaxFragmentId,
    // ---- Object references (spec "Tree objects", "Object references", decisions 1 and 10)
    /// A child path obeys the `_bt/` path rules and names a `.node` or `.lance` object.
    ChildPath,
    /// A set `base_id` names a `BasePath` with `is_dataset_root = true`.
    ChildBaseId,
    /// A set `base_id` of a record's data, deletion or overlay file names a `BasePath` of
    /// the manifest (spec "Leaf records": "A set base_id matches BasePath.id in this Version
    /// Manifest's base_paths"; readers must reject an unknown id).
    RecordBaseId,
    /// Resolved child locations within one child list are unique.
    DuplicateChild,
    /// `object_size` is nonzero and equals the fetched object's length.
    ObjectSize,
    /// A referenced object exists.
    ObjectMissing,
    /// A `.root` or `.node` object decodes as its protobuf message.
    ObjectDecode,
    /// A child's suffix agrees with its height: `.lance` at height 0, `.node` above.
    ChildKind,
    // ---- Routing (spec "Routing", decisions 2 and 3)
    /// Interiors have at least two children and `num_children` equals the decoded child count;
    /// a leaf reference has `num_children` 0.
    ChildCount,
    /// All children of one node have one height, one less than the node's (decision 2), and
    /// no tree is higher than 2^32 fragment ids allow.
    ChildHeight,
    /// Child `min_key`s strictly increase (decision 3).
    MinKeyOrder,
    /// The first child starts at the parent's lower bound, every `min_key` lies inside the
    /// parent range and is at most 2^32 − 1.
    MinKeyRange,
    /// A buffered mutation's target lies in its node's inherited range.
    BufferRange,
    /// An interior's `num_keys`, `total_rows` and `visible_rows` equal its children's plus its
    /// buffer's deltas; `visible_rows` ≤ `total_rows`.
    NodeSummary,
    /// Version totals derived from the root are non-negative, `visible ≤ total`, and equal what
    /// the resolved fragments hold (decision 18).
    DerivedTotals,
    // ---- Leaves (spec "Leaf format", decisions 7, 8, 9, 17)
    /// A leaf is a readable Lance file.
    LeafFile,
    /// The leaf schema matches exactly (field order, types, nullability, `item`, unordered
    /// dictionaries).
    LeafSchema,
    /// A leaf holds at least one record.
    LeafEmpty,
    /// Leaf ids strictly increase.
    LeafIdOrder,
    /// Leaf ids fit in u32 and lie in the leaf's inherited range.
    LeafIdRange,
    /// A leaf's `num_keys`, `total_rows`, `visible_rows` equal the counts recomputed from its
    /// records; its reference has height 0.
    LeafSummary,
    /// Null values only in `base_id`; mapping vectors are LE i32 (length a multiple of 4) and
    /// dictionary keys are in bounds.
    LeafValues,
    /// `fragment_meta` decodes, with id 0 and no files or overlays.
    FragmentMeta,
    /// `overlay_meta` decodes with no `data_file`.
    OverlayMeta,
    /// DataFile mapping rules (decision 8).
    DataFileMapping,
    /// A deletion file carries `0 < num_deleted_rows ≤ physical_rows` (decision 7).
    DeletionCount,
    // ---- Mutations (spec "Mutations", decisions 4, 5, 6, 14)
    /// A mutation holds an action with a recognized variant and its required payload.
    MutationAction,
    /// A buffered mutation holds only fields lancet models: a commit that rewrites the
    /// object holding it re-encodes it, and would drop the others (tree spec: "the write must
    /// fail if any such reference cannot be preserved"; the reserved ExternalFile arms are
    /// such fields).
    MutationField,
    /// Stored deltas equal the deltas recomputed from the prior record.
    MutationDelta,
    /// An action that modifies a fragment needs that fragment (decision 4).
    AbsentFragment,
    /// `replace_data_file` needs a slot matching `expected_path` (decision 5).
    ReplaceNoMatch,
    // ---- Resolved fragments against the manifest's other flags (decision 11)
    /// Overlays need reader flag 64.
    OverlayFlag,
    /// Reader flag 2 needs a row-id sequence on every fragment.
    RowIdSequence,
}

impl Rule {
    /// The kebab-case name `lancet verify` prints.
    pub fn name(self) -> &'static str {
        use Rule::*;
        match self {
            TreeFlag => "tree-flag",
            FlatFragmentsInTree => "flat-fragments-in-tree",
            Layout => "layout",
            RootArm => "root-arm",
            RootUuidLength => "root-uuid-length",
            InlineRootMutations => "inline-root-mutations",
            NextSequence => "next-sequence",
            SequenceZero => "sequence-zero",
            SequenceDuplicate => "sequence-duplicate",
            SequenceAboveRoot => "sequence-above-root",
            SinceRootSequence => "since-root-sequence",
            MutationBelowWatermark => "mutation-below-watermark",
            InteriorWatermark => "interior-watermark",
            MaxFragmentId => "max-fragment-id",
            ChildPath => "child-path",
            ChildBaseId => "child-base-id",
            RecordBaseId => "record-base-id",
            DuplicateChild => "duplicate-child",
            ObjectSize => "object-size",
            ObjectMissing => "object-missing",
            ObjectDecode => "object-decode",
            ChildKind => "child-kind",
            ChildCount => "child-count",
            ChildHeight => "child-height",
            MinKeyOrder => "min-key-order",
            MinKeyRange => "min-key-range",
            BufferRange => "buffer-range",
            NodeSummary => "node-summary",
            DerivedTotals => "derived-totals",
            LeafFile => "leaf-file",
            LeafSchema => "leaf-schema",
            LeafEmpty => "leaf-empty",
            LeafIdOrder => "leaf-id-order",
            LeafIdRange => "leaf-id-range",
            LeafSummary => "leaf-summary",
            LeafValues => "leaf-values",
            FragmentMeta => "fragment-meta",
            OverlayMeta => "overlay-meta",
            DataFileMapping => "data-file-mapping",
            DeletionCount => "deletion-count",
            MutationAction => "mutation-action",
            MutationField => "mutation-field",
            MutationDelta => "mutation-delta",
            AbsentFragment => "absent-fragment",
            ReplaceNoMatch => "replace-no-match",
            OverlayFlag => "overlay-flag",
            RowIdSequence => "row-id-sequence",
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Errors of lancet-tree.
/// `Clone`, so that one failed load shared through a cache reaches every caller unflattened.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// The snapshot breaks `rule` in `at` (a store path, or the manifest for rules on
    /// `Manifest.fragment_tree`).
    #[error("{rule} in {at}: {detail}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        rule: Rule,
        detail: String,
    },
    /// Reading an object failed for a reason that says nothing about the snapshot (I/O).
    #[error("reading {}: {source}", lancet_proto::shown(object))]
    Io {
        object: String,
        #[source]
        source: Arc<lancet_paths::PathsError>,
    },
    /// The caller asked for something the snapshot cannot give (an argument error).
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

impl TreeError {
    pub(crate) fn corrupt(
        object: impl Into<String>,
        rule: Rule,
        detail: impl Into<String>,
    ) -> Self {
        Self::Corrupt {
            at: lancet_proto::ObjectRef::new(object),
            rule,
            detail: detail.into(),
        }
    }

    /// The broken rule, when this is a corruption.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            Self::Corrupt { rule, .. } => Some(*rule),
            _ => None,
        }
    }

    /// What a caller can do about it.
    pub fn kind(&self) -> lancet_proto::ErrorKind {
        match self {
            Self::InvalidInput(_) => lancet_proto::ErrorKind::InvalidInput,
            Self::Io { source, .. } => source.kind(),
            Self::Corrupt { .. } => lancet_proto::ErrorKind::Corrupt,
        }
    }

    /// The object the error is about.
    pub fn object(&self) -> Option<&str> {
        match self {
            Self::Corrupt { at, .. } => Some(&at.object),
            Self::Io { object, .. } => Some(object),
            Self::InvalidInput(_) => None,
        }
    }
}

pub type Result<T, E = TreeError> = std::result::Result<T, E>;
