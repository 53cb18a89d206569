//! Column backfill: [`Dataset::add_column`].
//!
//! Composition only. The new column's type is the expression's (lancet-filter evaluates it
//! on the table's empty schema); the first commit is Lance's Merge of the new schema with the
//! fragments unchanged (every fragment reads NULL for the column until backfilled), then each
//! batch of `fragments_per_commit` fragments gets one new data file each (the column
//! computed from the fragment's stored rows, deleted rows included, as a data file covers
//! physical rows), committed as a DataReplacement; on a tree each is an `add_data_file`
//! mutation, never a whole record.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use lancet_file::{FragmentOptions, Rows};
use lancet_filter::Scalar;
use lancet_proto::table::transaction::{DataReplacement, DataReplacementGroup, Merge, Operation};
use lancet_proto::table::DataFragment;

use crate::error::{Error, Result};
use crate::Dataset;

/// How [`Dataset::add_column`] commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddColumnOptions {
    /// Fragments backfilled per commit (at least 1).
    pub fragments_per_commit: usize,
}

impl Default for AddColumnOptions {
    fn default() -> Self {
        AddColumnOptions {
            fragments_per_commit: usize::MAX,
        }
    }
}

impl Dataset {
    /// Adds the column `name` holding `value` (an expression over the table's columns, as
    /// `UPDATE ... SET` takes) for every row, backfilled `fragments_per_commit` fragments at a
    /// time; returns the last version. A column of that name already in the table, an
    /// expression naming no column of it or of no type (a bare NULL) is refused before
    /// anything is written.
    pub async fn add_column(
        &self,
        name: &str,
        value: &Scalar,
        options: AddColumnOptions,
    ) -> Result<Dataset> {
        let invalid = |reason: String| Error::InvalidArgument {
            what: format!("add column {name:?}"),
            reason,
        };
        if options.fragments_per_commit == 0 {
            return Err(invalid("fragments_per_commit must be at least 1".into()));
        }
        let schema = self.schema()?;
        if schema.field_with_name(name).is_ok() {
            return Err(invalid("the table has a column of that name".into()));
        }
        let empty = RecordBatch::new_empty(schema.clone());
        let data_type = value.evaluate(&empty).map_err(invalid)?.data_type().clone();
        if data_type == arrow_schema::DataType::Null {
            return Err(invalid(
                "the expression has no type (cast a NULL to one)".into(),
            ));
        }
        let field = Field::new(name, data_type.clone(), true);
        let added = self.new_fields(&field)?;
        let mut fields = self.manifest().fields.clone();
        fields.extend(added.iter().cloned());
        // the schema first: every fragment reads NULL for the column until backfilled
        let fragments = self.fragments().await?;
        let merged = self
            .commit(Operation::Merge(Merge {
                fragments: fragments.to_vec(),
                schema: fields,
                schema_metadata: self.manifest().schema_metadata.clone(),
                ..Default::default()
            }))
            .await?
            .dataset;
        let mut columns = Vec::new();
        value.columns(&mut columns);
        let columns: Vec<String> = columns.into_iter().map(str::to_string).collect();
        let projection = merged.projection(Some(&columns))?;
        let file_schema = Arc::new(Schema::new(vec![field]));
        let ids: Vec<i32> = added.iter().map(|f| f.id).collect();
        let mut ds = merged;
        for batch in fragments.chunks(options.fragments_per_commit) {
            let mut replacements = Vec::with_capacity(batch.len());
            for f in batch {
                let file = ds
                    .backfill_file(f, value, &projection, &file_schema, &ids)
                    .await?;
                replacements.push(DataReplacementGroup {
                    fragment_id: f.id,
                    new_file: Some(file),
                });
            }
            ds = ds
                .commit(Operation::DataReplacement(DataReplacement { replacements }))
                .await?
                .dataset;
        }
        Ok(ds)
    }

    /// The new field (and its children) as the manifest records them, with ids after every
    /// id this table has allocated.
    fn new_fields(&self, field: &Field) -> Result<Vec<lancet_proto::file::Field>> {
        let mut fields = lancet_file::manifest_fields(&Schema::new(vec![field.clone()]))?;
        let m = self.manifest();
        let next = m
            .fields
            .iter()
            .map(|f| f.id)
            .chain(m.max_allocated_field_id)
            .max()
            .map_or(0, |id| id + 1);
        for f in &mut fields {
            f.id += next;
            if f.parent_id >= 0 {
                f.parent_id += next;
            }
        }
        Ok(fields)
    }

    /// The data file of `value` for every physical row of `fragment`.
    async fn backfill_file(
        &self,
        fragment: &DataFragment,
        value: &Scalar,
        projection: &[lancet_file::Column],
        schema: &Arc<Schema>,
        ids: &[i32],
    ) -> Result<lancet_proto::table::DataFile> {
        let rows = self.read_rows(fragment, projection, Rows::All).await?;
        let column = value
            .evaluate_as(&rows, schema.field(0).data_type())
            .map_err(|reason| Error::InvalidArgument {
                what: format!("add column {:?}", schema.field(0).name()),
                reason,
            })?;
        let batch = RecordBatch::try_new(schema.clone(), vec![column])
            .map_err(|e| Error::Internal(format!("backfill batch: {e}")))?;
        let written = lancet_file::write_fragments(
            self.file_store(),
            &self.store().path("data"),
            schema,
            ids,
            futures::stream::iter([Ok::<_, Error>(batch)]),
            FragmentOptions {
                version: self.data_file_version()?,
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
}
