//! Leaves: the Arrow schema of a leaf Lance file, and records to and from record batches.
//!
//! Decoding (`decode_records`) is pure and runs after the stored schema has been compared
//! with [`leaf_schema`] exactly (decision 17). It rejects, with the rule each breaks:
//! a null anywhere but `base_id` (dictionary keys and values included); a mapping vector
//! whose length is not a multiple of 4 or a dictionary key out of bounds; `fragment_meta` that
//! does not decode, or carries a nonzero id, files or overlays; `overlay_meta` that does not
//! decode or carries a `data_file`; an empty leaf; ids that do not strictly increase or do not
//! fit in u32; and the record rules of `records`. Unused and repeated dictionary
//! values are accepted (decision 9): vectors are compared, not keys.
//!
//! Cost: one pass over the rows; each dictionary value is decoded once per column.
#![deny(clippy::unwrap_used, clippy::indexing_slicing, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, DictionaryArray, ListArray, RecordBatch, StringArray,
    StructArray, UInt32Array, UInt64Array,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use lancet_proto::table::{DataFile, DataFragment, DataOverlayFile};
use prost::Message;

use crate::error::Rule;
use crate::records::{check_record, Checked, Violation};

fn mapping_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary))
}

fn data_file_fields() -> Fields {
    Fields::from(vec![
        Field::new("path", DataType::Utf8, false),
        Field::new("field_ids", mapping_type(), false),
        Field::new("column_indices", mapping_type(), false),
        Field::new("major_version", DataType::UInt32, false),
        Field::new("minor_version", DataType::UInt32, false),
        Field::new("file_size_bytes", DataType::UInt64, false),
        Field::new("base_id", DataType::UInt32, true),
    ])
}

fn overlay_fields() -> Fields {
    Fields::from(vec![
        Field::new("data_file", DataType::Struct(data_file_fields()), false),
        Field::new("overlay_meta", DataType::Binary, false),
    ])
}

fn files_item() -> Arc<Field> {
    Arc::new(Field::new(
        "item",
        DataType::Struct(data_file_fields()),
        false,
    ))
}

fn overlays_item() -> Arc<Field> {
    Arc::new(Field::new(
        "item",
        DataType::Struct(overlay_fields()),
        false,
    ))
}

/// The exact leaf schema of the spec's "Leaf format".
pub fn leaf_schema() -> Schema {
    Schema::new(vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("fragment_meta", DataType::Binary, false),
        Field::new("files", DataType::List(files_item()), false),
        Field::new("overlays", DataType::List(overlays_item()), false),
    ])
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// Builds one dictionary column of mapping vectors (LE i32, no length prefix), each distinct
/// vector stored once.
fn mapping_column(vectors: &[&[i32]]) -> Checked<ArrayRef> {
    let mut index: HashMap<&[i32], i32> = HashMap::new();
    let mut values: Vec<Vec<u8>> = Vec::new();
    let mut keys = Vec::with_capacity(vectors.len());
    for v in vectors {
        let next = i32::try_from(values.len())
            .map_err(|_| Violation::new(Rule::LeafValues, "more than 2^31 mapping vectors"))?;
        let key = *index.entry(v).or_insert_with(|| {
            values.push(v.iter().flat_map(|x| x.to_le_bytes()).collect());
            next
        });
        keys.push(key);
    }
    let values = BinaryArray::from_iter_values(values.iter());
    let array = DictionaryArray::<Int32Type>::try_new(keys.into(), Arc::new(values))
        .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))?;
    Ok(Arc::new(array))
}

