//! Column backfill: [`Dataset::add_column`](crate::Dataset::add_column).
//!
//! Composition only. The new column's type is the expression's (lancet-filter evaluates it
//! on the table's empty schema). Every fragment's file is computed first (the column
//! evaluated on the fragment's stored rows, deleted rows included, as a data file covers
//! physical rows), so an expression that fails on any row publishes nothing and the files
//! written for it are deleted, as pylance's `add_columns` leaves its table. Then, by default,
//! one Lance Merge publishes the schema and every fragment's new file, as pylance commits it.
//! With `fragments_per_commit` below the fragment count, the Merge publishes the schema alone
//! (every fragment reads NULL for the column until backfilled) and each batch of fragments
//! gets its files in a DataReplacement (on a tree, `add_data_file` mutations, never whole
//! records). A run stopped between those commits is finished by running it again: a column
//! that exists with the expression's type and fragments without a file for it is completed.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use lancet_file::{FragmentOptions, Rows};
use lancet_filter::Scalar;
use lancet_proto::table::transaction::{Merge, Operation};
use lancet_proto::table::{DataFile, DataFragment};

use crate::committed::Committed;
use crate::operations;
use crate::write;
use lancet_filter::exprs::ValueExpr;
use lancet_read::error::{Error, Result};
use lancet_read::rows;
use lancet_read::snapshot::Snapshot;

/// How [`Dataset::add_column`](crate::Dataset::add_column) commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddColumnOptions {
    /// Fragments backfilled per commit (at least 1); the default, every fragment, is one
    /// Merge.
    pub fragments_per_commit: usize,
}

impl Default for AddColumnOptions {
    fn default() -> Self {
        AddColumnOptions {
            fragments_per_commit: usize::MAX,
        }
    }
}

/// Adds the column `name` holding `value` (an expression over the table's columns, as
/// `UPDATE ... SET` takes: SQL text such as `"id * 2"`, or a parsed value: [`ValueExpr`]) for every row; returns the last version. An expression naming
/// no column of the table, of no type (a bare NULL), or failing on any row is refused
/// with nothing published. A column of that name is refused unless it has the
/// expression's type and fragments without a file for it (a batched run that stopped
/// part way): then those fragments are completed.
pub(crate) async fn add_column(
    snap: &Snapshot,
    name: &str,
    value: impl ValueExpr,
    options: AddColumnOptions,
) -> Result<Committed> {
    let value = &value.to_scalar()?;
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("add column {name:?}"),
        reason,
    };
    if options.fragments_per_commit == 0 {
        return Err(invalid("fragments_per_commit must be at least 1".into()));
    }
    let schema = rows::schema(snap)?;
    let empty = RecordBatch::new_empty(schema.clone());
    let data_type = value.evaluate(&empty).map_err(invalid)?.data_type().clone();
    if data_type == arrow_schema::DataType::Null {
        return Err(invalid(
            "the expression has no type (cast a NULL to one)".into(),
        ));
    }
    let fragments = snap.fragments().await?;
    let whole = options.fragments_per_commit >= fragments.len();
    let nullable = declared_nullable(&schema, name, value, whole);
    let field = Field::new(name, data_type.clone(), nullable);
    let Target {
        ids,
        added,
        pending,
    } = target(snap, &schema, &field, &fragments).await?;
    let mut columns = Vec::new();
    value.columns(&mut columns);
    let columns: Vec<String> = columns.into_iter().map(str::to_string).collect();
    let projection = rows::projection(snap, Some(&columns))?;
    let file_schema = Arc::new(Schema::new(vec![field]));
    // every file first: an expression failing on any row publishes nothing
    let mut files: Vec<(u64, DataFile)> = Vec::with_capacity(pending.len());
    for f in &pending {
        match backfill_file(snap, f, value, &projection, &file_schema, &ids).await {
            Ok(file) => files.push((f.id, file)),
            Err(e) => {
                delete_unpublished(snap, files.iter().map(|(_, d)| d)).await;
                return Err(e);
            }
        }
    }
    let one_commit = added.is_some() && options.fragments_per_commit >= fragments.len();
    let published = match added {
        Some(added) => publish_fields(snap, &fragments, &files, added, one_commit).await,
        None => Ok(Committed::nothing(snap.clone())),
    };
    let mut done = match published {
        Ok(done) => done,
        Err(e) => {
            delete_unpublished(snap, files.iter().map(|(_, d)| d)).await;
            return Err(e);
        }
    };
    if one_commit {
        return Ok(done);
    }
    for batch in files.chunks(options.fragments_per_commit) {
        let replacement = lancet_txn::columns::data_replacement(batch);
        let next = done.dataset.commit(replacement).await?;
        done = done.then(next);
    }
    Ok(done)
}

