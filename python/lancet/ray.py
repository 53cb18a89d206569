"""lancet on a Ray cluster: distributed write, read, compaction, BTree build and column
backfill, each with one commit by the driver (the tasks only write files).

- :func:`write_dataset` — a Ray ``Datasink``: every write task writes fragments; one
  commit in ``on_write_complete`` (an Overwrite creating the table, or an Append read at
  the version the write started from). A failed task commits nothing: the table stays at
  its version, and the files written meanwhile are ones no version names, which
  ``cleanup_old_versions(delete_unverified=True)`` (or any cleanup 7 days on) removes.
- :func:`read_dataset` — a Ray ``Datasource`` split by fragments; each task opens the
  version and resolves only its own fragments (on a tree, their routing paths).
- :func:`compact_files` — the compaction plan's tasks as Ray tasks, one Rewrite.
- :func:`create_scalar_index` — BTree segments trained over shares of the fragments by
  parallel Ray tasks, committed as one index in one CreateIndex.
- :func:`add_columns` — a backfill: each task computes new columns for one fragment from a
  Python function over its rows; the driver commits every `fragments_per_commit` finished
  fragments as one DataReplacement (``add_data_file`` mutations on a tree). Run again
  after a failure, it computes only the fragments still without the columns.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Union

import pyarrow as pa
import ray
from ray.data import Datasink, Datasource, ReadTask
from ray.data.block import BlockAccessor, BlockMetadata

import lancet
from . import _lancet
from .backfill import compute_file, new_schema_of
from .errors import InvalidInputError, NotFoundError
from .fragment import FragmentMetadata
from .transaction import LanceOperation
from .optimize import Compaction, CompactionOptions, CompactionTask, RewriteResult

__all__ = ["LancetDatasink", "LancetDatasource", "write_dataset", "read_dataset", "compact_files",
           "create_scalar_index", "add_columns"]


class LancetDatasink(Datasink):
    """Writes a Ray Dataset into a lancet table in one commit."""

    def __init__(self, uri: str, *, schema: Optional[pa.Schema] = None, mode: str = "create",
                 layout: str = "flat", enable_stable_row_ids: bool = False,
                 max_rows_per_file: int = 1024 * 1024, max_rows_per_group: int = 1024,
                 data_storage_version: Optional[str] = None):
        if mode not in ("create", "append"):
            raise InvalidInputError(f"lancet.ray writes with mode create or append, not {mode!r}")
        self.uri = str(uri)
        self.schema = schema
        self.mode = mode
        self.layout = layout
        self.enable_stable_row_ids = enable_stable_row_ids
        self.max_rows_per_file = max_rows_per_file
        self.max_rows_per_group = max_rows_per_group
        self.data_storage_version = data_storage_version or "stable"
        self.read_version: Optional[int] = None
        self.version: Optional[int] = None

    def on_write_start(self, schema: Optional[pa.Schema] = None) -> None:
        if self.schema is None and schema is not None:
            self.schema = schema
        try:
            ds = lancet.dataset(self.uri)
        except NotFoundError:
            ds = None
        if ds is not None and self.mode == "create":
            raise InvalidInputError(f"{self.uri} holds a table (mode='append' adds to it)")
        if ds is None and self.mode == "append":
            self.mode = "create"
        self.read_version = ds.version if ds is not None else None

    def write(self, blocks: Iterable, ctx) -> dict:
        tables = [BlockAccessor.for_block(b).to_arrow() for b in blocks]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return {"fragments": [], "schema": None}
        table = pa.concat_tables(tables, promote_options="default")
        if self.schema is not None:
            table = table.cast(self.schema)
        if self.read_version is not None:
            native = _lancet.open(self.uri, version=self.read_version)
            written = native.write_fragments(table)
        else:
            written = _lancet.write_new_fragments(table, self.uri, self.max_rows_per_file,
                                                  self.max_rows_per_group, self.data_storage_version)
        return {"fragments": [bytes(b) for b in written], "schema": table.schema}

    def on_write_complete(self, write_result) -> None:
        returns = [r for r in write_result.write_returns if r is not None]
        fragments = [FragmentMetadata._from_bytes(b) for r in returns for b in r["fragments"]]
        schema = self.schema
        if schema is None:
            schema = next((r["schema"] for r in returns if r["schema"] is not None), None)
        if self.read_version is None:
            if schema is None:
                raise InvalidInputError("nothing to write and no schema to create a table with")
            op = LanceOperation.Overwrite(schema, fragments, layout=self.layout,
                                          enable_stable_row_ids=self.enable_stable_row_ids,
                                          data_storage_version=self.data_storage_version)
            self.version = lancet.LanceDataset.commit(self.uri, op).version
        elif fragments:
            op = LanceOperation.Append(fragments)
            self.version = lancet.LanceDataset.commit(self.uri, op, read_version=self.read_version).version

    def get_name(self) -> str:
        return "Lancet"


def write_dataset(data: "ray.data.Dataset", uri: str, *, schema: Optional[pa.Schema] = None,
                  mode: str = "create", layout: str = "flat", enable_stable_row_ids: bool = False,
                  max_rows_per_file: int = 1024 * 1024, max_rows_per_group: int = 1024,
                  data_storage_version: Optional[str] = None, concurrency: Optional[int] = None,
                  ray_remote_args: Optional[dict] = None) -> lancet.LanceDataset:
    """Writes a Ray Dataset to `uri` (every task writes fragments; one commit)."""
    sink = LancetDatasink(uri, schema=schema, mode=mode, layout=layout,
                          enable_stable_row_ids=enable_stable_row_ids,
                          max_rows_per_file=max_rows_per_file, max_rows_per_group=max_rows_per_group,
                          data_storage_version=data_storage_version)
    data.write_datasink(sink, concurrency=concurrency, ray_remote_args=ray_remote_args or {})
    return lancet.dataset(uri)


# lance-ray's names
write_lance = write_dataset


class LancetDatasource(Datasource):
    """Reads one version of a lancet table, split by fragments."""

    def __init__(self, uri: str, columns: Optional[List[str]] = None, filter: Optional[str] = None,
                 version: Optional[int] = None):
        super().__init__()
        self.uri = str(uri)
        ds = lancet.dataset(self.uri, version)
        self.version = ds.version
        self.columns = columns
        self.filter = filter
        self._fragments = ds._ds.fragments()
        self._schema = ds.scanner(columns=columns).projected_schema

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit=None, data_context=None) -> List[ReadTask]:
        # a fragment of unknown count (a legacy manifest's) is read, never skipped
        fragments = [f for f in self._fragments if f[2] is None or f[2] > 0]
        if not fragments:
            return []
        n = max(1, min(parallelism, len(fragments)))
        groups = [fragments[i::n] for i in range(n)]
        tasks = []
        for group in groups:
            ids = [f[0] for f in group]
            counts = [f[2] for f in group]
            rows = None if self.filter or None in counts else sum(counts)
            meta = BlockMetadata(num_rows=rows, size_bytes=None, exec_stats=None, input_files=None)
            uri, version, columns, filter = self.uri, self.version, self.columns, self.filter

            def read(ids=ids, uri=uri, version=version, columns=columns, filter=filter):
                ds = lancet.dataset(uri, version)
                for batch in ds.scanner(columns=columns, filter=filter, fragments=ids).to_batches():
                    yield pa.Table.from_batches([batch])

            tasks.append(ReadTask(read, meta, schema=self._schema))
        return tasks

    def get_name(self) -> str:
        return "Lancet"


def read_dataset(uri: str, columns: Optional[List[str]] = None, filter: Optional[str] = None, *,
                 version: Optional[int] = None, **kwargs) -> "ray.data.Dataset":
    """A Ray Dataset of the table's rows (one version), read by fragments in parallel."""
    return ray.data.read_datasource(LancetDatasource(uri, columns, filter, version), **kwargs)


