"""pylance's ``lance.udf``: a function over batches that :meth:`LanceDataset.add_columns`
runs to compute new columns, with the schema of what it returns declared up front."""

from __future__ import annotations

from typing import Any, Callable, Optional

import pyarrow as pa

from .errors import UnsupportedError

__all__ = ["BatchUDF", "batch_udf"]


class BatchUDF:
    """A function over record batches that adds columns (pylance's ``BatchUDF``). Called
    directly it is the function as written; `output_schema`, when given, is the schema of
    the new columns (otherwise they are learnt from the function's output on no rows)."""

    def __init__(self, func: Callable[[pa.RecordBatch], Any], output_schema: Optional[pa.Schema] = None,
                 checkpoint_file=None) -> None:
        if checkpoint_file is not None:
            raise UnsupportedError("BatchUDF: checkpoint_file is not implemented by lancet (a failed "
                                   "add_columns is resumed by running it again: fragments whose "
                                   "files are written are not computed twice)")
        self.func = func
        self.output_schema = output_schema
        self.cache = None

    def __call__(self, batch: pa.RecordBatch) -> Any:
        return self.func(batch)


def batch_udf(output_schema: Optional[pa.Schema] = None,
              checkpoint_file=None) -> Callable[[Callable[[pa.RecordBatch], Any]], BatchUDF]:
    """A decorator making a function over batches a :class:`BatchUDF` with `output_schema`,
    as pylance's."""

    def inner(func: Callable[[pa.RecordBatch], Any]) -> BatchUDF:
        return BatchUDF(func, output_schema, checkpoint_file)

    return inner
