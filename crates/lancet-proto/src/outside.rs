//! The refusal every crate recognises when an object leads out of its table: lancet-paths'
//! confined store raises it (as the source of object_store's `PermissionDenied`), and the
//! crates reading through that store (lancet-file among them) report it as the table's fault
//! rather than the store's.

use std::path::PathBuf;

/// An object whose real location lies outside the root of the store that was asked for it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{path} leads outside the table root {} (to {})", root.display(), real.display())]
pub struct Outside {
    /// The object path asked for.
    pub path: String,
    /// Where its directory (or, for a linked file, the file) really is.
    pub real: PathBuf,
    /// The table root it must stay in.
    pub root: PathBuf,
}

impl Outside {
    /// The refusal `error` carries, when it is one.
    pub fn of<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Outside> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(outside) = e.downcast_ref::<Outside>() {
                return Some(outside);
            }
            next = e.source();
        }
        None
    }
}