read_lance = read_dataset


@ray.remote
def _execute_compaction(uri: str, task: CompactionTask) -> RewriteResult:
    return task.execute(lancet.dataset(uri, task.read_version))


def compact_files(uri: str, *, target_rows_per_fragment: int = 1024 * 1024, max_rows_per_group: int = 1024,
                  materialize_deletions: bool = True, materialize_deletions_threshold: float = 0.1,
                  defer_index_remap: bool = False, **kwargs) -> Optional[dict]:
    """Compacts the table: each planned group rewritten by a Ray task
    (:class:`lancet.optimize.CompactionTask`), one Rewrite committed. Returns the commit's
    counts, or None when nothing needed compaction."""
    ds = lancet.dataset(str(uri))
    options = CompactionOptions(target_rows_per_fragment, max_rows_per_group, materialize_deletions,
                                materialize_deletions_threshold, defer_index_remap)
    plan = Compaction.plan(ds, options)
    if not plan.tasks:
        return None
    results = ray.get([_execute_compaction.remote(str(uri), t) for t in plan.tasks])
    done = Compaction.commit(ds, results)
    return {**done, "tasks": plan.num_tasks}


@ray.remote
def _train_segment(uri: str, version: int, column: str, fragments: List[int]) -> bytes:
    return bytes(_lancet.open(uri, version=version).train_btree_segment(column, fragments))


