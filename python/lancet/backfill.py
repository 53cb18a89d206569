"""A column computed by a Python function over each fragment's rows (pylance's
``add_columns`` with a UDF), in one process; ``lancet.ray.add_columns`` is the same over a
cluster.

Each fragment's new file holds one value per physical row (deleted rows included, as a
data file covers them). New columns are published with every file in one Merge, as pylance
commits them; with `fragments_per_commit`, the schema is published first (the column reads
NULL until backfilled), then the files, that many fragments per DataReplacement, and a run
stopped by a failure is completed by running it again (only fragments without a file for
the column are computed).
"""

from __future__ import annotations

from typing import Callable, List, Optional

import pyarrow as pa

from . import _lancet
from ._data import read
from .errors import InvalidInputError


def compute_file(native, fragment_id: int, udf: Callable, read_columns: Optional[List[str]],
                 new_schema: pa.Schema) -> bytes:
    """Runs `udf` over fragment `fragment_id` and writes its file for columns the table has;
    the `DataFile` protobuf."""
    return native.write_column_file(fragment_id, compute(native, fragment_id, udf, read_columns, new_schema))


def compute(native, fragment_id: int, udf: Callable, read_columns: Optional[List[str]],
            new_schema: pa.Schema) -> pa.Table:
    """`udf`'s output over fragment `fragment_id` (every physical row), as `new_schema`."""
    rows = read(native.fragment_rows(fragment_id, read_columns)).read_all()
    out = udf(rows.combine_chunks().to_batches()[0] if rows.num_rows else
              pa.RecordBatch.from_pylist([], schema=rows.schema))
    if isinstance(out, pa.Table):
        out = out.combine_chunks()
    elif isinstance(out, dict):
        out = pa.table(out)
    elif isinstance(out, pa.RecordBatch):
        out = pa.Table.from_batches([out])
    else:
        try:
            import pandas as pd

            if isinstance(out, pd.DataFrame):
                out = pa.Table.from_pandas(out, preserve_index=False)
        except ImportError:
            pass
    if not isinstance(out, pa.Table):
        raise InvalidInputError("the function must return a pyarrow RecordBatch, Table, dict or pandas DataFrame")
    if out.schema.names != new_schema.names:
        raise InvalidInputError(
            f"the function returned columns {out.schema.names}, expected {new_schema.names}")
    return out.cast(new_schema)


def new_schema_of(dataset, udf, read_columns) -> pa.Schema:
    """The new columns' schema: what a :class:`lancet.udf.BatchUDF` declares, else the
    function's output on an empty batch of its input."""
    declared = getattr(udf, "output_schema", None)
    if isinstance(declared, pa.Schema):
        return declared
    schema = dataset.schema
    if read_columns is not None:
        schema = pa.schema([schema.field(c) for c in read_columns])
    out = udf(pa.RecordBatch.from_pylist([], schema=schema))
    if isinstance(out, pa.Table):
        return out.schema
    if isinstance(out, pa.RecordBatch):
        return out.schema
    if isinstance(out, dict):
        return pa.table(out).schema
    try:
        import pandas as pd

        if isinstance(out, pd.DataFrame):
            return pa.Table.from_pandas(out, preserve_index=False).schema
    except ImportError:
        pass
    raise InvalidInputError("the function must return a pyarrow RecordBatch, Table, dict or pandas DataFrame")


def backfill(dataset, udf: Callable, read_columns: Optional[List[str]] = None,
             fragments_per_commit: Optional[int] = None) -> None:
    new = new_schema_of(dataset, udf, read_columns)
    existing = dataset.schema.names
    to_add = pa.schema([pa.field(f.name, f.type, True) for f in new if f.name not in existing])
    if len(to_add) and len(to_add) != len(new):
        raise InvalidInputError("the function returns some columns the table has and some it has not")
    if len(to_add) and fragments_per_commit is None:
        # pylance's add_columns: every fragment's file, then one Merge publishing them
        native = dataset._ds
        files = [(fid, _lancet.write_new_column_file(native, fid, compute(native, fid, udf, read_columns, new)))
                 for fid, _, _ in native.fragments()]
        dataset._moved(_lancet.commit_new_columns(native, new.empty_table(), files))
        return
    if len(to_add):
        dataset._moved(dataset._ds.add_null_columns(to_add.empty_table()))
    native = dataset._ds
    pending = native.unfilled_fragments(new.names)
    per = fragments_per_commit or max(len(pending), 1)
    for start in range(0, len(pending), per):
        files = [(fid, compute_file(native, fid, udf, read_columns, new))
                 for fid in pending[start:start + per]]
        native = native.replace_data_files(files)
        dataset._moved(native)
