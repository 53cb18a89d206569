//! Schema evolution: columns dropped (Lance's `drop_columns`) and renamed or given another
//! nullability (`alter_columns` without a cast), each a `Project` that rewrites no data.
//! Field ids are never handed out again (`max_allocated_field_id` stays), so a column added
//! later never reads a dropped column's data.

use futures::TryStreamExt;
use lancet_proto::table::transaction::{Operation, Project};
pub use lancet_txn::build::ColumnAlteration;

use crate::commit::Committed;
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::scan::ScanOptions;

impl Dataset {
    /// Drops the top-level `columns` (and everything under them) in one Project, as Lance
    /// 14.0.2's `drop_columns`: no data is rewritten; a data file holding only dropped
    /// columns leaves its fragments, one holding others stays as it is; an index on a dropped
    /// column goes. A column the table does not have, or dropping every column, is
    /// `InvalidInput` with nothing published.
    pub async fn drop_columns(&self, columns: &[&str]) -> Result<Committed> {
        let schema = lancet_txn::build::drop_fields(&self.manifest().fields, columns)?;
        self.commit(Operation::Project(Project {
            schema,
            preserves_nullability: true,
        }))
        .await
    }

    /// Renames columns and changes their nullability in one Project, as Lance 14.0.2's
    /// `alter_columns` without a cast: no data is rewritten and every field keeps its id, so
    /// indexes stay. Making a column non-nullable first reads it: a NULL refuses the change.
    /// An unknown column, or a name taken, is `InvalidInput` with nothing published. A change
    /// of type (a cast, which rewrites the column) is not done here.
    pub async fn alter_columns(&self, alterations: &[ColumnAlteration]) -> Result<Committed> {
        let (schema, tightens) =
            lancet_txn::build::alter_fields(&self.manifest().fields, alterations)?;
        for a in alterations.iter().filter(|a| a.nullable == Some(false)) {
            self.require_no_nulls(&a.path).await?;
        }
        self.commit(Operation::Project(Project {
            schema,
            // a write since this version could add a NULL: not asserted after tightening
            preserves_nullability: !tightens,
        }))
        .await
    }

    /// Refuses when column `column` holds a NULL in this version.
    async fn require_no_nulls(&self, column: &str) -> Result<()> {
        let mut batches = self
            .scan(ScanOptions {
                columns: Some(vec![column.to_string()]),
                ..Default::default()
            })
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
}
