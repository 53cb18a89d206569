//! The coarse kind every lancet error reports through its `kind()`, whichever crate raised it
//! (as slatedb's error kinds): what a caller can do about it.

/// What a caller can do about an error: retry, fix its input, repair the table, or report a
/// bug.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller's arguments: a bad URI, a row that does not exist, a filter lancet cannot
    /// parse, a change that breaks a rule of the format.
    InvalidInput,
    /// No table (or no such version of it) at the location named: a missing path, a plain
    /// file, an empty directory, a version never committed or cleaned up.
    NotFound,
    /// Stored bytes break a rule of the format (or an object they reference is missing).
    Corrupt,
    /// The table uses a feature this build of lancet does not implement.
    Unsupported,
    /// Another writer got there first (a lost commit race that could not be rebased).
    Conflict,
    /// The object store failed; the same request may succeed later.
    Unavailable,
    /// A bug in lancet.
    Internal,
}
