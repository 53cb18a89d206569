/// Errors of the facade: the subsystem crate's error, unchanged, or a facade rule.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Paths(#[from] lancet_paths::PathsError),
    #[error(transparent)]
    File(#[from] lancet_file::FileError),
    #[error(transparent)]
    RowId(#[from] lancet_rowid::RowIdError),
    #[error(transparent)]
    BTree(#[from] lancet_btree::BTreeError),
    #[error(transparent)]
    Reuse(#[from] lancet_reuse::ReuseError),
    #[error(transparent)]
    Tree(#[from] lancet_tree::TreeError),
    /// A candidate version broke a named invariant; nothing was published.
    #[error(transparent)]
    Txn(#[from] lancet_txn::TxnError),
    /// A bug in lancet: a state its own code should have made impossible.
    #[error("internal error: {0}")]
    Internal(String),
    /// Another writer published version `version` first and this commit cannot be rebased
    /// over it (`reason` names both operations); nothing was published. `retryable`: redoing
    /// the work on the newer version may succeed; `cause` says what it conflicted with, for a
    /// caller deciding what to do (never decide by `reason`'s text).
    #[error("dataset {uri}: version {version} was committed by another writer first: {reason}")]
    CommitConflict {
        uri: String,
        version: u64,
        reason: String,
        retryable: bool,
        cause: lancet_txn::rebase::ConflictCause,
    },
    /// The manifest breaks a rule the facade checks (an index entry's bitmap, a fragment id):
    /// `at` is the manifest object and the entry in it.
    #[error("corrupt {at}: {rule}")]
    Corrupt {
        at: lancet_proto::ObjectRef,
        rule: String,
    },
    /// A stored version breaks a named invariant (`Dataset::verify`): `at` is the
    /// manifest object and the subject in it. [`Error::invariant`] names the rule.
    #[error("corrupt {at}: {invariant} ({}): {detail}", invariant.rule())]
    BrokenInvariant {
        at: lancet_proto::ObjectRef,
        invariant: lancet_txn::Invariant,
        detail: String,
    },
    /// A filter lancet cannot parse, or one that names no column of the table or compares
    /// a column with a literal of another type ([`lancet_filter::Filter`]).
    #[error("filter {filter:?}: {reason}")]
    InvalidFilter { filter: String, reason: String },
    /// An argument the operation cannot take (a clone target that already holds a table,
    /// a cleanup policy that would keep nothing).
    #[error("{what}: {reason}")]
    InvalidArgument { what: String, reason: String },
    /// Rows written to a table do not fit its schema (a missing, extra or mistyped column):
    /// `table` names the table, `reason` the column. Nothing was written.
    #[error("rows written to table {table}: {reason}")]
    SchemaMismatch { table: String, reason: String },
    /// No index of this version has the name asked for (Lance's "index not found").
    #[error("dataset {uri} version {version}: no index named {name:?}")]
    IndexNotFound {
        uri: String,
        version: u64,
        name: String,
    },
    /// The manifest uses a feature this build of lancet cannot read or write.
    #[error("dataset {uri} version {version}: {rule}")]
    Unsupported {
        uri: String,
        version: u64,
        rule: String,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use lancet_proto::ErrorKind;

impl Error {
    /// The invariant a refused commit broke, when that is why it was refused.
    pub fn invariant(&self) -> Option<lancet_txn::Invariant> {
        match self {
            Error::Txn(e) => e.invariant(),
            Error::BrokenInvariant { invariant, .. } => Some(*invariant),
            _ => None,
        }
    }

    /// Where stored bytes break a rule, for every corruption whichever crate found it: the
    /// object (its store path) and, when narrower, the part of it. `None` for errors that are
    /// not about stored bytes.
    pub fn object(&self) -> Option<&lancet_proto::ObjectRef> {
        use lancet_paths::PathsError as P;
        match self {
            Error::Corrupt { at, .. }
            | Error::BrokenInvariant { at, .. }
            | Error::Paths(
                P::CorruptManifest { at, .. }
                | P::CorruptTransaction { at, .. }
                | P::CorruptRef { at, .. },
            )
            | Error::File(lancet_file::FileError::Corrupt { at, .. })
            | Error::RowId(
                lancet_rowid::RowIdError::Corrupt { at, .. }
                | lancet_rowid::RowIdError::CorruptDeletionFile { at, .. },
            )
            | Error::BTree(lancet_btree::BTreeError::Corrupt { at, .. })
            | Error::Reuse(lancet_reuse::ReuseError::Corrupt { at, .. })
            | Error::Tree(lancet_tree::TreeError::Corrupt { at, .. }) => Some(at),
            Error::BTree(lancet_btree::BTreeError::File(lancet_file::FileError::Corrupt {
                at,
                ..
            }))
            | Error::Reuse(lancet_reuse::ReuseError::File(lancet_file::FileError::Corrupt {
                at,
                ..
            })) => Some(at),
            _ => None,
        }
    }

    /// The coarse kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Paths(e) => e.kind(),
            Error::File(e) => e.kind(),
            Error::RowId(e) => e.kind(),
            Error::BTree(e) => e.kind(),
            Error::Reuse(e) => e.kind(),
            Error::Tree(e) => e.kind(),
            Error::Txn(e) => e.kind(),
            Error::Internal(_) => ErrorKind::Internal,
            Error::CommitConflict { .. } => ErrorKind::Conflict,
            Error::IndexNotFound { .. } => ErrorKind::NotFound,
            Error::Unsupported { .. } => ErrorKind::Unsupported,
            Error::Corrupt { .. } | Error::BrokenInvariant { .. } => ErrorKind::Corrupt,
            Error::InvalidFilter { .. }
            | Error::InvalidArgument { .. }
            | Error::SchemaMismatch { .. } => ErrorKind::InvalidInput,
        }
    }
}

/// A filter lancet-filter refuses is the facade's `InvalidFilter`, naming the same filter.
impl From<lancet_filter::FilterError> for Error {
    fn from(e: lancet_filter::FilterError) -> Self {
        match e {
            lancet_filter::FilterError::InvalidFilter { filter, reason } => {
                Error::InvalidFilter { filter, reason }
            }
            other => Error::InvalidFilter {
                filter: String::new(),
                reason: other.to_string(),
            },
        }
    }
}

/// The typed error of a cached load that failed, for each caller that shared the load: the
/// error itself when no other caller holds it, a clone otherwise (errors are `Clone`, so no
/// caller gets a flattened string).
pub fn unshare<E>(e: std::sync::Arc<E>) -> Error
where
    E: Into<Error> + Clone,
{
    std::sync::Arc::try_unwrap(e)
        .unwrap_or_else(|shared| (*shared).clone())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::path::Path;

    fn store_down() -> object_store::Error {
        object_store::Error::Generic {
            store: "test",
            source: "connection reset".into(),
        }
    }

    #[test]
    fn every_corruption_names_its_object_with_one_type() {
        use lancet_proto::ObjectRef;
        let at = || ObjectRef::new("t/x").within("part");
        let corrupt: Vec<Error> = vec![
            Error::Corrupt {
                at: at(),
                rule: "r".into(),
            },
            lancet_paths::PathsError::CorruptManifest {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_paths::PathsError::CorruptTransaction {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_paths::PathsError::CorruptRef {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_file::FileError::Corrupt {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_rowid::RowIdError::CorruptDeletionFile {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_btree::BTreeError::Corrupt {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_btree::BTreeError::File(lancet_file::FileError::Corrupt {
                at: at(),
                rule: "r".into(),
            })
            .into(),
            lancet_reuse::ReuseError::Corrupt {
                at: at(),
                rule: "r".into(),
            }
            .into(),
            lancet_tree::TreeError::Corrupt {
                at: at(),
                rule: lancet_tree::Rule::ObjectDecode,
                detail: "d".into(),
            }
            .into(),
        ];
        for e in &corrupt {
            assert_eq!(e.object(), Some(&at()), "{e}");
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
            assert!(e.to_string().contains("t/x (part)"), "{e}");
        }
        assert_eq!(Error::Internal("x".into()).object(), None);
    }

    #[test]
    fn every_subsystem_error_has_the_kind_a_caller_acts_on() {
        let path = Path::from("t/_versions/1.manifest");
        let cases: Vec<(Error, ErrorKind)> = vec![
            (
                lancet_paths::PathsError::CorruptManifest {
                    at: lancet_proto::ObjectRef::new(path.to_string()),
                    rule: "r".into(),
                }
                .into(),
                ErrorKind::Corrupt,
            ),
            (
                lancet_paths::PathsError::AlreadyExists { path: path.clone() }.into(),
                ErrorKind::Conflict,
            ),
            (
                lancet_paths::PathsError::VersionNotFound {
                    path: path.clone(),
                    version: 9,
                }
                .into(),
                ErrorKind::NotFound,
            ),
            (
                lancet_paths::PathsError::NoTable {
                    uri: "/x".into(),
                    why: "no such directory",
                }
                .into(),
                ErrorKind::NotFound,
            ),
            (
                lancet_paths::PathsError::Store {
                    path: path.clone(),
                    source: store_down().into(),
                }
                .into(),
                ErrorKind::Unavailable,
            ),
            (
                lancet_file::FileError::Corrupt {
                    at: lancet_proto::ObjectRef::new(path.clone().to_string()),
                    rule: "r".into(),
                }
                .into(),
                ErrorKind::Corrupt,
            ),
            (
                lancet_btree::BTreeError::Unsupported {
                    path: "p".into(),
                    rule: "r".into(),
                }
                .into(),
                ErrorKind::Unsupported,
            ),
            (
                lancet_btree::BTreeError::File(lancet_file::FileError::Store {
                    path: path.clone(),
                    source: store_down().into(),
                })
                .into(),
                ErrorKind::Unavailable,
            ),
            (
                lancet_reuse::ReuseError::InvalidInput("x".into()).into(),
                ErrorKind::InvalidInput,
            ),
            (
                lancet_rowid::RowIdError::MissingSequence { fragment: 1 }.into(),
                ErrorKind::Corrupt,
            ),
            (
                lancet_tree::TreeError::Io {
                    object: "o".into(),
                    source: std::sync::Arc::new(lancet_paths::PathsError::Store {
                        path: path.clone(),
                        source: store_down().into(),
                    }),
                }
                .into(),
                ErrorKind::Unavailable,
            ),
            (
                Error::CommitConflict {
                    uri: "u".into(),
                    version: 2,
                    reason: "r".into(),
                    retryable: true,
                    cause: lancet_txn::rebase::ConflictCause::LostRace,
                },
                ErrorKind::Conflict,
            ),
            (Error::Internal("x".into()), ErrorKind::Internal),
            (
                Error::InvalidFilter {
                    filter: "x +".into(),
                    reason: "r".into(),
                },
                ErrorKind::InvalidInput,
            ),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind(), kind, "{error}");
        }
    }

    #[test]
    fn a_shared_error_stays_typed() {
        let original = std::sync::Arc::new(lancet_file::FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(Path::from("f.lance").to_string()),
            rule: "bad page".into(),
        });
        let held = original.clone();
        let e = unshare(original);
        assert!(
            matches!(&e, Error::File(lancet_file::FileError::Corrupt { rule, .. }) if rule == "bad page")
        );
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        drop(held);
        let sole = std::sync::Arc::new(lancet_file::FileError::Corrupt {
            at: lancet_proto::ObjectRef::new(Path::from("f.lance").to_string()),
            rule: "bad page".into(),
        });
        assert!(matches!(unshare(sole), Error::File(_)));
    }
}
