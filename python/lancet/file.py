"""Single Lance files outside a table, as pylance's ``lance.file``: :class:`LanceFileWriter`
writes batches (with schema metadata and global buffers) and :class:`LanceFileReader`
reads all rows, a range, rows at offsets or some columns, a global buffer and the file's
:class:`LanceFileMetadata`. Files are written in Lance's stable version, 2.2, unless
another is named (``2.0``, ``2.1``); what either engine writes, the other reads.

The page-level layout pylance's metadata shows (``columns``, their pages and encodings),
``file_statistics`` and :class:`LanceFileSession` are not implemented (``UnsupportedError``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Union

import pyarrow as pa

from . import _args, _lancet
from ._data import read, schema_stream
from .errors import InvalidInputError, NotFoundError, UnavailableError, UnsupportedError

__all__ = ["LanceFileReader", "LanceFileWriter", "LanceFileMetadata", "LanceBufferDescriptor",
           "LanceFileSession", "ReaderResults", "stable_version"]


def stable_version() -> str:
    """The Lance file version written when none is named, as pylance's."""
    return "2.2"


class ReaderResults:
    """Rows a reader read, as a ``RecordBatchReader`` or a table."""

    def __init__(self, reader: pa.RecordBatchReader):
        self.reader = reader

    def to_batches(self) -> pa.RecordBatchReader:
        return self.reader

    def to_table(self) -> pa.Table:
        return self.reader.read_all()


class LanceBufferDescriptor:
    """Where a global buffer lies in the file."""

    def __init__(self, position: int, size: int):
        self.position, self.size = position, size

    def __repr__(self) -> str:
        return f"LanceBufferDescriptor(position={self.position}, size={self.size})"


class LanceFileMetadata:
    """What a Lance file's footer and metadata say: its version, rows, schema (with its
    metadata), section sizes and global buffers (buffer 0 is the schema)."""

    def __init__(self, summary: dict, schema: pa.Schema):
        self.major_version = summary["major_version"]
        self.minor_version = summary["minor_version"]
        self.num_rows = summary["num_rows"]
        self.num_data_bytes = summary["num_data_bytes"]
        self.num_column_metadata_bytes = summary["num_column_metadata_bytes"]
        self.num_global_buffer_bytes = summary["num_global_buffer_bytes"]
        self.global_buffers = [LanceBufferDescriptor(p, s) for p, s in summary["global_buffers"]]
        self.schema = schema

    @property
    def columns(self):
        raise UnsupportedError("LanceFileMetadata.columns: lancet does not implement page-level "
                               "file metadata")

    def __repr__(self) -> str:
        return (f"LanceFileMetadata(major_version={self.major_version}, "
                f"minor_version={self.minor_version}, num_rows={self.num_rows})")


def _batched(table: pa.Table, batch_size: int) -> ReaderResults:
    if batch_size <= 0:
        raise InvalidInputError(f"batch_size must be positive, not {batch_size}")
    return ReaderResults(pa.RecordBatchReader.from_batches(table.schema, table.to_batches(batch_size)))


