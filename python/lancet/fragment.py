"""The distributed write: fragments written anywhere, committed once.

:class:`FragmentMetadata` is a fragment's Lance ``DataFragment`` protobuf (picklable, so
Ray tasks return it); :func:`write_fragments` writes data as uncommitted fragments of an
existing table or of one not created yet; :class:`LanceOperation` names the commit
(``LanceDataset.commit(uri, LanceOperation.Append(fragments), read_version=...)``).
"""

from __future__ import annotations

import warnings
from typing import List, Optional

import pyarrow as pa

from . import _args, _lancet
from ._data import to_reader
from .errors import InvalidInputError, NotFoundError, UnsupportedError

__all__ = ["DataFile", "DeletionFile", "FragmentMetadata", "RowIdMeta", "write_fragments"]


class DataFile:
    """A data file of a fragment (pylance's ``DataFile``): its path under ``data/``, the field
    ids it stores and where, the Lance file version, and its size."""

    def __init__(self, path: str, fields: List[int], column_indices: Optional[List[int]] = None,
                 file_major_version: int = 0, file_minor_version: int = 0,
                 file_size_bytes: Optional[int] = None, base_id: Optional[int] = None):
        self._path = path
        self.fields = list(fields)
        self.column_indices = list(column_indices or [])
        self.file_major_version = file_major_version
        self.file_minor_version = file_minor_version
        self.file_size_bytes = file_size_bytes
        self.base_id = base_id

    @property
    def path(self) -> str:
        return self._path

    def _key(self):
        return (self._path, self.fields, self.column_indices, self.file_major_version,
                self.file_minor_version, self.file_size_bytes, self.base_id)

    def __eq__(self, other) -> bool:
        return isinstance(other, DataFile) and other._key() == self._key()

    def __repr__(self) -> str:
        return (f"DataFile(path='{self._path}', fields={self.fields}, "
                f"column_indices={self.column_indices}, "
                f"file_major_version={self.file_major_version}, "
                f"file_minor_version={self.file_minor_version}, "
                f"file_size_bytes={self.file_size_bytes})")


class DeletionFile:
    """A fragment's deletion file (pylance's ``DeletionFile``)."""

    def __init__(self, read_version: int, id: int, file_type: str, num_deleted_rows: int,
                 base_id: Optional[int] = None):
        self.read_version = read_version
        self.id = id
        self.file_type = file_type
        self.num_deleted_rows = num_deleted_rows
        self.base_id = base_id

    def asdict(self) -> dict:
        return {"read_version": self.read_version, "id": self.id, "file_type": self.file_type,
                "num_deleted_rows": self.num_deleted_rows, "base_id": self.base_id}

    def path(self, fragment_id: int, base_uri: Optional[str] = None) -> str:
        """The deletion file's path, relative to the table (or under `base_uri`)."""
        ext = "arrow" if self.file_type == "array" else "bin"
        rel = f"_deletions/{fragment_id}-{self.read_version}-{self.id}.{ext}"
        return rel if base_uri is None else f"{base_uri.rstrip('/')}/{rel}"

    def __eq__(self, other) -> bool:
        return isinstance(other, DeletionFile) and other.asdict() == self.asdict()

    def __reduce__(self):
        return (DeletionFile, (self.read_version, self.id, self.file_type, self.num_deleted_rows,
                               self.base_id))

    def __repr__(self) -> str:
        return f"DeletionFile(type='{self.file_type}', num_deleted_rows={self.num_deleted_rows})"


class RowIdMeta:
    """A fragment's stored row ids (pylance's ``RowIdMeta``), kept as Lance's serialized
    sequence."""

    def __init__(self, data: bytes):
        self._data = bytes(data)

    def __eq__(self, other) -> bool:
        return isinstance(other, RowIdMeta) and other._data == self._data

    def __repr__(self) -> str:
        return f"RowIdMeta({len(self._data)} bytes)"


class RowDatasetVersionMeta:
    """A fragment's stored row versions (pylance's ``RowDatasetVersionMeta``)."""

    def __repr__(self) -> str:
        return "RowDatasetVersionMeta()"


class FragmentMetadata:
    """One fragment as Lance records it (pylance's ``FragmentMetadata``: ``id``, ``files``,
    ``physical_rows``, ``deletion_file``, ``row_id_meta``, ...), held as its ``DataFragment``
    protobuf bytes (picklable, so Ray tasks return it)."""

    def __init__(self, data: bytes, *args, **kwargs):
        if not isinstance(data, (bytes, bytearray, memoryview)) or args or kwargs:
            raise UnsupportedError("FragmentMetadata: lancet builds fragment metadata from written "
                                   "fragments (write_fragments, read_transaction), not from fields")
        self._data = bytes(data)
        self._info = _lancet.fragment_info(self._data)

    def __reduce__(self):
        return (FragmentMetadata, (self._data,))

    def __eq__(self, other) -> bool:
        return isinstance(other, FragmentMetadata) and other._data == self._data

    def __repr__(self) -> str:
        return (f"FragmentMetadata(id={self.id}, files={self.files}, physical_rows={self.physical_rows}, "
                f"deletion_file={self.deletion_file}, row_id_meta={self.row_id_meta}, "
                f"created_at_version_meta={self.created_at_version_meta}, "
                f"last_updated_at_version_meta={self.last_updated_at_version_meta}, overlays=[])")

    @property
    def id(self) -> int:
        return self._info["id"]

    @property
    def physical_rows(self) -> int:
        return self._info["physical_rows"]

    @property
    def files(self) -> List[DataFile]:
        return [DataFile(**f) for f in self._info["files"]]

    @property
    def deletion_file(self) -> Optional[DeletionFile]:
        d = self._info["deletion_file"]
        return None if d is None else DeletionFile(**d)

    @property
    def row_id_meta(self) -> Optional[RowIdMeta]:
        ids = self._info["row_id_meta"]
        return None if ids is None else RowIdMeta(ids)

    @property
    def created_at_version_meta(self) -> Optional[RowDatasetVersionMeta]:
        return RowDatasetVersionMeta() if self._info["has_version_sequences"] else None

    @property
    def last_updated_at_version_meta(self) -> Optional[RowDatasetVersionMeta]:
        return RowDatasetVersionMeta() if self._info["has_version_sequences"] else None

    @property
    def overlays(self) -> list:
        if self._info["num_overlays"]:
            raise UnsupportedError("FragmentMetadata.overlays: lancet does not read data overlay files")
        return []

    @property
    def num_deletions(self) -> int:
        d = self._info["deletion_file"]
        return 0 if d is None else d["num_deleted_rows"]

    @property
    def num_rows(self) -> int:
        return self.physical_rows - self.num_deletions

    def data_files(self) -> List[DataFile]:
        warnings.warn("FragmentMetadata.data_files is deprecated. Use .files instead.", DeprecationWarning)
        return self.files

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
