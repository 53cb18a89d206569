//! Progress of a write, fragment by fragment (Lance 14.0.2's `WriteFragmentProgress`,
//! pylance's `FragmentWriteProgress`): told when each new fragment starts and when its data
//! file is finished, so a distributed writer can record what it has left behind.

use std::fmt;
use std::sync::Arc;

use lancet_proto::table::DataFragment;

/// Told of each fragment a write starts and finishes, in order (an observed write finishes
/// each file before it begins the next, as Lance's does; an unobserved one writes a few
/// files side by side). `begin` comes before the
/// fragment's first row is written (it has id 0 and no files yet, as in Lance); `complete`
/// once its data file is finished (its file and row count recorded). An error stops the
/// write: what it wrote stays unpublished, for cleanup, as after any failed write.
pub trait WriteProgress: Send + Sync {
    /// A new fragment is about to be written.
    fn begin(&self, fragment: &DataFragment) -> Result<(), String>;
    /// The fragment's data file is finished.
    fn complete(&self, fragment: &DataFragment) -> Result<(), String>;
}

/// A write's optional [`WriteProgress`], as write options hold it: two are equal when they
/// are the same observer (or both absent).
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<dyn WriteProgress>>);

impl Progress {
    /// Progress told to `observer`.
    pub fn to(observer: Arc<dyn WriteProgress>) -> Self {
        Progress(Some(observer))
    }

    /// Whether an observer is told.
    pub(crate) fn is_observed(&self) -> bool {
        self.0.is_some()
    }

    pub(crate) fn begin(&self, fragment: &DataFragment) -> Result<(), String> {
        self.0.as_ref().map_or(Ok(()), |p| p.begin(fragment))
    }

    pub(crate) fn complete(&self, fragment: &DataFragment) -> Result<(), String> {
        self.0.as_ref().map_or(Ok(()), |p| p.complete(fragment))
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "Progress(observed)",
            None => "Progress(none)",
        })
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl Eq for Progress {}
