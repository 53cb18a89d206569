"""What a write accepts, as one Arrow stream (no copies for Arrow data)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as pa_ds

from .errors import InvalidInputError


def to_reader(data, schema: pa.Schema | None = None):
    """`data` as an object exporting an Arrow stream (``__arrow_c_stream__``): what pylance's
    writes take — a pyarrow Table, RecordBatch, RecordBatchReader, Dataset or Scanner, a
    pandas or Polars DataFrame, anything with the Arrow PyCapsule stream interface, a dict of
    columns, a list of row dicts, or an iterable of RecordBatches (with `schema`). Another
    type is a ``TypeError``; an iterable of batches without a schema a ``ValueError``, as
    pylance's."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if isinstance(data, pa.Table):
        if schema is not None and data.schema != schema:
            data = data.cast(schema)
        return data
    if isinstance(data, pa.RecordBatchReader):
        return data
    if isinstance(data, pa_ds.Dataset):
        return data.scanner().to_reader()
    if isinstance(data, pa_ds.Scanner):
        return data.to_reader()
    if isinstance(data, dict):
        return pa.Table.from_pydict(data, schema=schema)
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return pa.Table.from_pylist(data, schema=schema)
    try:
        import pandas as pd

        if isinstance(data, pd.DataFrame):
            return pa.Table.from_pandas(data, schema=schema, preserve_index=False)
    except ImportError:
        pass
    if hasattr(data, "__arrow_c_stream__"):
        return data
    if isinstance(data, (list, tuple)) and all(isinstance(b, pa.RecordBatch) for b in data):
        if not data and schema is None:
            raise InvalidInputError("no batches and no schema")
        return pa.Table.from_batches(list(data), schema=schema)
    if hasattr(data, "__iter__") and not isinstance(data, (str, bytes)):
        if schema is None:
            raise InvalidInputError("Must provide schema to write dataset from RecordBatch iterable")
        return pa.RecordBatchReader.from_batches(schema, data)
    raise TypeError(
        f"cannot write {type(data).__name__}: give Arrow data (a pyarrow Table or "
        "RecordBatchReader, a pandas or Polars DataFrame, or anything with __arrow_c_stream__), "
        "a dict of columns or a list of row dicts"
    )


def schema_stream(schema: pa.Schema):
    """A schema as the native half takes it: an empty table of it."""
    return schema.empty_table()


def read(stream) -> pa.RecordBatchReader:
    """A native stream as a pyarrow reader. An error that ends a native stream is raised as
    its own :mod:`lancet.errors` class (a C stream carries only its text, which pyarrow would
    raise as ``ArrowInvalid``)."""
    reader = pa.RecordBatchReader.from_stream(stream)
    if not hasattr(stream, "error"):
        return reader

    def batches():
        try:
            yield from reader
        except pa.ArrowException as e:
            typed = stream.error()
            if typed is None:
                raise
            from . import errors

            cls, message = typed
            raise getattr(errors, cls)(message) from e

    return pa.RecordBatchReader.from_batches(reader.schema, batches())
