//! Buffered mutations: decoding a `FragmentTreeMutation` into a checked [`Mutation`], and
//! applying one to the record it targets.
//!
//! Decoding checks what holds without the prior record: a nonzero sequence, an action with a
//! recognized variant and its required payload (decision 14: `AddDataFile.file` and
//! `AddDeletionFile.deletion_file`; a selected `upsert_fragment` arm counts as present even
//! when empty), and the record rules on payloads (decisions 7 and 8).
//!
//! Applying ([`Mutation::apply`]) follows the spec and decisions 4–6: upsert replaces the whole
//! record; removals are idempotent (`remove_fragment`, `remove_data_file`,
//! `clear_deletion_file` on an absent fragment are no-ops; `remove_data_file` removes every
//! slot with that path and keeps the order of the rest); `add_data_file`, `add_deletion_file`
//! and `replace_data_file` need the fragment; `add_deletion_file` replaces an existing
//! deletion file; `replace_data_file` edits the first slot whose path is `expected_path`
//! (keeping its fields, column indices and version) and fails when none matches. The produced
//! record is checked again, and the stored deltas must equal the recomputed ones.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use lancet_proto::table::fragment_action::Action as PbAction;
use lancet_proto::table::{
    AddDataFile, AddDeletionFile, ClearDeletionFile, DataFile, DataFragment, DeletionFile,
    FragmentAction, FragmentTreeMutation, RemoveDataFile, ReplaceDataFile,
};

use crate::error::Rule;
use crate::records::{
    check_data_file, check_deletion_file, check_record, Checked, Deltas, Violation,
};

/// One storage action on one fragment.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Replace (or create) the whole record.
    Upsert(Box<DataFragment>),
    Remove,
    AddDataFile(DataFile),
    RemoveDataFile {
        path: String,
    },
    AddDeletionFile(DeletionFile),
    ClearDeletionFile,
    ReplaceDataFile {
        expected_path: String,
        path: String,
        file_size_bytes: u64,
        base_id: Option<u32>,
    },
}

impl Action {
    /// The action's name as the protobuf oneof spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Upsert(_) => "upsert_fragment",
            Self::Remove => "remove_fragment",
            Self::AddDataFile(_) => "add_data_file",
            Self::RemoveDataFile { .. } => "remove_data_file",
            Self::AddDeletionFile(_) => "add_deletion_file",
            Self::ClearDeletionFile => "clear_deletion_file",
            Self::ReplaceDataFile { .. } => "replace_data_file",
        }
    }
}

/// A decoded, checked mutation: one action on fragment `target` at `sequence`, with the count
/// deltas it claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Mutation {
    pub sequence: u64,
    pub target: u64,
    pub action: Action,
    pub deltas: Deltas,
}

impl Mutation {
    /// Decodes and checks `m`. Null `base_id`s in its payload inherit `base`, the dataset of
    /// the structure holding the mutation (`None`: the current dataset).
    pub(crate) fn decode(m: &FragmentTreeMutation, base: Option<u32>) -> Checked<Self> {
        if m.action_sequence == 0 {
            return Err(Violation::new(
                Rule::SequenceZero,
                "a mutation has action_sequence 0",
            ));
        }
        let seq = m.action_sequence;
        let missing =
            |what: &str| Violation::new(Rule::MutationAction, format!("mutation {seq}: {what}"));
        let action = m
            .action
            .as_ref()
            .and_then(|a| a.action.as_ref())
            .ok_or_else(|| missing("no action, or an action with no recognized variant"))?;
        let inherit = |id: Option<u32>| id.or(base);
        let (target, action) = match action {
            PbAction::UpsertFragment(f) => {
                check_record(f)?;
                let mut f = f.clone();
                crate::records::inherit_base(&mut f, base);
                (f.id, Action::Upsert(Box::new(f)))
            }
            PbAction::RemoveFragment(id) => (*id, Action::Remove),
            PbAction::AddDataFile(a) => {
                let file = a
                    .file
                    .as_ref()
                    .ok_or_else(|| missing("add_data_file without its file"))?;
                check_data_file(file)?;
                let mut file = file.clone();
                file.base_id = inherit(file.base_id);
                (a.frag_id, Action::AddDataFile(file))
            }
            PbAction::RemoveDataFile(r) => (
                r.frag_id,
                Action::RemoveDataFile {
                    path: r.path.clone(),
                },
            ),
            PbAction::AddDeletionFile(a) => {
                let d = a
                    .deletion_file
                    .as_ref()
                    .ok_or_else(|| missing("add_deletion_file without its deletion file"))?;
                check_deletion_file(d, None)?;
                let mut d = *d;
                d.base_id = inherit(d.base_id);
                (a.frag_id, Action::AddDeletionFile(d))
            }
            PbAction::ClearDeletionFile(c) => (c.frag_id, Action::ClearDeletionFile),
            PbAction::ReplaceDataFile(r) => (
                r.frag_id,
                Action::ReplaceDataFile {
                    expected_path: r.expected_path.clone(),
                    path: r.path.clone(),
                    file_size_bytes: r.file_size_bytes,
                    base_id: inherit(r.base_id),
                },
            ),
        };
        Ok(Self {
            sequence: seq,
            target,
            action,
            deltas: Deltas {
                fragments: m.fragment_count_delta,
                total_rows: m.total_rows_delta,
                visible_rows: m.visible_rows_delta,
            },
        })
    }

