"""pylance's :class:`Session`: the caches table handles share. A handle opened with
``lancet.dataset(uri, session=s)`` reads manifests, index structures, BTree pages and
fragment-tree nodes through ``s``'s caches, so a second handle finds what the first read;
a handle opened without one gets caches of its own, as in pylance."""

from __future__ import annotations

from typing import Optional

from . import _args, _lancet


class Session:
    """The caches of a session, `index_cache_size_bytes` and `metadata_cache_size_bytes`
    bytes at most (lancet's defaults when ``None``). Custom cache backends and store
    registries are not implemented."""

    def __init__(self, index_cache_size_bytes: Optional[int] = None,
                 metadata_cache_size_bytes: Optional[int] = None, index_cache_backend=None,
                 metadata_cache_backend=None, store_registry=None, *, _native=None):
        _args.refuse("lancet.Session", index_cache_backend=index_cache_backend,
                     metadata_cache_backend=metadata_cache_backend, store_registry=store_registry)
        for name, value in (("index_cache_size_bytes", index_cache_size_bytes),
                            ("metadata_cache_size_bytes", metadata_cache_size_bytes)):
            if value is not None and int(value) < 0:
                raise ValueError(f"{name} must be at least 0, not {value}")
        self._native = _native if _native is not None else _lancet._Session(
            index_cache_size_bytes, metadata_cache_size_bytes)

    def size_bytes(self) -> int:
        """Bytes the session's caches hold."""
        return self._native.size_bytes()

    def index_cache_size_bytes(self) -> int:
        """Bytes of index structures and BTree pages held."""
        return self._native.index_cache_size_bytes()

    def is_same_as(self, other: "Session") -> bool:
        """Whether `other` is this session (the same caches)."""
        return isinstance(other, Session) and self._native.is_same_as(other._native)

    def __repr__(self) -> str:
        return repr(self._native)