fn data_file_struct(files: &[&DataFile]) -> Checked<StructArray> {
    let fields: Vec<&[i32]> = files.iter().map(|f| f.fields.as_slice()).collect();
    let cols: Vec<&[i32]> = files.iter().map(|f| f.column_indices.as_slice()).collect();
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            files.iter().map(|f| f.path.as_str()),
        )),
        mapping_column(&fields)?,
        mapping_column(&cols)?,
        Arc::new(UInt32Array::from_iter_values(
            files.iter().map(|f| f.file_major_version),
        )),
        Arc::new(UInt32Array::from_iter_values(
            files.iter().map(|f| f.file_minor_version),
        )),
        Arc::new(UInt64Array::from_iter_values(
            files.iter().map(|f| f.file_size_bytes),
        )),
        Arc::new(UInt32Array::from_iter(files.iter().map(|f| f.base_id))),
    ];
    StructArray::try_new(data_file_fields(), arrays, None)
        .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))
}

fn offsets(lists: impl Iterator<Item = usize>) -> Checked<OffsetBuffer<i32>> {
    let mut out = Vec::new();
    let mut at = 0i32;
    out.push(at);
    for len in lists {
        let len = i32::try_from(len)
            .map_err(|_| Violation::new(Rule::LeafValues, "list longer than 2^31"))?;
        at = at
            .checked_add(len)
            .ok_or_else(|| Violation::new(Rule::LeafValues, "more than 2^31 list items"))?;
        out.push(at);
    }
    Ok(OffsetBuffer::new(out.into()))
}

/// The record batch of one leaf holding `records` (already in strictly increasing id order).
pub fn encode_records(records: &[DataFragment]) -> Checked<RecordBatch> {
    let ids = UInt64Array::from_iter_values(records.iter().map(|f| f.id));
    let metas = BinaryArray::from_iter_values(records.iter().map(|f| {
        DataFragment {
            id: 0,
            files: Vec::new(),
            overlays: Vec::new(),
            ..f.clone()
        }
        .encode_to_vec()
    }));
    let files: Vec<&DataFile> = records.iter().flat_map(|f| &f.files).collect();
    let files = ListArray::try_new(
        files_item(),
        offsets(records.iter().map(|f| f.files.len()))?,
        Arc::new(data_file_struct(&files)?),
        None,
    )
    .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))?;
    let default_file = DataFile::default();
    let overlay_files: Vec<&DataFile> = records
        .iter()
        .flat_map(|f| &f.overlays)
        .map(|o| o.data_file.as_ref().unwrap_or(&default_file))
        .collect();
    let overlay_metas: Vec<Vec<u8>> = records
        .iter()
        .flat_map(|f| &f.overlays)
        .map(|o| {
            DataOverlayFile {
                data_file: None,
                ..o.clone()
            }
            .encode_to_vec()
        })
        .collect();
    let overlay_metas = BinaryArray::from_iter_values(overlay_metas);
    let overlay_struct = StructArray::try_new(
        overlay_fields(),
        vec![
            Arc::new(data_file_struct(&overlay_files)?),
            Arc::new(overlay_metas),
        ],
        None,
    )
    .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))?;
    let overlays = ListArray::try_new(
        overlays_item(),
        offsets(records.iter().map(|f| f.overlays.len()))?,
        Arc::new(overlay_struct),
        None,
    )
    .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))?;
    RecordBatch::try_new(
        SchemaRef::new(leaf_schema()),
        vec![
            Arc::new(ids),
            Arc::new(metas),
            Arc::new(files),
            Arc::new(overlays),
        ],
    )
    .map_err(|e| Violation::new(Rule::LeafValues, e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Decoding

fn values_rule(detail: impl Into<String>) -> Violation {
    Violation::new(Rule::LeafValues, detail)
}

fn downcast<'a, T: 'static>(a: &'a dyn Array, what: &str) -> Checked<&'a T> {
    a.as_any().downcast_ref::<T>().ok_or_else(|| {
        Violation::new(
            Rule::LeafSchema,
            format!("{what} has an unexpected array type"),
        )
    })
}

fn no_nulls(a: &dyn Array, what: &str) -> Checked<()> {
    if a.null_count() > 0 || a.logical_null_count() > 0 {
        return Err(values_rule(format!("{what} holds a null")));
    }
    Ok(())
}

fn column<'a>(s: &'a StructArray, i: usize, name: &str) -> Checked<&'a ArrayRef> {
    s.columns()
        .get(i)
        .ok_or_else(|| Violation::new(Rule::LeafSchema, format!("struct field {name} missing")))
}

/// A dictionary column of mapping vectors, each distinct value decoded once.
struct Mapping<'a> {
    keys: &'a [i32],
    values: Vec<Vec<i32>>,
}

