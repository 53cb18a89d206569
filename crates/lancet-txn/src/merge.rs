//! Lance 14.0.2's `merge_insert` as rules over keys: which target rows a source row matches,
//! what each match does, which source rows are inserted, and the keys a merge records for
//! conflict detection. Pure: the caller reads the target's key columns (by scan or through an
//! index) and writes the rows this decides.
//!
//! The rules, as `lance/src/dataset/write/merge_insert.rs` applies them:
//! - Keys compare with SQL equality: a key with a NULL part matches nothing (a source row
//!   with one is "not matched", a target row with one is "not matched by source").
//! - A target row matched by two source rows under an action that writes or deletes it
//!   (`UpdateAll`, `Delete`) is refused: "Ambiguous merge inserts are prohibited". Source
//!   rows that share a key and match nothing are all inserted, as Lance inserts them.
//! - `Fail` refuses the merge at the first match.
//! - A source row matching several target rows updates each of them.
//! - Updated rows are written in target order (fragment, then offset), then the inserted
//!   rows in source order: pylance 14.0.2's order when its target scan runs as one
//!   partition and the source is the smaller side (it varies with the machine's cores
//!   otherwise; `docs/decisions/0034-merge-insert.md`).
//!
//! Beyond Lance: every merge that inserts records its inserted keys as an exact
//! [`KeyExistenceFilter`] (Lance's hash of Lance's key bytes), whatever the key columns, so
//! two merges racing to insert one key never both land ([`crate::compatibility`]).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::hash::{Hash, Hasher};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;
use hashbrown::HashTable;
use lancet_proto::table::transaction::key_existence_filter::Data as FilterData;
use lancet_proto::table::transaction::{ExactKeySetFilter, KeyExistenceFilter};

use crate::error::{Result, TxnError};

const OP: &str = "merge_insert";

/// What a match does to the target row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenMatched {
    /// The target row is replaced by the source row (deleted, the source row written).
    UpdateAll,
    /// As `UpdateAll` where the caller's condition holds on the pair: every matched pair is
    /// a [`Matched::candidates`] entry, settled by [`Matched::settle`].
    UpdateIf,
    /// The target row is kept as it is.
    DoNothing,
    /// The target row is deleted.
    Delete,
    /// The merge is refused.
    Fail,
}

/// A merge's rules for matched and unmatched rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeRules {
    pub when_matched: WhenMatched,
    /// Source rows matching no target row are inserted.
    pub insert_not_matched: bool,
    /// Target rows matching no source row are collected ([`Matched::unmatched_target`]) for
    /// the caller's `when_not_matched_by_source` rule.
    pub collect_unmatched_target: bool,
}

/// The source's keys, indexed for probing. One integer key column is hashed as its values;
/// any other key as its Arrow row encoding (no key copied: the table holds source row
/// numbers and compares their encodings).
pub struct SourceKeys {
    names: Vec<String>,
    rows: usize,
    index: KeyIndex,
    /// Further source rows with the key of a first one (a source with duplicate keys).
    more: HashMap<u32, Vec<u32>>,
}

enum KeyIndex {
    /// The first source row of each value of one integer key column.
    Int(hashbrown::HashMap<i64, u32>),
    /// The first source row of each key, by its row encoding.
    Rows {
        converter: RowConverter,
        converted: Rows,
        state: hashbrown::DefaultHashBuilder,
        first: HashTable<u32>,
    },
}

/// One integer key column's values as i64 (an unsigned 64-bit value by its bits: equal
/// values stay equal, distinct stay distinct).
fn int_values(columns: &[ArrayRef]) -> Option<Vec<i64>> {
    let [c] = columns else { return None };
    Some(match c.data_type() {
        DataType::Int64 => c.as_primitive::<Int64Type>().values().to_vec(),
        DataType::Int32 => c
            .as_primitive::<Int32Type>()
            .values()
            .iter()
            .map(|v| i64::from(*v))
            .collect(),
        DataType::UInt32 => c
            .as_primitive::<UInt32Type>()
            .values()
            .iter()
            .map(|v| i64::from(*v))
            .collect(),
        DataType::UInt64 => c
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .map(|v| *v as i64)
            .collect(),
        _ => return None,
    })
}