    /// Bytes this mutation takes in a buffer: its encoding with its field key and length
    /// (what the writer's budgets count).
    pub fn encoded_len(&self) -> usize {
        use prost::Message;
        let len = self.encode().encoded_len();
        1 + prost::length_delimiter_len(len) + len
    }

    /// The protobuf form of this mutation.
    pub fn encode(&self) -> FragmentTreeMutation {
        let frag_id = self.target;
        let action = match &self.action {
            Action::Upsert(f) => PbAction::UpsertFragment((**f).clone()),
            Action::Remove => PbAction::RemoveFragment(frag_id),
            Action::AddDataFile(file) => PbAction::AddDataFile(AddDataFile {
                frag_id,
                file: Some(file.clone()),
            }),
            Action::RemoveDataFile { path } => PbAction::RemoveDataFile(RemoveDataFile {
                frag_id,
                path: path.clone(),
            }),
            Action::AddDeletionFile(d) => PbAction::AddDeletionFile(AddDeletionFile {
                frag_id,
                deletion_file: Some(*d),
            }),
            Action::ClearDeletionFile => PbAction::ClearDeletionFile(ClearDeletionFile { frag_id }),
            Action::ReplaceDataFile {
                expected_path,
                path,
                file_size_bytes,
                base_id,
            } => PbAction::ReplaceDataFile(ReplaceDataFile {
                frag_id,
                expected_path: expected_path.clone(),
                path: path.clone(),
                file_size_bytes: *file_size_bytes,
                base_id: *base_id,
            }),
        };
        FragmentTreeMutation {
            action_sequence: self.sequence,
            action: Some(FragmentAction {
                action: Some(action),
            }),
            fragment_count_delta: self.deltas.fragments,
            total_rows_delta: self.deltas.total_rows,
            visible_rows_delta: self.deltas.visible_rows,
        }
    }

    /// The record after this action, from the record before it (`None`: absent). Checks the
    /// produced record and the stored deltas.
    pub fn apply(&self, prior: Option<DataFragment>) -> Checked<Option<DataFragment>> {
        let before = prior.clone();
        let after = self.transform(prior)?;
        if let Some(f) = &after {
            check_record(f)?;
        }
        let recomputed = Deltas::between(before.as_ref(), after.as_ref())?;
        if recomputed != self.deltas {
            return Err(Violation::new(
                Rule::MutationDelta,
                format!(
                    "mutation {} ({} on fragment {}) stores deltas {:?}, the records give {:?}",
                    self.sequence,
                    self.action.name(),
                    self.target,
                    self.deltas,
                    recomputed
                ),
            ));
        }
        Ok(after)
    }

    /// Deltas this action has on `prior`, for writers building a mutation.
    pub fn deltas_on(&self, prior: Option<&DataFragment>) -> Checked<Deltas> {
        let after = self.transform(prior.cloned())?;
        Deltas::between(prior, after.as_ref())
    }

    pub(crate) fn transform(&self, prior: Option<DataFragment>) -> Checked<Option<DataFragment>> {
        let absent = || {
            Violation::new(
                Rule::AbsentFragment,
                format!(
                    "mutation {}: {} on fragment {}, which does not exist",
                    self.sequence,
                    self.action.name(),
                    self.target
                ),
            )
        };
        Ok(match &self.action {
            Action::Upsert(f) => Some((**f).clone()),
            Action::Remove => None,
            Action::AddDataFile(file) => {
                let mut f = prior.ok_or_else(absent)?;
                f.files.push(file.clone());
                Some(f)
            }
            Action::RemoveDataFile { path } => prior.map(|mut f| {
                f.files.retain(|file| &file.path != path);
                f
            }),
            Action::AddDeletionFile(d) => {
                let mut f = prior.ok_or_else(absent)?;
                f.deletion_file = Some(*d);
                Some(f)
            }
            Action::ClearDeletionFile => prior.map(|mut f| {
                f.deletion_file = None;
                f
            }),
            Action::ReplaceDataFile {
                expected_path,
                path,
                file_size_bytes,
                base_id,
            } => {
                let mut f = prior.ok_or_else(absent)?;
                let slot = f
                    .files
                    .iter_mut()
                    .find(|file| &file.path == expected_path)
                    .ok_or_else(|| {
                        Violation::new(
                            Rule::ReplaceNoMatch,
                            format!(
                                "mutation {}: fragment {} has no data file {expected_path:?}",
                                self.sequence, self.target
                            ),
                        )
                    })?;
                slot.path = path.clone();
                slot.file_size_bytes = *file_size_bytes;
                slot.base_id = *base_id;
                Some(f)
            }
        })
    }
}

