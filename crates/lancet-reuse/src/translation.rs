//! What a history answers for one old row address.

/// What became of an old row address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translation {
    /// The row lives at this address now (unchanged if no transition touched it).
    Address(u64),
    /// The row was deleted by a rewrite.
    Deleted,
}
