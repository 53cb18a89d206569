//! The rule every path a manifest stores relative to a directory obeys (a data file below
//! `data/`, a tree object below the root): it stays in that directory. Shared by the path
//! resolver (lancet-paths) and the invariants a commit is judged by (lancet-txn).

fn is_absolute_or_uri(path: &str) -> bool {
    if path.starts_with('/') || path.starts_with('\\') {
        return true;
    }
    // A URI scheme (`s3://`, `file:`) or a drive letter (`C:`): a colon after a leading
    // alphabetic run of scheme characters.
    match path.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Whether `path` stays in its directory: not empty, relative (no leading `/` or `\\`, no URI
/// scheme or drive letter), no empty, `.` or `..` segment, no backslash. `Err` names the
/// rule broken.
pub fn check(path: &str) -> std::result::Result<(), &'static str> {
    if path.is_empty() {
        return Err("path is empty");
    }
    if is_absolute_or_uri(path) {
        return Err("absolute paths and URIs are not allowed");
    }
    if path.contains('\\') {
        return Err("backslashes are not allowed");
    }
    for segment in path.split('/') {
        match segment {
            "" => return Err("empty path segment"),
            "." => return Err("'.' segment"),
            ".." => return Err("'..' segment leaves its directory"),
            _ => {}
        }
    }
    Ok(())
}