/// The storage actions of a change, in order: the fragments it removes, each updated
/// fragment as what it gained ([`actions_between`]: a record listed as it is changes
/// nothing, one that only gains data files or a deletion file is those, not the whole
/// record), and each new fragment upserted.
pub fn change_actions(
    removed: impl IntoIterator<Item = u64>,
    updated: &[(DataFragment, DataFragment)],
    created: Vec<DataFragment>,
) -> Vec<(u64, Action)> {
    let mut actions: Vec<(u64, Action)> =
        removed.into_iter().map(|id| (id, Action::Remove)).collect();
    for (before, after) in updated {
        actions.extend(
            actions_between(before, after)
                .into_iter()
                .map(|a| (after.id, a)),
        );
    }
    actions.extend(
        created
            .into_iter()
            .map(|f| (f.id, Action::Upsert(Box::new(f)))),
    );
    actions
}

/// The actions that turn the record `before` into `after` with the least written: the data
/// files it appends (`add_data_file`, a backfill) and the deletion file it sets
/// (`add_deletion_file`, a delete) when nothing else changed; the whole record
/// (`upsert_fragment`) otherwise. What a tree buffers for a commit of `after`.
pub fn actions_between(before: &DataFragment, after: &DataFragment) -> Vec<Action> {
    let Some(extra) = after.files.strip_prefix(before.files.as_slice()) else {
        return vec![Action::Upsert(Box::new(after.clone()))];
    };
    let mut same = after.clone();
    same.files.truncate(before.files.len());
    let mut actions: Vec<Action> = extra.iter().cloned().map(Action::AddDataFile).collect();
    if same.deletion_file != before.deletion_file {
        match same.deletion_file {
            Some(d) => actions.push(Action::AddDeletionFile(d)),
            None => return vec![Action::Upsert(Box::new(after.clone()))],
        }
        same.deletion_file = before.deletion_file;
    }
    match same == *before {
        true => actions,
        false => vec![Action::Upsert(Box::new(after.clone()))],
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn file(path: &str) -> DataFile {
        DataFile {
            path: path.into(),
            fields: vec![0],
            column_indices: vec![0],
            file_major_version: 2,
            file_minor_version: 1,
            ..Default::default()
        }
    }

    fn frag(files: &[&str]) -> DataFragment {
        DataFragment {
            id: 4,
            files: files.iter().map(|p| file(p)).collect(),
            physical_rows: 10,
            ..Default::default()
        }
    }

    fn m(action: Action) -> Mutation {
        Mutation {
            sequence: 1,
            target: 4,
            action,
            deltas: Deltas::default(),
        }
    }

    fn paths(f: &DataFragment) -> Vec<&str> {
        f.files.iter().map(|f| f.path.as_str()).collect()
    }

    fn replace(expected: &str, path: &str) -> Action {
        Action::ReplaceDataFile {
            expected_path: expected.into(),
            path: path.into(),
            file_size_bytes: 0,
            base_id: None,
        }
    }

    #[test]
    fn renames_do_not_fold() {
        // The spec's example: [A, B], rename B to A, then replace the first A with C: [C, A].
        let f = frag(&["A", "B"]);
        let f = m(replace("B", "A")).apply(Some(f)).unwrap();
        let f = m(replace("A", "C")).apply(f).unwrap().unwrap();
        assert_eq!(paths(&f), ["C", "A"]);
    }

    #[test]
    fn removal_semantics() {
        let f = frag(&["A", "B", "A"]);
        let rm = m(Action::RemoveDataFile { path: "A".into() });
        assert_eq!(paths(&rm.apply(Some(f)).unwrap().unwrap()), ["B"]);
        assert_eq!(rm.apply(None).unwrap(), None);
        assert_eq!(m(Action::ClearDeletionFile).apply(None).unwrap(), None);
        assert_eq!(m(Action::Remove).apply(None).unwrap(), None);
    }

    #[test]
    fn actions_on_absent_fragments_fail() {
        for a in [
            Action::AddDataFile(file("x")),
            Action::AddDeletionFile(DeletionFile {
                num_deleted_rows: 1,
                ..Default::default()
            }),
            replace("A", "B"),
        ] {
            assert_eq!(m(a).apply(None).unwrap_err().rule, Rule::AbsentFragment);
        }
        assert_eq!(
            m(replace("Z", "B"))
                .apply(Some(frag(&["A"])))
                .unwrap_err()
                .rule,
            Rule::ReplaceNoMatch
        );
    }

    #[test]
    fn deltas_are_checked() {
        let mut up = m(Action::Upsert(Box::new(frag(&["A"]))));
        assert_eq!(up.apply(None).unwrap_err().rule, Rule::MutationDelta);
        up.deltas = Deltas {
            fragments: 1,
            total_rows: 10,
            visible_rows: 10,
        };
        assert!(up.apply(None).is_ok());
        let mut del = m(Action::AddDeletionFile(DeletionFile {
            num_deleted_rows: 3,
            ..Default::default()
        }));
        del.deltas.visible_rows = -3;
        let f = del.apply(Some(frag(&["A"]))).unwrap().unwrap();
        assert_eq!(f.deletion_file.unwrap().num_deleted_rows, 3);
        // a deletion file larger than the record is refused on the produced record
        let big = m(Action::AddDeletionFile(DeletionFile {
            num_deleted_rows: 11,
            ..Default::default()
        }));
        assert_eq!(
            big.apply(Some(frag(&["A"]))).unwrap_err().rule,
            Rule::DeletionCount
        );
    }

    #[test]
    fn decode_requires_payloads_and_inherits_bases() {
        let pb = |action: Option<PbAction>| FragmentTreeMutation {
            action_sequence: 3,
            action: Some(FragmentAction { action }),
            ..Default::default()
        };
        assert_eq!(
            Mutation::decode(&pb(None), None).unwrap_err().rule,
            Rule::MutationAction
        );
        let no_file = pb(Some(PbAction::AddDataFile(AddDataFile {
            frag_id: 1,
            file: None,
        })));
        assert_eq!(
            Mutation::decode(&no_file, None).unwrap_err().rule,
            Rule::MutationAction
        );
        let mut zero = pb(Some(PbAction::RemoveFragment(1)));
        zero.action_sequence = 0;
        assert_eq!(
            Mutation::decode(&zero, None).unwrap_err().rule,
            Rule::SequenceZero
        );
        let empty_upsert = pb(Some(PbAction::UpsertFragment(DataFragment::default())));
        assert!(Mutation::decode(&empty_upsert, None).is_ok());
        let add = pb(Some(PbAction::AddDataFile(AddDataFile {
            frag_id: 1,
            file: Some(file("x")),
        })));
        let decoded = Mutation::decode(&add, Some(7)).unwrap();
        assert_eq!(
            decoded.action,
            Action::AddDataFile(DataFile {
                base_id: Some(7),
                ..file("x")
            })
        );
        // encode is decode's inverse for current-dataset mutations
        let here = Mutation::decode(&add, None).unwrap();
        assert_eq!(here.encode(), add);
    }

    #[test]
    fn a_commit_writes_the_smallest_actions() {
        let before = DataFragment {
            id: 3,
            physical_rows: 10,
            files: vec![file("a")],
            ..Default::default()
        };
        let mut after = before.clone();
        after.files.push(file("b"));
        assert_eq!(
            actions_between(&before, &after),
            [Action::AddDataFile(file("b"))]
        );
        assert!(actions_between(&before, &before).is_empty());
        let deletion = DeletionFile {
            file_type: 1,
            read_version: 2,
            id: 9,
            num_deleted_rows: 3,
            base_id: None,
        };
        let mut deleted = before.clone();
        deleted.deletion_file = Some(deletion);
        assert_eq!(
            actions_between(&before, &deleted),
            [Action::AddDeletionFile(deletion)]
        );
        // anything else is the whole record
        let mut other = after.clone();
        other.physical_rows = 11;
        assert_eq!(
            actions_between(&before, &other),
            [Action::Upsert(Box::new(other.clone()))]
        );
        assert_eq!(
            actions_between(&deleted, &before),
            [Action::Upsert(Box::new(before.clone()))]
        );
        let mut reordered = before.clone();
        reordered.files = vec![file("b"), file("a")];
        assert_eq!(
            actions_between(&before, &reordered),
            [Action::Upsert(Box::new(reordered.clone()))]
        );
    }
}
