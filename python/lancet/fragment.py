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

from . import _args, _lancet
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


def write_fragments(data, dataset_uri, schema: Optional[pa.Schema] = None, *, return_transaction: bool = False,
                    mode: str = "append", max_rows_per_file: int = 1024 * 1024, max_rows_per_group: int = 1024,
                    max_bytes_per_file: int = 90 * 1024 ** 3, data_cache_bytes=None, max_page_bytes=None,
                    progress=None, data_storage_version: Optional[str] = None, use_legacy_format=None,
                    storage_options=None, enable_stable_row_ids: bool = False, target_bases=None,
                    target_all_bases=None, initial_bases=None, base_store_params=None,
                    external_blob_mode: str = "reference", allow_external_blob_outside_bases: bool = False,
                    namespace_client=None, table_id=None, session=None) -> List[FragmentMetadata]:
    """Writes `data` as fragments of the table at `dataset_uri` (or of the table to be
    created there, when there is none), uncommitted. Cache and page sizes change no answer;
    pylance's other arguments are refused unless left at their default (:mod:`lancet._args`)."""
    where = "lancet.fragment.write_fragments"
    _args.refuse_unless(where, "return_transaction", return_transaction, False)
    _args.refuse_unless(where, "max_bytes_per_file", max_bytes_per_file, 90 * 1024 ** 3)
    _args.refuse(where, progress=progress, use_legacy_format=use_legacy_format, target_bases=target_bases,
                 target_all_bases=target_all_bases, initial_bases=initial_bases,
                 base_store_params=base_store_params, namespace_client=namespace_client,
                 table_id=table_id, session=session)
    if storage_options:
        _args.refuse(where, storage_options=storage_options)
    _args.refuse_unless(where, "enable_stable_row_ids", enable_stable_row_ids, False)
    _args.refuse_unless(where, "external_blob_mode", external_blob_mode, "reference")
    _args.refuse_unless(where, "allow_external_blob_outside_bases", allow_external_blob_outside_bases, False)
    reader = to_reader(data, schema)
    uri = str(dataset_uri)
    try:
        native = _lancet.open(uri)
    except NotFoundError:
        native = None
    if mode not in ("append", "overwrite", "create"):
        raise InvalidInputError(f"write_fragments mode must be append, overwrite or create, not {mode!r}")
    if native is not None and mode == "append":
        # an append's files are cut as the table's writer cuts them
        _args.refuse_unless(where, "max_rows_per_file", max_rows_per_file, 1024 * 1024)
        _args.refuse_unless(where, "max_rows_per_group", max_rows_per_group, 1024)
        _args.refuse(where, data_storage_version=data_storage_version)
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