/// What a merge does, once every target row that can match was probed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matched {
    /// (target row address, source row) for each updated row, in target order.
    pub updates: Vec<(u64, u32)>,
    /// Target rows a match deletes, ascending.
    pub deletes: Vec<u64>,
    /// Source rows to insert, in source order.
    pub inserts: Vec<u32>,
    /// Target rows probed that matched no source row, ascending (collected on request).
    pub unmatched_target: Vec<u64>,
    /// Under `UpdateIf`: every (target row address, source row) pair that matched, in the
    /// order probed, for the caller's condition.
    pub candidates: Vec<(u64, u32)>,
}

impl Matched {
    /// Under `UpdateIf`: the candidates for which `holds` (one answer per candidate, in
    /// order) become updates; a target row two holding candidates update is refused, as
    /// Lance refuses it ("Ambiguous merge inserts are prohibited"). `names` and
    /// `source_keys` name the key in that message.
    pub fn settle(
        mut self,
        holds: &[bool],
        names: &[String],
        source_keys: &[ArrayRef],
    ) -> Result<Matched> {
        if holds.len() != self.candidates.len() {
            return Err(TxnError::operation(
                OP,
                "one condition answer per matched pair is needed",
            ));
        }
        let mut updates: Vec<(u64, u32)> = self
            .candidates
            .iter()
            .zip(holds)
            .filter(|(_, h)| **h)
            .map(|(c, _)| *c)
            .collect();
        updates.sort_unstable();
        if let Some(w) = updates
            .windows(2)
            .find(|w| w.first().map(|a| a.0) == w.get(1).map(|b| b.0))
        {
            let s = w.first().map_or(0, |p| p.1 as usize);
            return Err(TxnError::operation(
                OP,
                format!(
                    "Ambiguous merge inserts are prohibited: multiple source rows match the \
                     same target row on ({}). Please ensure each target row is matched by at \
                     most one source row.",
                    key_text(names, source_keys, s)
                ),
            ));
        }
        self.updates = updates;
        self.candidates = Vec::new();
        Ok(self)
    }
}

impl SourceKeys {
    /// Indexes the key columns of the source (`names[i]` is `columns[i]`'s name, for
    /// messages). The columns must already be in the target's types.
    pub fn new(names: &[String], columns: &[ArrayRef]) -> Result<Self> {
        let rows = columns.first().map_or(0, |c| c.len());
        if columns.is_empty() || columns.len() != names.len() {
            return Err(TxnError::operation(OP, "no key column is named"));
        }
        if columns.iter().any(|c| c.len() != rows) {
            return Err(TxnError::operation(OP, "key columns differ in length"));
        }
        let rows32 = u32::try_from(rows).map_err(|_| {
            TxnError::operation(OP, format!("{rows} source rows: at most 2^32 in one merge"))
        })?;
        let mut more: HashMap<u32, Vec<u32>> = HashMap::new();
        let index = match int_values(columns) {
            Some(values) => {
                let mut first = hashbrown::HashMap::with_capacity(rows);
                for (i, v) in (0..rows32).zip(values) {
                    if has_null(columns, i as usize) {
                        continue;
                    }
                    match first.entry(v) {
                        hashbrown::hash_map::Entry::Occupied(e) => {
                            more.entry(*e.get()).or_default().push(i)
                        }
                        hashbrown::hash_map::Entry::Vacant(e) => {
                            e.insert(i);
                        }
                    }
                }
                KeyIndex::Int(first)
            }
            None => {
                let converter = converter(columns)?;
                let converted = convert(&converter, columns)?;
                let state = hashbrown::DefaultHashBuilder::default();
                let mut first: HashTable<u32> = HashTable::with_capacity(rows);
                for i in 0..rows32 {
                    if has_null(columns, i as usize) {
                        continue;
                    }
                    let key = converted.row(i as usize);
                    let h = state.hash_one(key.as_ref());
                    let same = |j: &u32| converted.row(*j as usize).as_ref() == key.as_ref();
                    match first.find(h, same) {
                        Some(j) => more.entry(*j).or_default().push(i),
                        None => {
                            first.insert_unique(h, i, |j| {
                                state.hash_one(converted.row(*j as usize).as_ref())
                            });
                        }
                    }
                }
                KeyIndex::Rows {
                    converter,
                    converted,
                    state,
                    first,
                }
            }
        };
        Ok(SourceKeys {
            names: names.to_vec(),
            rows,
            index,
            more,
        })
    }

