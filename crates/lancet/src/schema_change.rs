//! Schema evolution: columns dropped (Lance's `drop_columns`) and renamed or given another
//! nullability (`alter_columns` without a cast), each a `Project` that rewrites no data; cast
//! (`alter_columns` with a type), a `Merge` that rewrites the cast columns.
//! Field ids are never handed out again (`max_allocated_field_id` stays), so a column added
//! later never reads a dropped column's data.

use futures::TryStreamExt;
use lancet_proto::table::transaction::{Operation, Project};
pub use lancet_txn::build::ColumnAlteration;

use crate::backfill;
use crate::committed::Committed;
use crate::operations;
use lancet_read::error::{Error, Result};
use lancet_read::rows;
use lancet_read::scan;
use lancet_read::scan::ScanOptions;
use lancet_read::snapshot::Snapshot;

/// Drops the top-level `columns` (and everything under them) in one Project, as Lance
/// 14.0.2's `drop_columns`: no data is rewritten; a data file holding only dropped
/// columns leaves its fragments, one holding others stays as it is; an index on a dropped
/// column goes. A column the table does not have, or dropping every column, is
/// `InvalidInput` with nothing published.
pub(crate) async fn drop_columns(snap: &Snapshot, columns: &[&str]) -> Result<Committed> {
    let schema = lancet_txn::build::drop_fields(&snap.manifest().fields, columns)?;
    operations::commit(
        snap,
        Operation::Project(Project {
            schema,
            preserves_nullability: true,
        }),
    )
    .await
}

/// Renames columns and changes their nullability in one Project, as Lance 14.0.2's
/// `alter_columns` without a cast: no data is rewritten and every field keeps its id, so
/// indexes stay. Making a column non-nullable first reads it: a NULL refuses the change.
/// An unknown column, or a name taken, is `InvalidInput` with nothing published. A change
/// of type rewrites the column instead, in one Merge (see `cast_columns`).
pub(crate) async fn alter_columns(
    snap: &Snapshot,
    alterations: &[ColumnAlteration],
) -> Result<Committed> {
    let (schema, tightens) = lancet_txn::build::alter_fields(&snap.manifest().fields, alterations)?;
    if alterations.iter().any(|a| a.data_type.is_some()) {
        if tightens {
            return Err(Error::InvalidArgument {
                what: "alter_columns".into(),
                reason: "cannot make a column non-nullable and cast columns in the same \
                         call: apply the cast first, then the nullability change"
                    .into(),
            });
        }
        return cast_columns(snap, alterations, schema).await;
    }
    for a in alterations.iter().filter(|a| a.nullable == Some(false)) {
        require_no_nulls(snap, &a.path).await?;
    }
    operations::commit(
        snap,
        Operation::Project(Project {
            schema,
            // a write since this version could add a NULL: not asserted after tightening
            preserves_nullability: !tightens,
        }),
    )
    .await
}

/// The casts of `alterations` over `schema` (the renames and nullability already
/// applied), as Lance 14.0.2's `alter_columns` with `data_type`: each cast column gets a
/// new field id and a new data file in every fragment holding its values cast (a value
/// that does not fit refuses the whole change, nothing published); the files holding the
/// old column keep listing its id (as after a drop), and a file left holding no column
/// leaves its fragment; one Merge. A cast Lance refuses (another family of types), or of a
/// column an index covers, is `InvalidInput`.
async fn cast_columns(
    snap: &Snapshot,
    alterations: &[ColumnAlteration],
    mut schema: Vec<lancet_proto::file::Field>,
) -> Result<Committed> {
    let table = rows::schema(snap)?;
    let fragments = snap.fragments().await?;
    lancet_read::merge_target::require_known_rows(snap, &fragments, "a cast")?;
    let mut next = backfill::next_field_id(snap).await?;
    // (fragment id, its new data files), all written before anything is published
    let mut written: Vec<(u64, lancet_proto::table::DataFile)> = Vec::new();
    let mut required = false;
    for a in alterations {
        let Some(to) = &a.data_type else { continue };
        let (from, old) = cast_source(snap, &table, a, to)?;
        let old_id = old.first().map(|c| c.id()).unwrap_or(-1);
        let name = a.rename.clone().unwrap_or_else(|| a.path.clone());
        let nullable = a.nullable.unwrap_or(from.is_nullable());
        required |= !nullable;
        let field = arrow_schema::Field::new(&name, to.clone(), nullable);
        let new = lancet_file::manifest_fields(&arrow_schema::Schema::new(vec![field.clone()]))?;
        let new = lancet_txn::columns::numbered_from(new, next);
        next += new.len() as i32;
        let ids: Vec<i32> = new.iter().map(|f| f.id).collect();
        schema = lancet_txn::build::replace_field(&schema, old_id, &new);
        let value = lancet_filter::Scalar::Column(a.path.clone());
        let file_schema = std::sync::Arc::new(arrow_schema::Schema::new(vec![field]));
        for f in fragments.iter().filter(|f| f.physical_rows > 0) {
            match backfill::backfill_file(snap, f, &value, &old, &file_schema, &ids).await {
                Ok(file) => written.push((f.id, file)),
                Err(e) => {
                    backfill::delete_unpublished(snap, written.iter().map(|(_, d)| d)).await;
                    return Err(e);
                }
            }
        }
    }
    if let Err(e) = lancet_txn::build::check_unique_names(&schema, "Merge") {
        backfill::delete_unpublished(snap, written.iter().map(|(_, d)| d)).await;
        return Err(e.into());
    }
    let published = publish_cast(snap, &fragments, &written, schema, !required).await;
    if published.is_err() {
        backfill::delete_unpublished(snap, written.iter().map(|(_, d)| d)).await;
    }
    published
}

