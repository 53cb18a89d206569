"""pylance's ``lance.commit``: the exception a lost commit raises.

lancet's own conflict classes (:mod:`lancet.errors`) are subclasses of
:class:`CommitConflictError`, so a pylance script's ``except CommitConflictError`` (or
``except OSError``) catches them, and ``retryable`` says what pylance's says.
"""


class CommitConflictError(OSError):
    """A commit conflicted with a concurrent transaction. Subclasses :class:`OSError`, as
    pylance's; ``retryable`` is ``True`` when the transaction was preempted and can be retried
    against the newer version, ``False`` when the conflict is incompatible."""

    def __init__(self, message: str = "", retryable: bool = True):
        super().__init__(message)
        self.retryable = retryable