    /// The source rows sharing `first`'s key, `first` first.
    fn with_more(&self, first: u32) -> (u32, &[u32]) {
        (first, self.more.get(&first).map_or(&[][..], Vec::as_slice))
    }

    /// The number of source rows.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Starts matching under `rules`.
    pub fn matching(&self, rules: MergeRules) -> Matching<'_> {
        Matching {
            source: self,
            rules,
            matched: vec![false; self.rows],
            out: Matched::default(),
        }
    }
}

/// Target rows probed against the source so far.
pub struct Matching<'a> {
    source: &'a SourceKeys,
    rules: MergeRules,
    matched: Vec<bool>,
    out: Matched,
}

impl Matching<'_> {
    /// Probes target rows: `columns` are their key columns (the target's types), `addresses`
    /// their row addresses. Each live target row must be probed at most once.
    pub fn probe(&mut self, columns: &[ArrayRef], addresses: &[u64]) -> Result<()> {
        if columns.len() != self.source.names.len()
            || columns.iter().any(|c| c.len() != addresses.len())
        {
            return Err(TxnError::operation(
                OP,
                "target key columns do not match the source's",
            ));
        }
        // target keys in the source's form: values for an integer key, row encodings else
        let (ints, converted) = match &self.source.index {
            KeyIndex::Int(_) => (int_values(columns), None),
            KeyIndex::Rows { converter, .. } => (None, Some(convert(converter, columns)?)),
        };
        for (i, &address) in addresses.iter().enumerate() {
            let hits = if has_null(columns, i) {
                None
            } else {
                match (&self.source.index, &ints, &converted) {
                    (KeyIndex::Int(first), Some(values), _) => values
                        .get(i)
                        .and_then(|v| first.get(v))
                        .map(|j| self.source.with_more(*j)),
                    (
                        KeyIndex::Rows {
                            converted: source,
                            state,
                            first,
                            ..
                        },
                        _,
                        Some(target),
                    ) => {
                        let key = target.row(i);
                        let h = state.hash_one(key.as_ref());
                        first
                            .find(h, |j| source.row(*j as usize).as_ref() == key.as_ref())
                            .map(|j| self.source.with_more(*j))
                    }
                    _ => {
                        return Err(TxnError::operation(
                            OP,
                            "target key columns are not of the source's types",
                        ))
                    }
                }
            };
            let Some((first, others)) = hits else {
                if self.rules.collect_unmatched_target {
                    self.out.unmatched_target.push(address);
                }
                continue;
            };
            for s in std::iter::once(&first).chain(others) {
                if let Some(m) = self.matched.get_mut(*s as usize) {
                    *m = true;
                }
            }
            let writes = matches!(
                self.rules.when_matched,
                WhenMatched::UpdateAll | WhenMatched::Delete
            );
            if writes && !others.is_empty() {
                return Err(TxnError::operation(
                    OP,
                    format!(
                        "Ambiguous merge inserts are prohibited: multiple source rows match \
                         the same target row on ({}). Please ensure each target row is \
                         matched by at most one source row.",
                        key_text(&self.source.names, columns, i)
                    ),
                ));
            }
            match self.rules.when_matched {
                WhenMatched::UpdateAll => self.out.updates.push((address, first)),
                WhenMatched::UpdateIf => {
                    for s in std::iter::once(&first).chain(others) {
                        self.out.candidates.push((address, *s));
                    }
                }
                WhenMatched::Delete => self.out.deletes.push(address),
                WhenMatched::Fail => {
                    return Err(TxnError::operation(
                        OP,
                        format!(
                            "Merge insert failed: found matching row with key values: {}",
                            key_text(&self.source.names, columns, i)
                        ),
                    ))
                }
                WhenMatched::DoNothing => {}
            }
        }
        Ok(())
    }

    /// What the merge does.
    pub fn finish(self) -> Matched {
        let mut out = self.out;
        out.updates.sort_unstable();
        out.deletes.sort_unstable();
        out.unmatched_target.sort_unstable();
        if self.rules.insert_not_matched {
            out.inserts = self
                .matched
                .iter()
                .enumerate()
                .filter(|(_, m)| !**m)
                .filter_map(|(i, _)| u32::try_from(i).ok())
                .collect();
        }
        out
    }
}