/// Whether column `name` of `value` is declared nullable: as Lance declares the expression's
/// column (`v * 2` over a non-null `v` is not), except when the column is published before
/// its files (not `whole`: NULL until backfilled); a column being completed keeps its own.
fn declared_nullable(schema: &Schema, name: &str, value: &Scalar, whole: bool) -> bool {
    match schema.field_with_name(name) {
        Ok(existing) => existing.is_nullable(),
        Err(_) => !whole || value.nullable(schema),
    }
}

/// Where an added column goes.
struct Target<'a> {
    /// The field ids of the column (with its children).
    ids: Vec<i32>,
    /// The fields the schema gains; `None` when the column exists and is being completed.
    added: Option<Vec<lancet_proto::file::Field>>,
    /// The fragments that need a file for it.
    pending: Vec<&'a DataFragment>,
}

/// A new column `field` (new fields, every fragment pending), or the completion of an
/// existing column of the same name and type on the fragments no file of which holds it.
async fn target<'a>(
    snap: &Snapshot,
    schema: &Schema,
    field: &Field,
    fragments: &'a [DataFragment],
) -> Result<Target<'a>> {
    let name = field.name();
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("add column {name:?}"),
        reason,
    };
    let Ok(existing) = schema.field_with_name(name) else {
        let added = new_fields(snap, field).await?;
        return Ok(Target {
            ids: added.iter().map(|f| f.id).collect(),
            added: Some(added),
            pending: fragments.iter().collect(),
        });
    };
    let column = rows::projection(snap, Some(&[name.to_string()]))?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal(format!("column {name:?} not found")))?;
    let pending: Vec<&DataFragment> =
        lancet_txn::columns::lacking(fragments, column.id()).collect();
    if pending.is_empty() {
        return Err(invalid("the table has a column of that name".into()));
    }
    if existing.data_type() != field.data_type() {
        return Err(invalid(format!(
            "the column exists as {} and the expression is {}; \
             completing it needs an expression of its type",
            existing.data_type(),
            field.data_type()
        )));
    }
    Ok(Target {
        ids: column.ids.clone(),
        added: None,
        pending,
    })
}

/// The schema with `added` published as a Merge: with every fragment's new file in one
/// commit (`one_commit`), or alone (the column NULL until the files are put in place).
async fn publish_fields(
    snap: &Snapshot,
    fragments: &[DataFragment],
    files: &[(u64, DataFile)],
    added: Vec<lancet_proto::file::Field>,
    one_commit: bool,
) -> Result<Committed> {
    let preserves_nullability = lancet_txn::columns::preserves_nullability(&added);
    let mut fields = snap.manifest().fields.clone();
    fields.extend(added);
    let listed = match one_commit {
        true => lancet_txn::columns::with_written(fragments, files),
        false => fragments.to_vec(),
    };
    operations::commit(
        snap,
        Operation::Merge(Merge {
            fragments: listed,
            schema: fields,
            schema_metadata: snap.manifest().schema_metadata.clone(),
            preserves_nullability,
        }),
    )
    .await
}

/// Deletes data files this command wrote and did not publish (best effort: a file left
/// behind is one no version names, which cleanup removes after its grace period).
pub(crate) async fn delete_unpublished(snap: &Snapshot, files: impl Iterator<Item = &DataFile>) {
    for file in files {
        let path = snap
            .store()
            .path(&lancet_paths::layout::data_path(&file.path));
        if let Err(e) = snap.store().delete(&path).await {
            tracing::debug!(path = %path, error = %e, "unpublished data file left for cleanup");
        }
    }
}

