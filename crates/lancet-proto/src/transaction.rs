//! What a stored transaction is, and Lance's names of operations: pure, so that the
//! transaction rules (`lancet-txn`) need no object store to name what they judge.

use bytes::Bytes;

use crate::table::transaction::Operation;
use crate::table::Transaction;

/// A decoded transaction, with an unmodelled operation kept raw.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTransaction {
    pub transaction: Transaction,
    /// `(field number, value bytes)` of an operation lancet does not model.
    pub unknown_operation: Option<(u32, Bytes)>,
}

impl StoredTransaction {
    /// Lance's name of the operation (`"Append"`, `"CreateIndex"`, ...), `"Unknown(n)"` for
    /// an unmodelled one and `"None"` when the transaction names no operation.
    pub fn operation_name(&self) -> String {
        match (&self.transaction.operation, &self.unknown_operation) {
            (Some(op), _) => operation_name(op).to_string(),
            (None, Some((n, _))) => format!("Unknown({n})"),
            (None, None) => "None".to_string(),
        }
    }
}

/// Lance's name of `op`.
pub fn operation_name(op: &Operation) -> &'static str {
    match op {
        Operation::Append(_) => "Append",
        Operation::Delete(_) => "Delete",
        Operation::Overwrite(_) => "Overwrite",
        Operation::CreateIndex(_) => "CreateIndex",
        Operation::Rewrite(_) => "Rewrite",
        Operation::Merge(_) => "Merge",
        Operation::Restore(_) => "Restore",
        Operation::ReserveFragments(_) => "ReserveFragments",
        Operation::Update(_) => "Update",
        Operation::Project(_) => "Project",
        Operation::UpdateConfig(_) => "UpdateConfig",
        Operation::DataReplacement(_) => "DataReplacement",
        Operation::UpdateMemWalState(_) => "UpdateMemWalState",
        Operation::Clone(_) => "Clone",
        Operation::UpdateBases(_) => "UpdateBases",
        Operation::DataOverlay(_) => "DataOverlay",
    }
}