fn converter(columns: &[ArrayRef]) -> Result<RowConverter> {
    RowConverter::new(
        columns
            .iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )
    .map_err(|e| TxnError::operation(OP, format!("the key columns cannot be compared: {e}")))
}

fn convert(converter: &RowConverter, columns: &[ArrayRef]) -> Result<Rows> {
    converter
        .convert_columns(columns)
        .map_err(|e| TxnError::operation(OP, format!("the key columns cannot be compared: {e}")))
}

fn has_null(columns: &[ArrayRef], row: usize) -> bool {
    columns.iter().any(|c| c.is_null(row))
}

/// `id = 2, name = "x"`, as Lance names a key in its messages.
fn key_text(names: &[String], columns: &[ArrayRef], row: usize) -> String {
    let options = arrow_cast::display::FormatOptions::default().with_null("NULL");
    names
        .iter()
        .zip(columns)
        .map(|(name, c)| {
            let value = arrow_cast::display::ArrayFormatter::try_new(c.as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|_| format!("<{}>", c.data_type()));
            let quoted =
                matches!(c.data_type(), DataType::Utf8 | DataType::LargeUtf8) && !c.is_null(row);
            if quoted {
                format!("{name} = \"{value}\"")
            } else {
                format!("{name} = {value}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Lance 14.0.2's `KeyValue`: the parts of a key as its conflict filter hashes them.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyValue {
    Str(String),
    Int64(i64),
    UInt64(u64),
    Binary(Vec<u8>),
    /// A list, a struct or a composite key: parts each followed by a 0 byte.
    Parts(Vec<KeyValue>),
}

impl KeyValue {
    fn to_bytes(&self, out: &mut Vec<u8>) {
        match self {
            KeyValue::Str(s) => out.extend_from_slice(s.as_bytes()),
            KeyValue::Int64(i) => out.extend_from_slice(&i.to_le_bytes()),
            KeyValue::UInt64(u) => out.extend_from_slice(&u.to_le_bytes()),
            KeyValue::Binary(b) => out.extend_from_slice(b),
            KeyValue::Parts(parts) => {
                for p in parts {
                    p.to_bytes(out);
                    out.push(0);
                }
            }
        }
    }
}

/// A key part as Lance reads it (`extract_key_value`); `None` for a NULL or a type Lance does
/// not hash.
fn key_part(array: &dyn Array, row: usize) -> Option<KeyValue> {
    if array.is_null(row) {
        return None;
    }
    let list = |values: ArrayRef| -> Option<KeyValue> {
        (0..values.len())
            .map(|i| key_part(values.as_ref(), i))
            .collect::<Option<Vec<_>>>()
            .map(KeyValue::Parts)
    };
    Some(match array.data_type() {
        DataType::Utf8 => KeyValue::Str(array.as_string::<i32>().value(row).to_string()),
        DataType::LargeUtf8 => KeyValue::Str(array.as_string::<i64>().value(row).to_string()),
        DataType::UInt64 => KeyValue::UInt64(array.as_primitive::<UInt64Type>().value(row)),
        DataType::Int64 => KeyValue::Int64(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt32 => {
            KeyValue::UInt64(u64::from(array.as_primitive::<UInt32Type>().value(row)))
        }
        DataType::Int32 => KeyValue::Int64(i64::from(array.as_primitive::<Int32Type>().value(row))),
        DataType::Binary => KeyValue::Binary(array.as_binary::<i32>().value(row).to_vec()),
        DataType::LargeBinary => KeyValue::Binary(array.as_binary::<i64>().value(row).to_vec()),
        DataType::List(_) => list(array.as_list::<i32>().value(row))?,
        DataType::LargeList(_) => list(array.as_list::<i64>().value(row))?,
        DataType::Struct(_) => KeyValue::Parts(
            array
                .as_struct()
                .columns()
                .iter()
                .map(|c| key_part(c.as_ref(), row))
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// Lance's hash of a key's bytes (`KeyValue::hash_value`: the std `DefaultHasher` over the
/// byte vector).
fn hash_bytes(bytes: Vec<u8>) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

/// The conflict filter of the keys of `rows` of `columns` (the key columns, in the target's
/// types), naming `field_ids`: an exact set of key hashes, Lance's hash where Lance hashes the
/// key's types, else the hash of the key's row encoding (lancet's, so every key type is
/// guarded). Keys with a NULL part are left out (they match nothing, so no race duplicates
/// them).
pub fn inserted_keys(
    field_ids: &[i32],
    columns: &[ArrayRef],
    rows: impl IntoIterator<Item = usize>,
) -> Result<KeyExistenceFilter> {
    let converter = converter(columns)?;
    let converted = convert(&converter, columns)?;
    let mut hashes = Vec::new();
    for row in rows {
        if row >= converted.num_rows() || has_null(columns, row) {
            continue;
        }
        let parts: Option<Vec<KeyValue>> =
            columns.iter().map(|c| key_part(c.as_ref(), row)).collect();
        let mut bytes = Vec::new();
        match parts {
            Some(mut parts) if parts.len() == 1 => {
                if let Some(p) = parts.pop() {
                    p.to_bytes(&mut bytes)
                }
            }
            Some(parts) => KeyValue::Parts(parts).to_bytes(&mut bytes),
            None => KeyValue::Binary(converted.row(row).as_ref().to_vec()).to_bytes(&mut bytes),
        }
        hashes.push(hash_bytes(bytes));
    }
    hashes.sort_unstable();
    hashes.dedup();
    Ok(KeyExistenceFilter {
        field_ids: field_ids.to_vec(),
        data: Some(FilterData::Exact(ExactKeySetFilter { key_hashes: hashes })),
    })
}

/// Whether two merges' inserted keys may share a key: `None` when they cannot be compared
/// (other key columns, or a Bloom filter on either side), which a caller treats as a
/// conflict, as Lance does.
pub fn keys_intersect(a: &KeyExistenceFilter, b: &KeyExistenceFilter) -> Option<bool> {
    if a.field_ids != b.field_ids {
        return None;
    }
    match (&a.data, &b.data) {
        (Some(FilterData::Exact(x)), Some(FilterData::Exact(y))) => {
            let (small, large) = if x.key_hashes.len() <= y.key_hashes.len() {
                (x, y)
            } else {
                (y, x)
            };
            let large: std::collections::HashSet<u64> = large.key_hashes.iter().copied().collect();
            Some(small.key_hashes.iter().any(|h| large.contains(h)))
        }
        (None, _) | (_, None) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    fn ints(v: &[Option<i64>]) -> ArrayRef {
        Arc::new(Int64Array::from(v.to_vec()))
    }

    fn rules(when_matched: WhenMatched) -> MergeRules {
        MergeRules {
            when_matched,
            insert_not_matched: true,
            collect_unmatched_target: true,
        }
    }

    #[test]
    fn upsert_updates_in_target_order_and_inserts_in_source_order() {
        let names = vec!["id".to_string()];
        let source = SourceKeys::new(
            &names,
            &[ints(&[Some(7), Some(3), Some(12), Some(5), None, Some(12)])],
        )
        .unwrap();
        let mut m = source.matching(rules(WhenMatched::UpdateAll));
        m.probe(&[ints(&[Some(3), Some(5), None])], &[10, 11, 12])
            .unwrap();
        m.probe(&[ints(&[Some(7), Some(8)])], &[1, 2]).unwrap();
        let out = m.finish();
        assert_eq!(out.updates, vec![(1, 0), (10, 1), (11, 3)]);
        // NULL keys and source duplicates that match nothing are all inserted
        assert_eq!(out.inserts, vec![2, 4, 5]);
        assert_eq!(out.unmatched_target, vec![2, 12]);
    }

    #[test]
    fn a_target_row_matched_twice_is_refused_as_lance_refuses_it() {
        let names = vec!["id".to_string()];
        let source = SourceKeys::new(&names, &[ints(&[Some(2), Some(2)])]).unwrap();
        for action in [WhenMatched::UpdateAll, WhenMatched::Delete] {
            let mut m = source.matching(rules(action));
            let e = m.probe(&[ints(&[Some(2)])], &[0]).unwrap_err();
            assert!(
                e.to_string()
                    .contains("Ambiguous merge inserts are prohibited")
                    && e.to_string().contains("(id = 2)"),
                "{e}"
            );
        }
        // doing nothing with the match is not ambiguous
        let mut m = source.matching(rules(WhenMatched::DoNothing));
        m.probe(&[ints(&[Some(2)])], &[0]).unwrap();
        assert!(m.finish().inserts.is_empty());
    }

    #[test]
    fn a_conditional_update_settles_its_candidates() {
        let names = vec!["id".to_string()];
        let keys = ints(&[Some(2), Some(2), Some(3)]);
        let source = SourceKeys::new(&names, std::slice::from_ref(&keys)).unwrap();
        let mut m = source.matching(rules(WhenMatched::UpdateIf));
        m.probe(&[ints(&[Some(3), Some(2)])], &[7, 8]).unwrap();
        let out = m.finish();
        assert_eq!(out.candidates, vec![(7, 2), (8, 0), (8, 1)]);
        // one of the two pairs on row 8 holds: fine; both: ambiguous
        let settled = out
            .clone()
            .settle(&[true, false, true], &names, std::slice::from_ref(&keys))
            .unwrap();
        assert_eq!(settled.updates, vec![(7, 2), (8, 1)]);
        let e = out
            .settle(&[false, true, true], &names, std::slice::from_ref(&keys))
            .unwrap_err();
        assert!(e.to_string().contains("(id = 2)"), "{e}");
    }

    #[test]
    fn fail_refuses_the_first_match_and_delete_deletes() {
        let names = vec!["k".to_string()];
        let s: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let source = SourceKeys::new(&names, &[s]).unwrap();
        let t: ArrayRef = Arc::new(StringArray::from(vec!["b", "c"]));
        let e = source
            .matching(rules(WhenMatched::Fail))
            .probe(std::slice::from_ref(&t), &[5, 6])
            .unwrap_err();
        assert!(e.to_string().contains("k = \"b\""), "{e}");
        let mut m = source.matching(rules(WhenMatched::Delete));
        m.probe(&[t], &[5, 6]).unwrap();
        let out = m.finish();
        assert_eq!((out.deletes, out.inserts), (vec![5], vec![0]));
    }

    #[test]
    fn inserted_keys_hash_as_lance_and_intersect_exactly() {
        // Lance 14.0.2: KeyValue::Int64(5).hash_value() = DefaultHasher over vec![5, 0, ..]
        let mut h = DefaultHasher::new();
        5i64.to_le_bytes().to_vec().hash(&mut h);
        let a = inserted_keys(&[0], &[ints(&[Some(5), None, Some(9)])], 0..3).unwrap();
        let Some(FilterData::Exact(e)) = &a.data else {
            panic!("not exact")
        };
        assert!(e.key_hashes.contains(&h.finish()));
        assert_eq!(e.key_hashes.len(), 2);
        let b = inserted_keys(&[0], &[ints(&[Some(9)])], 0..1).unwrap();
        let c = inserted_keys(&[0], &[ints(&[Some(10)])], 0..1).unwrap();
        assert_eq!(keys_intersect(&a, &b), Some(true));
        assert_eq!(keys_intersect(&a, &c), Some(false));
        let other_columns = inserted_keys(&[1], &[ints(&[Some(10)])], 0..1).unwrap();
        assert_eq!(keys_intersect(&a, &other_columns), None);
    }
}