/// The new field (and its children) as the manifest records them, with ids after every
/// id this table has allocated.
async fn new_fields(snap: &Snapshot, field: &Field) -> Result<Vec<lancet_proto::file::Field>> {
    let fields = lancet_file::manifest_fields(&Schema::new(vec![field.clone()]))?;
    Ok(lancet_txn::columns::numbered_from(
        fields,
        next_field_id(snap).await?,
    ))
}

/// The id the next new field takes: after every id the table has allocated, including
/// dropped columns' ids its data files still name (lancet-txn's `max_field_id`).
pub(crate) async fn next_field_id(snap: &Snapshot) -> Result<i32> {
    let fragments = snap.fragments().await?;
    Ok(lancet_txn::columns::next_field_id(
        snap.manifest(),
        fragments.iter(),
    ))
}

/// The data file of `value` for every physical row of `fragment`.
pub(crate) async fn backfill_file(
    snap: &Snapshot,
    fragment: &DataFragment,
    value: &Scalar,
    projection: &[lancet_file::Column],
    schema: &Arc<Schema>,
    ids: &[i32],
) -> Result<lancet_proto::table::DataFile> {
    let rows = rows::read_rows(snap, fragment, projection, Rows::All).await?;
    let column = value
        .evaluate_as(&rows, schema.field(0).data_type())
        .map_err(|reason| Error::InvalidArgument {
            what: format!("values for column {:?}", schema.field(0).name()),
            reason,
        })?;
    let batch = RecordBatch::try_new(schema.clone(), vec![column])
        .map_err(|e| Error::Internal(format!("backfill batch: {e}")))?;
    write_fragment_file(snap, fragment, batch, ids).await
}

/// One data file holding `batch` (one value per physical row of `fragment`) under the
/// field ids `ids`.
async fn write_fragment_file(
    snap: &Snapshot,
    fragment: &DataFragment,
    batch: RecordBatch,
    ids: &[i32],
) -> Result<DataFile> {
    let schema = batch.schema();
    let written = lancet_file::write_fragments(
        snap.file_store(),
        &snap.store().path("data"),
        &schema,
        ids,
        futures::stream::iter([Ok::<_, Error>(batch)]),
        FragmentOptions {
            version: write::data_file_version(snap)?,
            max_rows_per_file: fragment.physical_rows.max(1),
            ..Default::default()
        },
    )
    .await?;
    written
        .into_iter()
        .next()
        .and_then(|f| f.files.into_iter().next())
        .ok_or_else(|| Error::Internal(format!("fragment {} wrote no file", fragment.id)))
}

/// Adds `fields` as columns every row reads as NULL, in one Merge that writes no data
/// (pylance's `add_columns` with a schema): the first step of a backfill whose values
/// come from elsewhere ([`Storage::write_column_file`](crate::Storage::write_column_file), [`Storage::replace_data_files`](crate::Storage::replace_data_files)).
/// A name the table has, or a non-nullable field, is refused with nothing published.
pub(crate) async fn add_null_columns(snap: &Snapshot, fields: &[Field]) -> Result<Committed> {
    let schema = rows::schema(snap)?;
    let invalid = |name: &str, reason: &str| Error::InvalidArgument {
        what: format!("add column {name:?}"),
        reason: reason.to_string(),
    };
    let mut names = std::collections::HashSet::new();
    for f in fields {
        if schema.field_with_name(f.name()).is_ok() || !names.insert(f.name().as_str()) {
            return Err(invalid(f.name(), "the table has a column of that name"));
        }
        if !f.is_nullable() {
            return Err(invalid(
                f.name(),
                "a column added without values must be nullable",
            ));
        }
    }
    if fields.is_empty() {
        return Err(invalid("", "no columns to add"));
    }
    let new = lancet_file::manifest_fields(&Schema::new(fields.to_vec()))?;
    let new = lancet_txn::columns::numbered_from(new, next_field_id(snap).await?);
    let mut all = snap.manifest().fields.clone();
    all.extend(new);
    operations::commit(
        snap,
        Operation::Merge(Merge {
            fragments: snap.fragments().await?.to_vec(),
            schema: all,
            schema_metadata: snap.manifest().schema_metadata.clone(),
            // every added column is nullable (refused otherwise), as Lance's all-null columns
            preserves_nullability: true,
        }),
    )
    .await
}