impl<'a> Mapping<'a> {
    fn new(a: &'a ArrayRef, what: &str) -> Checked<Self> {
        let dict = downcast::<DictionaryArray<Int32Type>>(a.as_ref(), what)?;
        no_nulls(dict.keys(), what)?;
        let values = downcast::<BinaryArray>(dict.values().as_ref(), what)?;
        no_nulls(values, &format!("{what} dictionary"))?;
        let values = values
            .iter()
            .map(|v| {
                let v = v.unwrap_or_default();
                if v.len() % 4 != 0 {
                    return Err(values_rule(format!(
                        "{what}: a mapping vector of {} bytes is not a multiple of 4",
                        v.len()
                    )));
                }
                Ok(v.chunks_exact(4)
                    .filter_map(|c| c.try_into().ok().map(i32::from_le_bytes))
                    .collect())
            })
            .collect::<Checked<Vec<Vec<i32>>>>()?;
        Ok(Self {
            keys: dict.keys().values(),
            values,
        })
    }

    fn get(&self, row: usize, what: &str) -> Checked<Vec<i32>> {
        let key = *self
            .keys
            .get(row)
            .ok_or_else(|| values_rule(format!("{what}: row {row} out of range")))?;
        usize::try_from(key)
            .ok()
            .and_then(|k| self.values.get(k))
            .cloned()
            .ok_or_else(|| {
                values_rule(format!(
                    "{what}: dictionary key {key} out of bounds ({} values)",
                    self.values.len()
                ))
            })
    }
}

/// The data files of one struct column, in row order.
fn decode_data_files(s: &StructArray, what: &str) -> Checked<Vec<DataFile>> {
    no_nulls(s, what)?;
    let path = downcast::<StringArray>(column(s, 0, "path")?.as_ref(), "path")?;
    let fields = Mapping::new(column(s, 1, "field_ids")?, "field_ids")?;
    let cols = Mapping::new(column(s, 2, "column_indices")?, "column_indices")?;
    let major = downcast::<UInt32Array>(column(s, 3, "major_version")?.as_ref(), "major_version")?;
    let minor = downcast::<UInt32Array>(column(s, 4, "minor_version")?.as_ref(), "minor_version")?;
    let size =
        downcast::<UInt64Array>(column(s, 5, "file_size_bytes")?.as_ref(), "file_size_bytes")?;
    let base = downcast::<UInt32Array>(column(s, 6, "base_id")?.as_ref(), "base_id")?;
    for (a, name) in [
        (path as &dyn Array, "path"),
        (major, "major_version"),
        (minor, "minor_version"),
        (size, "file_size_bytes"),
    ] {
        no_nulls(a, name)?;
    }
    (0..s.len())
        .map(|i| {
            Ok(DataFile {
                path: path.value(i).to_string(),
                fields: fields.get(i, "field_ids")?,
                column_indices: cols.get(i, "column_indices")?,
                file_major_version: major.value(i),
                file_minor_version: minor.value(i),
                file_size_bytes: size.value(i),
                base_id: base.is_valid(i).then(|| base.value(i)),
            })
        })
        .collect()
}