def create_scalar_index(uri: str, column: str, index_type: str = "BTREE", *,
                        num_workers: Optional[int] = None, **kwargs) -> int:
    """Builds the BTree `{column}_idx`: each Ray task trains one segment over a share of the
    fragments, and one CreateIndex commits every segment as the index. Returns the version."""
    if str(index_type).upper() != "BTREE":
        raise InvalidInputError(f"lancet builds BTREE scalar indexes, not {index_type}")
    native = _lancet.open(str(uri))
    ids = [fid for fid, _, live in native.fragments() if live is None or live > 0]
    if not ids:
        raise InvalidInputError("the table has no rows to index")
    workers = num_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
    shares = [ids[i::workers] for i in range(min(workers, len(ids)))]
    segments = ray.get([_train_segment.remote(str(uri), native.version, column, share) for share in shares])
    return native.commit_btree_segments(column, segments).version


@ray.remote
def _backfill_fragment(uri: str, version: int, fragment_id: int, udf, read_columns, schema) -> tuple:
    native = _lancet.open(uri, version=version)
    return fragment_id, bytes(compute_file(native, fragment_id, udf, read_columns, schema))


def _as_function(transforms) -> Callable:
    if callable(transforms):
        return transforms
    if isinstance(transforms, dict) and all(callable(f) for f in transforms.values()):
        names = list(transforms)

        def columns(batch):
            return pa.table({n: transforms[n](batch) for n in names})

        return columns
    raise InvalidInputError("add_columns takes a function over batches, or a dict of name to function")


def add_columns(uri: str, transforms: Union[Callable, Dict[str, Callable]], *,
                read_columns: Optional[List[str]] = None, fragments_per_commit: int = 10,
                max_in_flight: Optional[int] = None) -> lancet.LanceDataset:
    """Backfills new columns computed by Python functions over each fragment's rows (deleted
    rows included, as data files hold them): one Ray task per fragment, a DataReplacement
    per `fragments_per_commit` finished fragments. Resumable: a second run computes only the
    fragments a failed run left without the columns."""
    if fragments_per_commit < 1:
        raise InvalidInputError("fragments_per_commit must be at least 1")
    udf = _as_function(transforms)
    ds = lancet.dataset(uri)
    new = new_schema_of(ds, udf, read_columns)
    existing = ds.schema.names
    to_add = pa.schema([pa.field(f.name, f.type, True) for f in new if f.name not in existing])
    if len(to_add) and len(to_add) != len(new):
        raise InvalidInputError("the functions return some columns the table has and some it has not")
    if len(to_add):
        ds.add_columns(to_add)
    version = ds.version
    pending = ds._ds.unfilled_fragments(new.names)
    udf_ref = ray.put(udf)
    limit = max_in_flight or max(2 * fragments_per_commit, 4)
    waiting, done = list(pending), []
    in_flight = []
    native = ds._ds
    while waiting or in_flight:
        while waiting and len(in_flight) < limit:
            fid = waiting.pop(0)
            in_flight.append(_backfill_fragment.remote(str(uri), version, fid, udf_ref, read_columns, new))
        ready, in_flight = ray.wait(in_flight, num_returns=1)
        done.extend(ray.get(ready))
        while len(done) >= fragments_per_commit or (done and not waiting and not in_flight):
            batch, done = done[:fragments_per_commit], done[fragments_per_commit:]
            native = native.replace_data_files(batch)
    return lancet.dataset(uri)