/// Fragments with no data file holding column `name` (it reads NULL there until
/// backfilled), in id order: what a stopped backfill has left to do.
pub(crate) async fn unfilled_fragments(snap: &Snapshot, name: &str) -> Result<Vec<u64>> {
    let column = rows::projection(snap, Some(&[name.to_string()]))?
        .into_iter()
        .next()
        .ok_or_else(|| Error::Internal(format!("column {name:?} not found")))?;
    let fragments = snap.fragments().await?;
    Ok(lancet_txn::columns::lacking(&fragments, column.id())
        .map(|f| f.id)
        .collect())
}

/// Every physical row of fragment `id` (deleted rows included, as a data file covers
/// them), the columns `columns` (every column when `None`): what a backfill computes a
/// new column's file from.
pub(crate) async fn fragment_rows(
    snap: &Snapshot,
    id: u64,
    columns: Option<&[String]>,
) -> Result<RecordBatch> {
    let fragment = snap.fragments_with_ids(&[id]).await?;
    let fragment = fragment
        .first()
        .ok_or_else(|| Error::Internal(format!("fragment {id} not found")))?;
    let projection = rows::projection(snap, columns)?;
    rows::read_rows(snap, fragment, &projection, Rows::All).await
}

/// Writes `batch` (columns of the table, of their types, one value per physical row of
/// fragment `id`) as one data file for that fragment, and returns it unpublished:
/// [`Storage::replace_data_files`](crate::Storage::replace_data_files) publishes it. A column the table lacks, of another
/// type, or a row count other than the fragment's is refused and nothing is written.
pub(crate) async fn write_column_file(
    snap: &Snapshot,
    id: u64,
    batch: RecordBatch,
) -> Result<DataFile> {
    let fragment = snap.fragments_with_ids(&[id]).await?;
    let fragment = fragment
        .first()
        .ok_or_else(|| Error::Internal(format!("fragment {id} not found")))?;
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("a data file for fragment {id}"),
        reason,
    };
    if batch.num_rows() as u64 != fragment.physical_rows {
        return Err(invalid(format!(
            "{} values for a fragment of {} rows (deleted rows included)",
            batch.num_rows(),
            fragment.physical_rows
        )));
    }
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let schema = rows::schema(snap)?;
    for f in batch.schema().fields() {
        match schema.field_with_name(f.name()) {
            Ok(t) if t.data_type() == f.data_type() => {}
            Ok(t) => {
                return Err(invalid(format!(
                    "column {:?} is {} in the table and {} in the batch",
                    f.name(),
                    t.data_type(),
                    f.data_type()
                )))
            }
            Err(_) => return Err(invalid(format!("the table has no column {:?}", f.name()))),
        }
    }
    let ids: Vec<i32> = rows::projection(snap, Some(&names))?
        .iter()
        .flat_map(|c| c.ids.iter().copied())
        .collect();
    let fields: Vec<Field> = names
        .iter()
        .filter_map(|n| schema.field_with_name(n).ok().cloned())
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec())
        .map_err(|e| invalid(e.to_string()))?;
    write_fragment_file(snap, fragment, batch, &ids).await
}

/// Publishes data files written by [`Storage::write_column_file`](crate::Storage::write_column_file) in one
/// DataReplacement (on a tree, `add_data_file` mutations), each for its fragment. The
/// invariants judge the candidate; a refused commit publishes nothing and the caller
/// still owns the files.
pub(crate) async fn replace_data_files(
    snap: &Snapshot,
    files: &[(u64, DataFile)],
) -> Result<Committed> {
    operations::commit(snap, lancet_txn::columns::data_replacement(files)).await
}