class LanceFileReader:
    """A Lance file opened for reading (local path or URI), its `columns` only when given."""

    def __init__(self, path: Union[str, Path], storage_options: Optional[Dict[str, str]] = None,
                 columns: Optional[List[str]] = None, *, namespace_client=None, table_id=None,
                 _inner_reader=None):
        _args.refuse("LanceFileReader", storage_options=storage_options,
                     namespace_client=namespace_client, table_id=table_id, _inner_reader=_inner_reader)
        try:
            self._reader = _lancet._FileReader(str(path), None if columns is None else list(columns))
        except UnavailableError as e:
            if "://" not in str(path) and not os.path.exists(os.path.expanduser(str(path))):
                raise NotFoundError(f"no Lance file at {path}") from e
            raise

    def read_all(self, *, batch_size: int = 1024, batch_readahead=16) -> ReaderResults:
        return self.read_range(0, self.num_rows(), batch_size=batch_size)

    def read_range(self, start: int, num_rows: int, *, batch_size: int = 1024,
                   batch_readahead=16) -> ReaderResults:
        """Rows `start` to `start + num_rows`; past the end is :class:`InvalidInputError`
        (pylance's ``ValueError``)."""
        if start < 0 or num_rows < 0:
            raise InvalidInputError("a range starts at 0 or later and has 0 rows or more")
        return _batched(read(self._reader.read_range(int(start), int(num_rows))).read_all(), batch_size)

    def take_rows(self, indices, *, batch_size: int = 1024, batch_readahead=16) -> ReaderResults:
        """The rows at `indices`, in ascending order (another order is refused, as pylance's)."""
        indices = [int(i) for i in indices]
        for a, b in zip(indices, indices[1:]):
            if a > b:
                raise InvalidInputError(f"Indices must be sorted in ascending order for file API, "
                                        f"got {a} > {b}")
        return _batched(read(self._reader.take_rows(indices)).read_all(), batch_size)

    def metadata(self) -> LanceFileMetadata:
        summary, schema = self._reader.summary()
        return LanceFileMetadata(summary, read(schema).schema)

    def file_statistics(self):
        raise UnsupportedError("LanceFileReader.file_statistics: lancet does not implement "
                               "per-column file statistics")

    def read_global_buffer(self, index: int) -> bytes:
        return self._reader.read_global_buffer(int(index))

    def num_rows(self) -> int:
        return self._reader.num_rows()


class LanceFileWriter:
    """A Lance file being written (local path or URI): batches of one schema (`schema`, or
    the first batch's), schema metadata and global buffers; :meth:`close` finishes it and
    sets :attr:`size_bytes`."""

    def __init__(self, path: Union[str, Path], schema: Optional[pa.Schema] = None, *,
                 data_cache_bytes: Optional[int] = None, version: Optional[str] = None,
                 storage_options: Optional[Dict[str, str]] = None, namespace_client=None,
                 table_id=None, max_page_bytes: Optional[int] = None, _inner_writer=None, **kwargs):
        where = "LanceFileWriter"
        _args.refuse(where, storage_options=storage_options, namespace_client=namespace_client,
                     table_id=table_id, _inner_writer=_inner_writer, **kwargs)
        # buffer and page sizes change how pages are cut, not what is read back
        del data_cache_bytes, max_page_bytes
        if version is not None and version not in ("2.0", "2.1", "2.2", "stable"):
            raise UnsupportedError(f"{where}: lancet writes Lance file versions 2.0, 2.1 and 2.2, "
                                   f"not {version!r}")
        self._writer = _lancet._FileWriter(str(path), None if schema is None else schema_stream(schema),
                                           version)
        self.closed = False
        self.size_bytes: Optional[int] = None

    def write_batch(self, batch: Union[pa.RecordBatch, pa.Table]) -> None:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        self._writer.write(batch)

    def close(self) -> Optional[int]:
        """Finishes the file; the rows written (``None`` when already closed)."""
        if self.closed:
            return None
        self.closed = True
        rows, self.size_bytes = self._writer.finish()
        return rows

    def add_schema_metadata(self, key: str, value: str) -> None:
        self._writer.add_schema_metadata(key, value)

    def add_global_buffer(self, data: bytes) -> int:
        """Adds a global buffer; its index (1 for the first, then 2, ...)."""
        return self._writer.add_global_buffer(bytes(data))

    def __enter__(self) -> "LanceFileWriter":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        self.close()


class LanceFileSession:
    """pylance's file session over a base path: not implemented by lancet."""

    def __init__(self, *args, **kwargs):
        raise UnsupportedError("LanceFileSession: lancet does not implement file sessions "
                               "(open files with LanceFileReader and LanceFileWriter)")
