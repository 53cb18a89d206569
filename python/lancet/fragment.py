"""The distributed write: fragments written anywhere, committed once.

:class:`FragmentMetadata` is a fragment's Lance ``DataFragment`` protobuf (picklable, so
Ray tasks return it); :func:`write_fragments` writes data as uncommitted fragments of an
existing table or of one not created yet; :class:`LanceOperation` names the commit
(``LanceDataset.commit(uri, LanceOperation.Append(fragments), read_version=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

import pyarrow as pa

from . import _lancet
from ._data import to_reader
from .errors import InvalidInputError, NotFoundError

__all__ = ["FragmentMetadata", "write_fragments", "LanceOperation"]


class FragmentMetadata:
    """One written fragment, as Lance records it (its ``DataFragment`` protobuf)."""

    def __init__(self, data: bytes):
        self._data = bytes(data)
        self._info = _lancet.fragment_info(self._data)

    def __reduce__(self):
        return (FragmentMetadata, (self._data,))

    def __eq__(self, other) -> bool:
        return isinstance(other, FragmentMetadata) and other._data == self._data

    def __repr__(self) -> str:
        return f"FragmentMetadata(physical_rows={self.physical_rows}, files={len(self.files)})"

    @property
    def id(self) -> int:
        return self._info["id"]

    @property
    def physical_rows(self) -> int:
        return self._info["physical_rows"]

    @property
    def num_rows(self) -> int:
        return self._info["physical_rows"] - self._info["deleted_rows"]

    @property
    def files(self) -> list:
        return self._info["files"]

    def to_bytes(self) -> bytes:
        return self._data


def write_fragments(data, dataset_uri, schema: Optional[pa.Schema] = None, *, mode: str = "append",
                    max_rows_per_file: int = 1024 * 1024, max_rows_per_group: int = 1024,
                    data_storage_version: Optional[str] = None, **kwargs) -> List[FragmentMetadata]:
    """Writes `data` as fragments of the table at `dataset_uri` (or of the table to be
    created there, when there is none), uncommitted."""
    reader = to_reader(data, schema)
    uri = str(dataset_uri)
    try:
        native = _lancet.open(uri)
    except NotFoundError:
        native = None
    if mode not in ("append", "overwrite", "create"):
        raise InvalidInputError(f"write_fragments mode must be append, overwrite or create, not {mode!r}")
    if native is not None and mode == "append":
        written = native.write_fragments(reader)
    elif native is not None and mode == "overwrite":
        written = native.write_overwrite_fragments(reader, max_rows_per_file, max_rows_per_group,
                                                   data_storage_version)
    elif native is None:
        written = _lancet.write_new_fragments(reader, uri, max_rows_per_file, max_rows_per_group,
                                              data_storage_version or "stable")
    else:
        raise InvalidInputError(f"write_fragments mode 'create' on an existing table at {uri}")
    return [FragmentMetadata(b) for b in written]


class LanceOperation:
    """The operations a distributed write commits."""

    @dataclass
    class Append:
        fragments: List[FragmentMetadata]

    @dataclass
    class Overwrite:
        new_schema: pa.Schema
        fragments: List[FragmentMetadata]
        layout: str = "flat"
        enable_stable_row_ids: bool = False
        data_storage_version: Optional[str] = None
