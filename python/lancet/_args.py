"""pylance's arguments that lancet does not honour: refused unless they have pylance's default.

Every public function takes pylance 14.0.2's parameters under pylance's names, in pylance's
order, with pylance's defaults (``tests/test_signatures.py`` compares them with the installed
pylance). A parameter lancet implements is honoured. One that changes only how fast or with how
much memory a call runs (read-ahead, cache sizes, thread counts) is accepted whatever its
value: the answer is the same. Any other is accepted at pylance's default and otherwise raises
:class:`lancet.errors.UnsupportedError` (a ``NotImplementedError``) naming it — never silently
dropped, since a dropped ``asof=`` or ``storage_options=`` is a wrong answer, not a missing
feature. A name pylance does not have is a ``TypeError``, as Python raises it.
"""

from __future__ import annotations

from .errors import UnsupportedError

_UNSET = object()


def refuse(where: str, **given) -> None:
    """Raises for the first of `given` (name = value) that is not None: each is a pylance
    parameter, default None, that lancet does not honour."""
    for name, value in given.items():
        if value is not None:
            raise UnsupportedError(
                f"{where}: lancet does not implement the argument {name!r} (given {value!r})")


def refuse_unless(where: str, name: str, value, default) -> None:
    """Raises when `value` is not pylance's `default` for the parameter `name`."""
    if value is not default and value != default:
        raise UnsupportedError(
            f"{where}: lancet does not implement the argument {name!r} other than {default!r} "
            f"(given {value!r})")


def no_extra(where: str, kwargs: dict) -> None:
    """A keyword pylance's function does not take (one that takes ``**kwargs`` and passes them
    on), refused as Python refuses an unexpected keyword."""
    for name in kwargs:
        raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")
