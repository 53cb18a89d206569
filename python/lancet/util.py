"""pylance's ``lance.util`` helpers: timestamps as pylance reads them (``sanitize_ts``,
``td_to_micros``). Its vector tools (``KMeans``, ``HNSW``, ``validate_vector_index``) belong
to vector indexes, which lancet does not implement: they raise ``UnsupportedError``."""

from __future__ import annotations

from datetime import datetime, timedelta

from .errors import UnsupportedError

__all__ = ["sanitize_ts", "td_to_micros", "KMeans", "HNSW", "validate_vector_index"]


def _pandas():
    try:
        import pandas

        return pandas
    except ImportError:
        return None


def sanitize_ts(ts) -> datetime:
    """A datetime from a datetime, a pandas ``Timestamp`` or a string (read by pandas when it
    is installed, else as ``"%Y-%m-%d %H:%M:%S"``), as pylance's: another type is a
    ``TypeError``, a string that does not parse a ``ValueError``."""
    pd = _pandas()
    if isinstance(ts, str):
        if pd is not None:
            return pd.to_datetime(ts).to_pydatetime()
        try:
            return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise ValueError(f"Failed to parse timestamp string {ts}. Try installing Pandas.")
    if pd is not None and isinstance(ts, pd.Timestamp):
        return ts.to_pydatetime()
    if not isinstance(ts, datetime):
        raise TypeError(f"Unrecognized version timestamp {ts} of type {type(ts)}")
    return ts


def td_to_micros(td: timedelta) -> int:
    """The microseconds in `td`, rounded."""
    return round(td / timedelta(microseconds=1))


class _VectorTool:
    _feature = "vector indexes"

    def __init__(self, *args, **kwargs):
        raise UnsupportedError(f"lancet.util.{type(self).__name__}: lancet does not implement "
                               f"{self._feature}")


class KMeans(_VectorTool):
    """Not implemented by lancet (vector indexes): raises ``UnsupportedError``."""


class HNSW(_VectorTool):
    """Not implemented by lancet (vector indexes): raises ``UnsupportedError``."""

    @staticmethod
    def build(*args, **kwargs):
        raise UnsupportedError("lancet.util.HNSW.build: lancet does not implement vector indexes")


def validate_vector_index(*args, **kwargs):
    """Not implemented by lancet (vector indexes): raises ``UnsupportedError``."""
    raise UnsupportedError("lancet.util.validate_vector_index: lancet does not implement vector indexes")
