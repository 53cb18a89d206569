"""The exceptions lancet raises, one per kind of failure.

Each is a :class:`LancetError`; those a pylance script already catches are also the
built-in exception pylance raises for the same failure (``ValueError`` for bad input,
``FileNotFoundError`` for a missing table, ``OSError`` for an unavailable store,
``NotImplementedError`` for a feature lancet lacks, :class:`lancet.commit.CommitConflictError`
for a lost commit).
"""

from .commit import CommitConflictError


class LancetError(Exception):
    """Any failure lancet reports."""


class InvalidInputError(LancetError, ValueError):
    """The arguments: an unknown column, a filter that does not parse, data of the wrong
    schema. Nothing was published."""


class SchemaMismatchError(InvalidInputError, OSError, RuntimeError):
    """Rows written to a table do not fit its schema; also the ``OSError`` pylance raises for
    an append of another schema, and the ``RuntimeError`` of its schema errors (a column of
    another type). Nothing was written."""


class InvalidCommitError(InvalidInputError, OSError):
    """An operation ``LanceDataset.commit`` refuses as invalid (an Update's offsets for a
    fragment it does not rewrite or past its rows, a record the version does not hold); also
    the ``OSError`` pylance's commit raises. Nothing was published."""


class NotFoundError(LancetError, FileNotFoundError):
    """No table (or no such version, tag or fragment) at the location named."""


class IndexNotFoundError(NotFoundError, RuntimeError):
    """No index of the table has the name asked for; also the ``RuntimeError`` pylance raises
    for it. Nothing was published."""


class RefNotFoundError(NotFoundError, ValueError):
    """No tag or branch has the name asked for; also the ``ValueError`` pylance raises for
    it. Nothing was changed."""


class CorruptTableError(LancetError):
    """Stored bytes break a rule of the Lance format (or an object they name is missing)."""


class UnsupportedError(LancetError, NotImplementedError):
    """The table uses a feature lancet does not implement, or a call asks for one (a pylance
    argument lancet does not honour, given a value other than pylance's default)."""


class CommitConflict(LancetError, CommitConflictError):
    """Another writer committed first and this write could not land."""


class RetryableCommitConflict(CommitConflict):
    """Lost a commit race that a retry (on the new version) can win."""

    def __init__(self, message: str = "", retryable: bool = True):
        super().__init__(message, retryable)


class IncompatibleCommitConflict(CommitConflict):
    """A concurrent commit changed what this write depends on; redo it from the new
    version's data."""

    def __init__(self, message: str = "", retryable: bool = False):
        super().__init__(message, retryable)


class UnavailableError(LancetError, OSError):
    """The object store failed; the same request may succeed later."""


class InternalError(LancetError):
    """A bug in lancet."""