/// The field a cast reads and its column, after the rules Lance checks: the column exists,
/// its type casts to `to`, and no index is attached to it.
fn cast_source<'a>(
    snap: &Snapshot,
    table: &'a arrow_schema::Schema,
    a: &ColumnAlteration,
    to: &arrow_schema::DataType,
) -> Result<(&'a arrow_schema::Field, Vec<lancet_file::Column>)> {
    let invalid = |reason: String| Error::InvalidArgument {
        what: format!("column {:?}", a.path),
        reason,
    };
    let from = table
        .field_with_name(&a.path)
        .map_err(|_| invalid("the table has no such column".into()))?;
    let old = rows::projection(snap, Some(std::slice::from_ref(&a.path)))?;
    let old_id = old.first().map(|c| c.id()).unwrap_or(-1);
    if !lancet_txn::build::cast_allowed(from.data_type(), to) {
        return Err(invalid(format!(
            "Cannot cast column \"{}\" from {} to {to}",
            a.path,
            from.data_type()
        )));
    }
    if let Some(index) = snap.indices().iter().find(|i| i.fields.contains(&old_id)) {
        return Err(invalid(format!(
            "it has index {:?} attached: a cast rewrites the column and invalidates \
             it; drop the index first, then recreate it after the cast",
            index.name
        )));
    }
    Ok((from, old))
}

/// The cast published as one Merge: every fragment keeps the files holding fields of the
/// new `schema` and gains the files `written` for it.
async fn publish_cast(
    snap: &Snapshot,
    fragments: &[lancet_proto::table::DataFragment],
    written: &[(u64, lancet_proto::table::DataFile)],
    schema: Vec<lancet_proto::file::Field>,
    preserves_nullability: bool,
) -> Result<Committed> {
    let mut listed = lancet_txn::columns::with_written(fragments, written);
    for f in &mut listed {
        // the files of the cast columns' old fields go (Lance's rewrite of a cast column)
        lancet_txn::build::keep_files_with_fields(&mut f.files, &schema);
    }
    operations::commit(
        snap,
        Operation::Merge(lancet_proto::table::transaction::Merge {
            fragments: listed,
            schema,
            schema_metadata: snap.manifest().schema_metadata.clone(),
            preserves_nullability,
        }),
    )
    .await
}

/// Refuses when column `column` holds a NULL in this version.
async fn require_no_nulls(snap: &Snapshot, column: &str) -> Result<()> {
    let mut batches = scan::scan(
        snap,
        ScanOptions {
            columns: Some(vec![column.to_string()]),
            ..Default::default()
        },
    )
    .await?;
    while let Some(batch) = batches.try_next().await? {
        if batch.columns().iter().any(|c| c.null_count() > 0) {
            return Err(Error::InvalidArgument {
                what: format!("column {column:?}"),
                reason: "it contains NULL values and cannot be made non-nullable".into(),
            });
        }
    }
    Ok(())
}
