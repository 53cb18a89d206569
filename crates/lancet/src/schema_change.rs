//! Schema evolution: columns dropped (Lance's `drop_columns`, a `Project`). Field ids are never
//! handed out again (`max_allocated_field_id` stays), so a column added later never reads a
//! dropped column's data.

use lancet_proto::table::transaction::{Operation, Project};

use crate::commit::Committed;
use crate::dataset::Dataset;
use crate::error::Result;

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
}