fn list_ranges(list: &ListArray, what: &str) -> Checked<Vec<std::ops::Range<usize>>> {
    no_nulls(list, what)?;
    let offsets = list.value_offsets();
    let len = list.values().len();
    offsets
        .windows(2)
        .map(|w| match w {
            [a, b] => usize::try_from(*a)
                .ok()
                .zip(usize::try_from(*b).ok())
                .filter(|(a, b)| a <= b && *b <= len)
                .map(|(a, b)| a..b)
                .ok_or_else(|| values_rule(format!("{what}: list offsets out of bounds"))),
            _ => Err(values_rule(format!("{what}: list offsets out of bounds"))),
        })
        .collect()
}

/// Hands out the items of consecutive list ranges by moving them, without copies. Ranges
/// come from a validated `ListArray`, so they are ascending and adjacent; anything else is
/// reported rather than trusted.
struct Lists<T> {
    items: std::vec::IntoIter<T>,
    at: usize,
}

impl<T> Lists<T> {
    fn new(items: Vec<T>) -> Self {
        Self {
            items: items.into_iter(),
            at: 0,
        }
    }

    fn take(&mut self, range: std::ops::Range<usize>) -> Checked<Vec<T>> {
        if range.start < self.at {
            return Err(values_rule("list offsets go backwards"));
        }
        // skip items no row names (a sliced list's leading values)
        for _ in self.at..range.start {
            self.items.next();
        }
        let out: Vec<T> = self.items.by_ref().take(range.len()).collect();
        if out.len() != range.len() {
            return Err(values_rule("list offsets out of bounds"));
        }
        self.at = range.end;
        Ok(out)
    }
}

