"""pylance's ``LanceDataset.sql``: a SQL query over one version of a table, run by DataFusion
through lancet's provider (lancet-datafusion): the filters lancet answers exactly are pushed
into its scans (through a BTree where one covers the column), the rest DataFusion evaluates.
"""

from __future__ import annotations

from typing import List, Literal

import pyarrow as pa

from . import _lancet
from ._data import read
from .errors import InvalidInputError, UnsupportedError

__all__ = ["SqlQuery", "SqlQueryBuilder"]


class SqlQuery:
    """An executable SQL query (:meth:`SqlQueryBuilder.build`)."""

    def __init__(self, dataset: "lancet.dataset.LanceDataset", sql: str, table_name: str, with_row_id: bool,
                 with_row_addr: bool, batch_size, batch_size_bytes):
        self._args = (dataset, sql, table_name, with_row_id, with_row_addr, batch_size, batch_size_bytes)

    def to_stream_reader(self) -> pa.RecordBatchReader:
        """The query's results as they are produced."""
        dataset, sql, name, row_id, row_addr, rows, nbytes = self._args
        reader = read(_lancet.sql(dataset._ds, sql, table_name=name, with_row_id=row_id,
                                  with_row_addr=row_addr, batch_size=rows))
        if rows is None and nbytes is None:
            return reader
        return pa.RecordBatchReader.from_batches(reader.schema, _bounded(reader, rows, nbytes))

    def to_batch_records(self) -> List[pa.RecordBatch]:
        """The query's results, all in memory."""
        return list(self.to_stream_reader())


def _bounded(reader: pa.RecordBatchReader, rows, nbytes):
    """`reader`'s batches cut to at most `rows` rows and about `nbytes` bytes each (at least
    one row)."""
    for b in reader:
        if b.num_rows == 0:
            continue
        step = b.num_rows if rows is None else rows
        if nbytes is not None:
            step = min(step, max(nbytes // max(b.nbytes // b.num_rows, 1), 1))
        for i in range(0, b.num_rows, step):
            yield b.slice(i, step)


class SqlQueryBuilder:
    """A SQL query being configured (:meth:`LanceDataset.sql`); the table is ``dataset``
    in the query unless :meth:`table_name` names it otherwise."""

    def __init__(self, dataset: "lancet.dataset.LanceDataset", sql: str):
        self._dataset, self._sql = dataset, sql
        self._table_name = "dataset"
        self._with_row_id = self._with_row_addr = False
        self._batch_size = self._batch_size_bytes = None

    def table_name(self, table_name: str) -> "SqlQueryBuilder":
        """The name the query calls the table by."""
        self._table_name = str(table_name)
        return self

    def with_row_id(self, with_row_id: bool = True) -> "SqlQueryBuilder":
        """Give the table a ``_rowid`` column."""
        self._with_row_id = bool(with_row_id)
        return self

    def with_row_addr(self, with_row_addr: bool = True) -> "SqlQueryBuilder":
        """Give the table a ``_rowaddr`` column."""
        self._with_row_addr = bool(with_row_addr)
        return self

    def blob_handling(self, blob_handling: Literal["all_binary", "blobs_descriptions", "all_descriptions"]
                      ) -> "SqlQueryBuilder":
        """How blob columns come back; lancet has no blob columns, so only pylance's default
        (``"blobs_descriptions"``) is accepted."""
        if blob_handling != "blobs_descriptions":
            raise UnsupportedError(f"SqlQueryBuilder.blob_handling: lancet has no blob columns "
                                   f"({blob_handling!r})")
        return self

    def batch_size(self, batch_size: int) -> "SqlQueryBuilder":
        """At most this many rows per batch."""
        if int(batch_size) <= 0:
            raise InvalidInputError(f"batch_size must be positive, not {batch_size}")
        self._batch_size = int(batch_size)
        return self

    def batch_size_bytes(self, batch_size_bytes: int) -> "SqlQueryBuilder":
        """About this many bytes per batch at most (at least one row)."""
        if int(batch_size_bytes) <= 0:
            raise InvalidInputError(f"batch_size_bytes must be positive, not {batch_size_bytes}")
        self._batch_size_bytes = int(batch_size_bytes)
        return self

    def build(self) -> SqlQuery:
        """The query, ready to run."""
        return SqlQuery(self._dataset, self._sql, self._table_name, self._with_row_id,
                        self._with_row_addr, self._batch_size, self._batch_size_bytes)