/// The records of one leaf batch, checked (see the module doc). `batch` must already have the
/// exact [`leaf_schema`].
pub(crate) fn decode_records(batch: &RecordBatch) -> Checked<Vec<DataFragment>> {
    if batch.num_rows() == 0 {
        return Err(Violation::new(Rule::LeafEmpty, "a leaf holds no records"));
    }
    let col = |i: usize| {
        batch
            .columns()
            .get(i)
            .ok_or_else(|| Violation::new(Rule::LeafSchema, "column missing"))
    };
    let ids = downcast::<UInt64Array>(col(0)?.as_ref(), "id")?;
    let metas = downcast::<BinaryArray>(col(1)?.as_ref(), "fragment_meta")?;
    let files = downcast::<ListArray>(col(2)?.as_ref(), "files")?;
    let overlays = downcast::<ListArray>(col(3)?.as_ref(), "overlays")?;
    no_nulls(ids, "id")?;
    no_nulls(metas, "fragment_meta")?;

    let file_ranges = list_ranges(files, "files")?;
    let all_files = decode_data_files(
        downcast::<StructArray>(files.values().as_ref(), "files item")?,
        "files item",
    )?;
    let overlay_ranges = list_ranges(overlays, "overlays")?;
    let overlay_struct = downcast::<StructArray>(overlays.values().as_ref(), "overlays item")?;
    no_nulls(overlay_struct, "overlays item")?;
    let overlay_files = decode_data_files(
        downcast::<StructArray>(
            column(overlay_struct, 0, "data_file")?.as_ref(),
            "data_file",
        )?,
        "overlay data_file",
    )?;
    let overlay_metas = downcast::<BinaryArray>(
        column(overlay_struct, 1, "overlay_meta")?.as_ref(),
        "overlay_meta",
    )?;
    no_nulls(overlay_metas, "overlay_meta")?;
    let all_overlays = overlay_files
        .into_iter()
        .zip(overlay_metas.iter())
        .map(|(file, meta)| {
            let mut o = DataOverlayFile::decode(meta.unwrap_or_default()).map_err(|e| {
                Violation::new(
                    Rule::OverlayMeta,
                    format!("overlay_meta does not decode: {e}"),
                )
            })?;
            if o.data_file.is_some() {
                return Err(Violation::new(
                    Rule::OverlayMeta,
                    "overlay_meta carries a data_file",
                ));
            }
            o.data_file = Some(file);
            Ok(o)
        })
        .collect::<Checked<Vec<_>>>()?;

    let mut out = Vec::with_capacity(batch.num_rows());
    let mut all_files = Lists::new(all_files);
    let mut all_overlays = Lists::new(all_overlays);
    let mut previous: Option<u64> = None;
    for (row, ((id, meta), (fr, or))) in ids
        .values()
        .iter()
        .zip(metas.iter())
        .zip(file_ranges.into_iter().zip(overlay_ranges))
        .enumerate()
    {
        let id = *id;
        if previous.is_some_and(|p| p >= id) {
            return Err(Violation::new(
                Rule::LeafIdOrder,
                format!("row {row}: id {id} does not exceed the previous id"),
            ));
        }
        previous = Some(id);
        if id > u64::from(u32::MAX) {
            return Err(Violation::new(
                Rule::LeafIdRange,
                format!("row {row}: id {id} does not fit in u32"),
            ));
        }
        let mut f = DataFragment::decode(meta.unwrap_or_default()).map_err(|e| {
            Violation::new(
                Rule::FragmentMeta,
                format!("row {row}: fragment_meta does not decode: {e}"),
            )
        })?;
        if f.id != 0 || !f.files.is_empty() || !f.overlays.is_empty() {
            return Err(Violation::new(
                Rule::FragmentMeta,
                format!(
                    "row {row}: fragment_meta must have id 0 and no files or overlays (id {}, {} files, {} overlays)",
                    f.id,
                    f.files.len(),
                    f.overlays.len()
                ),
            ));
        }
        f.id = id;
        f.files = all_files.take(fr)?;
        f.overlays = all_overlays.take(or)?;
        check_record(&f)
            .map_err(|v| Violation::new(v.rule, format!("fragment {id}: {}", v.detail)))?;
        out.push(f);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use lancet_proto::table::{data_overlay_file::Coverage, DeletionFile};

    pub(crate) fn sample(id: u64) -> DataFragment {
        DataFragment {
            id,
            files: vec![
                DataFile {
                    path: format!("f{id}.lance"),
                    fields: vec![0, 1, -2],
                    column_indices: vec![0, 1, -1],
                    file_major_version: 2,
                    file_minor_version: 1,
                    file_size_bytes: 100 + id,
                    base_id: id.is_multiple_of(2).then_some(3),
                },
                DataFile {
                    path: format!("f{id}.lance"),
                    fields: vec![],
                    column_indices: vec![],
                    file_major_version: 2,
                    file_minor_version: 0,
                    ..Default::default()
                },
            ],
            deletion_file: id.is_multiple_of(3).then(|| DeletionFile {
                num_deleted_rows: 2,
                id: 9,
                ..Default::default()
            }),
            physical_rows: 10,
            overlays: if id % 4 == 1 {
                vec![lancet_proto::table::DataOverlayFile {
                    data_file: Some(DataFile {
                        path: "o.lance".into(),
                        fields: vec![1],
                        column_indices: vec![0],
                        file_major_version: 2,
                        file_minor_version: 1,
                        ..Default::default()
                    }),
                    coverage: Some(Coverage::SharedOffsetBitmap(vec![1, 2, 3])),
                    committed_version: 4,
                }]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn encode_then_decode_is_identity() {
        let records: Vec<_> = (0..20).map(sample).collect();
        let batch = encode_records(&records).unwrap();
        assert_eq!(batch.schema().as_ref(), &leaf_schema());
        assert_eq!(decode_records(&batch).unwrap(), records);
    }

    #[test]
    fn decode_rejects_order_and_range() {
        let batch = encode_records(&[sample(2), sample(2)]).unwrap();
        assert_eq!(decode_records(&batch).unwrap_err().rule, Rule::LeafIdOrder);
        let batch = encode_records(&[sample(1 << 32)]).unwrap();
        assert_eq!(decode_records(&batch).unwrap_err().rule, Rule::LeafIdRange);
        let batch = encode_records(&[]).unwrap();
        assert_eq!(decode_records(&batch).unwrap_err().rule, Rule::LeafEmpty);
    }
}
