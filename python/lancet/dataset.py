"""`LanceDataset`: a table version with pylance's names, over lancet's facade.

It is a :class:`pyarrow.dataset.Dataset`, so DuckDB, Polars (``scan_pyarrow_dataset``) and
DataFusion (``register_dataset``) query it with projection and filter pushdown: a pushed
filter becomes Lance SQL (``lancet._substrait``, from the Expression's Substrait form)
answered through BTree indexes where they cover, and one lancet cannot translate is applied
by pyarrow over the rows read.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import shutil
import warnings
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Union

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds

from . import _lancet
from ._data import read, schema_stream, to_reader
from .bitmap import Bitmap
from . import _args
from .errors import (IndexNotFoundError, InvalidCommitError, InvalidInputError, NotFoundError, SchemaMismatchError,
                     UnsupportedError)
from .indices import IndexDescription
from .join import Right
from .fragment import LanceFragment
from .scanner import LanceScanner, filter_parts as _filter, taken_columns
from .sql import SqlQuery, SqlQueryBuilder
from .schema import LanceSchema
from .transaction import Index, IndexFile, LanceOperation, Transaction, from_native, to_native

__all__ = [
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "MergeInsertBuilder",
    "DatasetOptimizer",
    "Tags",
    "CleanupStats",
    "DatasetDelta",
    "SqlQuery",
    "SqlQueryBuilder",
]


LANCE_COMMIT_MESSAGE_KEY = "__lance_commit_message"


def _merge_message_to_properties(commit_message: Optional[str],
                                 properties: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
    """`properties` with `commit_message` under :data:`LANCE_COMMIT_MESSAGE_KEY` (the message
    wins over a property of that key), None when neither is given: what a commit records
    beside its operation, as pylance merges them."""
    if properties is None and commit_message is None:
        return None
    merged = dict(properties) if properties else {}
    if commit_message is not None:
        merged[LANCE_COMMIT_MESSAGE_KEY] = commit_message
    return merged


# Lance 14's index types other than BTree: lancet refuses them as not implemented
_LANCE_INDEX_TYPES = {
    "BITMAP", "LABEL_LIST", "INVERTED", "FTS", "NGRAM", "ZONEMAP", "BLOOMFILTER", "RTREE", "JSON",
    "SCALAR", "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ", "IVF_HNSW_SQ", "IVF_RQ",
}


def _reopen(uri: str, version: int, branch: Optional[str]) -> "LanceDataset":
    """A pickled handle opened again: `version` of `branch` (the main line when None)."""
    return LanceDataset(uri, version, branch=branch)


class LanceDataset(pa_ds.Dataset):
    """One version of a Lance table (flat or fragment-tree)."""

    def __init__(self, uri, version: Optional[Union[int, str]] = None, *, tag: Optional[str] = None,
                 branch: Optional[str] = None, session=None, _native=None):
        if _native is None:
            if isinstance(version, str):
                version, tag = None, version
            _native = _lancet.open(str(uri), version=version, tag=tag, branch=branch,
                                   session=None if session is None else session._native)
        self._ds = _native
        self._uri = str(uri)

    def _moved(self, native) -> None:
        self._ds = native

    def __reduce__(self):
        # a branch's version reopens on its branch, wherever the handle was opened from
        return (_reopen, (self._main_uri(), self.version, _lancet.branch_of(self._ds)))

    def __repr__(self) -> str:
        return f"LanceDataset(uri={self._uri!r}, version={self.version})"

    # --- what it is -----------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    @property
    def version(self) -> int:
        return self._ds.version

    @property
    def latest_version(self) -> int:
        return self._ds.latest().version

    @property
    def schema(self) -> pa.Schema:
        return read(self._ds.schema()).schema

    @property
    def is_tree(self) -> bool:
        """Whether this version keeps its fragments in a fragment metadata tree."""
        return self._ds.is_tree

    @property
    def has_stable_row_ids(self) -> bool:
        return self._ds.has_stable_row_ids

    @property
    def partition_expression(self):
        return pc.scalar(True)

    def checkout_version(self, version: Union[int, str]) -> "LanceDataset":
        if isinstance(version, str):
            return LanceDataset(self._uri, tag=version)
        return LanceDataset(self._uri, _native=self._ds.checkout(version))

    def versions(self) -> List[dict]:
        return [
            {
                "version": v,
                "timestamp": _dt.datetime.fromtimestamp(ns / 1e9),
                "metadata": {},
            }
            for v, ns in self._ds.versions()
        ]

    def version_refs(self) -> List[dict]:
        """Every version of this line of history as ``{"version": N}``, in order, from the
        manifests' names alone (none is read), as pylance's."""
        return [{"version": v} for v in _lancet.version_numbers(self._ds)]

    def session(self) -> "Session":
        """The session (caches) this handle reads through: the one it was opened with, or its
        own."""
        from .session import Session

        return Session(_native=self._ds.session())

    def scan_stats(self) -> dict:
        """What this handle's scans read so far: index pages, fragments a filter read
        directly, and fragments whose rows were read."""
        pages, scanned, fragments = self._ds.scan_metrics()
        return {"index_pages_read": pages, "filter_fragments_scanned": scanned, "fragments_read": fragments}

    # --- reading --------------------------------------------------------------------------
    def scanner(self, columns=None, filter=None, limit=None, offset=None, nearest=None, batch_size=None,
                batch_size_bytes=None, batch_readahead=None, fragment_readahead=None, scan_in_order=None,
                fragments=None, index_segments=None, full_text_query=None, *, prefilter=None,
                with_row_id=None, with_row_address=None, use_stats=None, fast_search=None,
                io_buffer_size=None, late_materialization=None, blob_handling=None,
                use_scalar_index=None, include_deleted_rows=None, scan_stats_callback=None,
                strict_batch_size=None, order_by=None, disable_scoring_autoprojection=None,
                row_addr_allowlist=None, row_addr_blocklist=None) -> "LanceScanner":
        """A scan with pylance's arguments: `columns` (names, `_rowid`, `_rowaddr`,
        `_rowoffset`, or a dict of SQL expressions by output name), `filter`
        (Lance SQL or a pyarrow Expression), `limit`, `offset`, `fragments`, `with_row_id`,
        `with_row_address`, `batch_size` (no batch longer), `include_deleted_rows` (every
        physical row, `_rowid` NULL on deleted ones; `with_row_id` required; a filter is
        evaluated on the stored values, never through an index, so deleted rows match even
        where pylance's index leaves them out) and `scan_stats_callback` (a
        :class:`ScanStatistics` once the last row is read) are honoured; read-ahead, I/O
        sizes, `use_stats`, `use_scalar_index`, `late_materialization`, `prefilter` and
        `scan_in_order` change no answer (lancet returns rows in order); vector and full-text
        search, and the rest, are refused unless left at their default."""
        where = "LanceDataset.scanner"
        if nearest is not None or full_text_query is not None:
            raise UnsupportedError(f"{where}: lancet has no vector or full-text search")
        _args.refuse(where, batch_size_bytes=batch_size_bytes, index_segments=index_segments,
                     blob_handling=blob_handling, order_by=order_by,
                     row_addr_allowlist=row_addr_allowlist, row_addr_blocklist=row_addr_blocklist)
        for name, value in (("fast_search", fast_search), ("strict_batch_size", strict_batch_size),
                            ("disable_scoring_autoprojection", disable_scoring_autoprojection)):
            if value:
                _args.refuse(where, **{name: value})
        if fragments is not None:
            fragments = [f.fragment_id if isinstance(f, LanceFragment) else int(f) for f in fragments]
        return LanceScanner(self, columns, filter, limit, offset, bool(with_row_id), bool(with_row_address),
                            fragments, batch_size, bool(include_deleted_rows), scan_stats_callback)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, nearest=None, batch_size=None,
                 batch_size_bytes=None, batch_readahead=None, fragment_readahead=None, scan_in_order=None,
                 *, prefilter=None, with_row_id=None, with_row_address=None, use_stats=None,
                 fast_search=None, full_text_query=None, io_buffer_size=None, late_materialization=None,
                 blob_handling=None, use_scalar_index=None, include_deleted_rows=None, order_by=None,
                 disable_scoring_autoprojection=None) -> pa.Table:
        """Every row the scan with these arguments returns (:meth:`scanner`)."""
        return self.scanner(
            columns, filter, limit, offset, nearest, batch_size, batch_size_bytes, batch_readahead,
            fragment_readahead, scan_in_order, full_text_query=full_text_query, prefilter=prefilter,
            with_row_id=with_row_id, with_row_address=with_row_address, use_stats=use_stats,
            fast_search=fast_search, io_buffer_size=io_buffer_size,
            late_materialization=late_materialization, blob_handling=blob_handling,
            use_scalar_index=use_scalar_index, include_deleted_rows=include_deleted_rows,
            order_by=order_by, disable_scoring_autoprojection=disable_scoring_autoprojection,
        ).to_table()

    def to_batches(self, columns=None, filter=None, limit=None, offset=None, nearest=None, batch_size=None,
                   batch_size_bytes=None, batch_readahead=None, fragment_readahead=None, scan_in_order=None,
                   *, prefilter=None, with_row_id=None, with_row_address=None, use_stats=None,
                   full_text_query=None, io_buffer_size=None, late_materialization=None,
                   blob_handling=None, use_scalar_index=None, strict_batch_size=None, order_by=None,
                   disable_scoring_autoprojection=None, **kwargs) -> Iterator[pa.RecordBatch]:
        """The scan's rows as batches (:meth:`scanner`; other keywords go to it)."""
        return self.scanner(
            columns, filter, limit, offset, nearest, batch_size, batch_size_bytes, batch_readahead,
            fragment_readahead, scan_in_order, full_text_query=full_text_query, prefilter=prefilter,
            with_row_id=with_row_id, with_row_address=with_row_address, use_stats=use_stats,
            io_buffer_size=io_buffer_size, late_materialization=late_materialization,
            blob_handling=blob_handling, use_scalar_index=use_scalar_index,
            strict_batch_size=strict_batch_size, order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection, **kwargs,
        ).to_batches()

    def head(self, num_rows: int, **kwargs) -> pa.Table:
        """The first `num_rows` rows of the scan `kwargs` describe (:meth:`to_table`)."""
        kwargs["limit"] = num_rows
        return self.to_table(**kwargs)

    def count_rows(self, filter=None, **kwargs) -> int:
        """The live rows `filter` matches (every live row without one); `kwargs` go to the
        scan (:meth:`scanner`)."""
        if kwargs:
            return self.scanner(filter=filter, **kwargs).count_rows()
        sql, post = _filter(filter, self.schema)
        if post is not None:
            return self.scanner(filter=filter).count_rows()
        return self._ds.count_rows(sql)

    def take(self, indices, columns=None) -> pa.Table:
        """Rows by position (0 to count_rows() - 1), in the order given, as pylance's."""
        if isinstance(indices, (pa.Array, pa.ChunkedArray)):
            indices = indices.to_pylist()
        indices = [int(i) for i in indices]
        if not indices:
            return self.schema.empty_table() if columns is None else self.schema.empty_table().select(columns)
        if any(i < 0 for i in indices):
            raise InvalidInputError(f"index {min(indices)} is out of range")
        columns, shape = taken_columns(self.schema, None if columns is None else list(columns))
        return shape(read(self._ds.take(indices, columns, positions=True)).read_all())

    def take_rows(self, row_ids, columns=None) -> pa.Table:
        """Rows by row id (stable row ids, or row addresses without them)."""
        if isinstance(row_ids, (pa.Array, pa.ChunkedArray)):
            row_ids = row_ids.to_pylist()
        columns, shape = taken_columns(self.schema, None if columns is None else list(columns))
        return shape(read(self._ds.take([int(r) for r in row_ids], columns)).read_all())

    _take_rows = take_rows

    def search(self, filter: str) -> dict:
        """`filter`'s matching row ids, with the index pages and fragments it read."""
        return self._ds.search(filter)

    def get_fragments(self, filter=None) -> List["LanceFragment"]:
        return [LanceFragment(self, fid, physical, live) for fid, physical, live in self._ds.fragments()]

    def get_fragment(self, fragment_id: int) -> Optional["LanceFragment"]:
        for f in self.get_fragments():
            if f.fragment_id == fragment_id:
                return f
        return None

    def list_indices(self) -> List[dict]:
        return [
            {"name": n, "type": t, "fields": cols, "segments": segs, "fragment_ids": set(frags)}
            for n, t, cols, segs, frags in self._ds.list_indices()
        ]

    @property
    def lance_schema(self) -> LanceSchema:
        """The schema as Lance records it: field ids, parents, unenforced key positions."""
        fields, metadata = _lancet.table_fields(self._ds)
        return LanceSchema(fields, metadata)

    def describe_indices(self) -> List["IndexDescription"]:
        """Every index by name, as pylance describes it: type URL and type, rows indexed
        (the live rows of the fragments its segments cover), keyed fields and their names,
        each segment, total size."""
        names = {}

        def walk(fields, prefix):
            for f in fields:
                names[f.id()] = prefix + f.name()
                walk(f.children(), prefix + f.name() + ".")

        walk(self.lance_schema.fields(), "")
        return [IndexDescription(d, [names.get(i, str(i)) for i in d["fields"]])
                for d in _lancet.describe_indices(self._ds)]

    # --- branches ------------------------------------------------------------------------
    def _main_uri(self) -> str:
        """The main line's location: this handle's, less `/tree/{branch}` when it was opened
        at a branch's own root."""
        branch = _lancet.branch_of(self._ds)
        suffix = f"/tree/{branch}"
        uri = self._uri.rstrip("/")
        return uri[: -len(suffix)] if branch and uri.endswith(suffix) else uri

    @property
    def stats(self) -> "LanceStats":
        """Statistics of this version: ``dataset_stats()`` (pylance's ``LanceStats``)."""
        return LanceStats(self)

    @property
    def branches(self) -> "Branches":
        """The table's branches: ``list()``, ``list_ordered()``, ``delete(name)``."""
        return Branches(self)

    def create_branch(self, branch: str, reference=None, storage_options=None) -> "LanceDataset":
        """Creates branch `branch` from `reference`, as pylance's: this handle's version when
        None, a version of this handle's branch (an int), a tag (a str), or
        ``(branch or None, version or None)`` (None: the main line; its latest). Returns the
        branch's first version."""
        _args.refuse("LanceDataset.create_branch", storage_options=storage_options)
        main = self._main_uri()
        if reference is None:
            parent, version = _lancet.branch_of(self._ds), self.version
        elif isinstance(reference, tuple):
            parent, version = reference
            parent = None if parent == "main" else parent
        elif isinstance(reference, str):
            tagged = _lancet.open(main, tag=reference)
            parent, version = _lancet.branch_of(tagged), tagged.version
        else:
            parent, version = _lancet.branch_of(self._ds), int(reference)
        native = _lancet.branch_create(main, branch, parent, version)
        return LanceDataset(f"{main}/tree/{branch}", _native=native)

    def drop_index(self, name: str):
        """Drops index `name` (every segment) in a new version, as pylance's; its files stay
        until cleanup. No index of that name raises :class:`lancet.errors.IndexNotFoundError`
        (a ``RuntimeError``, as pylance's) with nothing published."""
        self._moved(_lancet.drop_index(self._ds, name))

    def read_transaction(self, version: int) -> Optional[Transaction]:
        """The transaction that made `version`, as pylance reads it (its operation a
        :class:`LanceOperation` object), or None when the version records none. A version
        that does not exist raises :class:`lancet.errors.NotFoundError` (an ``OSError``, as
        pylance's)."""
        return from_native(_lancet.read_transaction(self._ds, int(version)))

    def get_transactions(self, recent_transactions=10) -> List[Optional[Transaction]]:
        """The transactions of this version and the ones before it, newest first: at least
        one, at most `recent_transactions`, stopping at a version cleanup removed (None for a
        version that records none), as pylance's."""
        return [from_native(t) for t in _lancet.get_transactions(self._ds, int(recent_transactions))]

    def verify(self, data: bool = False) -> dict:
        """Checks every invariant of this version (and with `data` every data file);
        raises the typed error of the first broken one."""
        version, fragments = self._ds.verify(data)
        return {"version": version, "fragments": fragments}

    # --- the table's maps: config, table metadata, schema and field metadata -------------
    def config(self) -> Dict[str, str]:
        """The table's config (Lance's settings, e.g. ``lance.auto_cleanup.*``)."""
        return dict(_lancet.maps(self._ds)[0])

    @property
    def metadata(self) -> Dict[str, str]:
        """The table metadata."""
        return dict(_lancet.maps(self._ds)[1])

    @property
    def schema_metadata(self) -> Dict[str, str]:
        """The schema's metadata."""
        return dict(_lancet.maps(self._ds)[2])

    def _update_map(self, target: str, values, replace: bool, field: Optional[str] = None) -> None:
        if not isinstance(values, dict):
            raise TypeError(f"values must be a dict of str to str or None, not {type(values).__name__}")
        entries = [(str(k), None if v is None else str(v)) for k, v in values.items()]
        self._moved(_lancet.update_map(self._ds, target, entries, bool(replace), field))

    def update_config(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """Sets (a value) or removes (None) config keys in one commit; with `replace` the
        config becomes exactly the keys given a value. Returns the config."""
        self._update_map("config", values, replace)
        return self.config()

    def delete_config_keys(self, keys: List[str]) -> None:
        """Removes config keys (a key the table does not have is ignored), in one commit."""
        self._update_map("config", {k: None for k in keys}, False)

    def update_metadata(self, values: Dict[str, Optional[str]], *, replace: bool = False) -> Dict[str, str]:
        """As :meth:`update_config`, for the table metadata. Returns it."""
        self._update_map("table", values, replace)
        return self.metadata

    def update_schema_metadata(self, values: Dict[str, Optional[str]], *,
                               replace: bool = False) -> Dict[str, str]:
        """As :meth:`update_config`, for the schema's metadata. Returns it."""
        self._update_map("schema", values, replace)
        return self.schema_metadata

    def replace_schema_metadata(self, new_metadata: Dict[str, str]):
        """Deprecated, as in pylance: :meth:`update_schema_metadata` with ``replace=True``."""
        warnings.warn("replace_schema_metadata is deprecated. "
                      "Use update_schema_metadata(metadata, replace=True) instead.",
                      DeprecationWarning, stacklevel=2)
        self.update_schema_metadata(new_metadata, replace=True)

    def update_field_metadata(self, field_updates: Dict[str, Dict[str, Optional[str]]], *,
                              replace: bool = False) -> None:
        """Sets or removes metadata keys of fields (by path, ``a.b``), every field in one
        commit. An unknown field raises with nothing committed."""
        if not isinstance(field_updates, dict):
            raise TypeError("field_updates must be a dict of field path to a dict")
        updates = [
            (str(path), [(str(k), None if v is None else str(v)) for k, v in values.items()])
            for path, values in field_updates.items()
        ]
        self._moved(_lancet.update_field_maps(self._ds, updates, bool(replace)))

    def replace_field_metadata(self, field_name: str, new_metadata: Dict[str, str]):
        """Deprecated, as in pylance: :meth:`update_field_metadata` with ``replace=True``."""
        warnings.warn("replace_field_metadata is deprecated. "
                      "Use update_field_metadata({field: metadata}, replace=True) instead.",
                      DeprecationWarning, stacklevel=2)
        self.update_field_metadata({field_name: new_metadata}, replace=True)

    # --- facts of this version ------------------------------------------------------------
    @property
    def max_field_id(self) -> int:
        """The highest field id the table has allocated (dropped columns' ids included)."""
        return _lancet.version_facts(self._ds)[0]

    @property
    def data_storage_version(self) -> str:
        """The data file version writes use when they name none."""
        return _lancet.data_storage_version(self._ds)

    def fragment_ids(self) -> "Bitmap":
        """The ids of this version's fragments, without an object per fragment."""
        return Bitmap(_lancet.version_facts(self._ds)[1])

    def get_version(self) -> dict:
        """This version: number, commit time and the summary pylance computes from the
        manifest (fragments, data files, deletion files, rows, bytes)."""
        summary, ms = _lancet.version_summary(self._ds)
        ns = ms * 1_000_000
        return {
            "version": self.version,
            "timestamp": _dt.datetime.fromtimestamp(ns / 1e9),
            "metadata": {k: str(v) for k, v in summary.items()},
        }

    @property
    def has_index(self) -> bool:
        return len(self.list_indices()) > 0

    def validate(self) -> None:
        """Checks this version's integrity; raises the typed error of the first broken rule."""
        self._ds.verify(False)

    # --- more ways to read and write, as pylance's ----------------------------------------
    def checkout_latest(self) -> None:
        """Moves this handle to the table's latest version."""
        self._moved(self._ds.latest())

    def insert(self, data, *, mode="append", **kwargs) -> None:
        """Writes `data` to this table (``mode`` as :func:`lancet.write_dataset`'s) and moves
        this handle to the new version."""
        from . import write_dataset

        new = write_dataset(data, self._uri, mode=mode, **kwargs)
        self._moved(new._ds)

    def to_pandas(self, columns=None, filter=None, limit=None, offset=None, nearest=None, batch_size=None,
                  batch_readahead=None, fragment_readahead=None, scan_in_order=None, *, prefilter=None,
                  with_row_id=None, with_row_address=None, use_stats=None, fast_search=None,
                  full_text_query=None, io_buffer_size=None, late_materialization=None,
                  blob_mode: str = "lazy", use_scalar_index=None, include_deleted_rows=None, order_by=None,
                  disable_scoring_autoprojection=None, **kwargs):
        """:meth:`to_table` as a pandas DataFrame (blob columns are not implemented, so
        `blob_mode` is taken at pylance's default only)."""
        _args.refuse_unless("LanceDataset.to_pandas", "blob_mode", blob_mode, "lazy")
        return self.to_table(
            columns, filter, limit, offset, nearest, batch_size, None, batch_readahead,
            fragment_readahead, scan_in_order, prefilter=prefilter, with_row_id=with_row_id,
            with_row_address=with_row_address, use_stats=use_stats, fast_search=fast_search,
            full_text_query=full_text_query, io_buffer_size=io_buffer_size,
            late_materialization=late_materialization, use_scalar_index=use_scalar_index,
            include_deleted_rows=include_deleted_rows, order_by=order_by,
            disable_scoring_autoprojection=disable_scoring_autoprojection, **kwargs,
        ).to_pandas()

    def slice(self, start: int, end: int, columns=None) -> pa.Table:
        """The rows at positions ``start`` (inclusive) to ``end`` (exclusive)."""
        if start < 0:
            raise ValueError(f"start must be non-negative, got {start}")
        if end < start:
            raise ValueError(f"end ({end}) must be >= start ({start})")
        return self.to_table(columns=columns, offset=start, limit=end - start)

    def sample(self, num_rows: int, columns=None, randomize_order: bool = True, **kwargs) -> pa.Table:
        """`num_rows` rows drawn at random without replacement (every row when the table
        has fewer), in position order unless `randomize_order`."""
        _args.no_extra("LanceDataset.sample", kwargs)
        total = self.count_rows()
        picked = sorted(random.sample(range(total), min(int(num_rows), total)))
        if randomize_order:
            random.shuffle(picked)
        return self.take(picked, columns=columns)

    def truncate_table(self) -> None:
        """Deletes every row in one commit; the schema, indexes and history stay."""
        self._moved(_lancet.truncate(self._ds))

    def shallow_clone(self, target_path, reference, storage_options=None, **kwargs) -> "LanceDataset":
        """A new table at `target_path` whose first version is version or tag `reference` of
        this one, its data read from here."""
        where = "LanceDataset.shallow_clone"
        _args.refuse(where, storage_options=storage_options)
        _args.no_extra(where, kwargs)
        if isinstance(reference, tuple):
            branch, version = reference
            _args.refuse(where, branch=branch)
            reference = version
        version = self.tags.get_version(reference) if isinstance(reference, str) else reference
        return LanceDataset(str(target_path), _native=_lancet.shallow_clone(self._ds, str(target_path), version))

    @staticmethod
    def drop(base_uri, storage_options=None, ignore_not_found=None) -> None:
        """Deletes the table at `base_uri` and everything under it (a local path: lancet
        deletes only what it can show is a table)."""
        _args.refuse("LanceDataset.drop", storage_options=storage_options)
        path = str(base_uri)
        if "://" in path and not path.startswith("file://"):
            raise UnsupportedError(f"LanceDataset.drop: lancet drops local tables only, not {path!r}")
        path = path[len("file://"):] if path.startswith("file://") else path
        path = os.path.expanduser(path)
        if not os.path.exists(path):
            if ignore_not_found:
                return
            raise NotFoundError(f"Not found: {path}")
        try:
            _lancet.open(path, version=None, tag=None, branch=None)
        except NotFoundError as e:
            raise InvalidInputError(f"{path!r} is not a Lance table root; nothing deleted ({e})") from e
        shutil.rmtree(path)

    # --- writing (each moves this handle to the new version, as pylance's) ----------------
    def delete(self, predicate, *, conflict_retries: int = 10,
               retry_timeout: _dt.timedelta = _dt.timedelta(seconds=30)) -> dict:
        """Deletes the rows `predicate` matches (planned again on the latest version after a
        conflict, 10 times within 30 s, as pylance's defaults; other values are refused)."""
        _args.refuse_unless("LanceDataset.delete", "conflict_retries", conflict_retries, 10)
        _args.refuse_unless("LanceDataset.delete", "retry_timeout", retry_timeout, _dt.timedelta(seconds=30))
        sql, post = _filter(predicate, self.schema)
        if post is not None:
            raise InvalidInputError(f"cannot translate the filter {predicate} to Lance SQL")
        native, c = self._ds.delete(sql)
        self._moved(native)
        return {"num_deleted_rows": c["rows"]}

    def update(self, updates: Dict[str, str], where=None, conflict_retries: int = 10,
               retry_timeout: _dt.timedelta = _dt.timedelta(seconds=30),
               data_storage_version=None) -> dict:
        """Sets `updates` (column to SQL expression) on the rows `where` matches (planned again
        on the latest version after a conflict, with pylance's default retries)."""
        _args.refuse_unless("LanceDataset.update", "conflict_retries", conflict_retries, 10)
        _args.refuse_unless("LanceDataset.update", "retry_timeout", retry_timeout, _dt.timedelta(seconds=30))
        _args.refuse("LanceDataset.update", data_storage_version=data_storage_version)
        sql, post = _filter(where, self.schema)
        if post is not None:
            raise InvalidInputError(f"cannot translate the filter {where} to Lance SQL")
        native, c = self._ds.update(list(updates.items()), sql)
        self._moved(native)
        return {"num_rows_updated": c["rows"]}

    def merge(self, data_obj, left_on: str, right_on: Optional[str] = None, schema=None) -> None:
        """Adds the columns of `data_obj` joined on `left_on` (this table's column) =
        `right_on` (its, `left_on` when None), in one Merge, as pylance's: a left join, so a
        row no key matches reads NULL (a NULL key matches a NULL key, and of repeated keys
        the last row wins, as Lance's hash join). A key column either side lacks, or a column
        both have, is a :class:`lancet.errors.SchemaMismatchError` (the ``OSError`` pylance
        raises)."""
        right = pa.table(to_reader(data_obj, schema))
        right_on = left_on if right_on is None else right_on
        if left_on in ("_rowid", "_rowaddr"):
            raise UnsupportedError(f"LanceDataset.merge: lancet does not implement joining on {left_on}")
        if left_on not in self.schema.names:
            raise SchemaMismatchError(f"Column {left_on} does not exist in the left side dataset")
        if right_on not in right.column_names:
            raise SchemaMismatchError(f"Column {right_on} does not exist in the right side dataset")
        for name in right.column_names:
            if name != right_on and name in self.schema.names:
                raise SchemaMismatchError(f"Column {name} exists in both sides of the dataset")
        side = Right(right, right_on)
        files = []
        for fid, _, _ in self._ds.fragments():
            left = read(self._ds.fragment_rows(fid, [left_on])).read_all().column(0)
            files.append((fid, _lancet.write_new_column_file(self._ds, fid, side.joined(left))))
        self._moved(_lancet.commit_new_columns(self._ds, schema_stream(side.columns.schema), files))

    def merge_insert(self, on: Union[str, Iterable[str]]) -> "MergeInsertBuilder":
        return MergeInsertBuilder(self, [on] if isinstance(on, str) else list(on))

    def add_columns(self, transforms, read_columns: Optional[List[str]] = None, reader_schema=None,
                    batch_size=None) -> None:
        """New columns: a dict of name to SQL expression, a pyarrow Field, list of Fields or
        Schema (columns reading NULL), or a function over batches of `read_columns` returning
        a batch of the new columns (every fragment's file written, then published)."""
        _args.refuse("LanceDataset.add_columns", reader_schema=reader_schema)
        if isinstance(transforms, pa.Field):
            transforms = [transforms]
        if isinstance(transforms, list) and all(isinstance(f, pa.Field) for f in transforms):
            transforms = pa.schema(transforms)
        if isinstance(transforms, pa.Schema):
            self._moved(self._ds.add_null_columns(schema_stream(transforms)))
        elif isinstance(transforms, dict):
            self._add_sql_columns([(str(k), str(v)) for k, v in transforms.items()])
        elif callable(transforms):
            from .backfill import backfill

            backfill(self, transforms, read_columns)
        else:
            raise InvalidInputError("add_columns takes a dict of SQL expressions, pyarrow fields or a function")

    def _add_sql_columns(self, exprs: List[tuple]) -> None:
        """Columns computed from SQL expressions over the others (values, comparisons,
        logic), every fragment's file written, then one Merge, as pylance's. A name the
        table has, or an expression over a column it lacks, is :class:`SchemaMismatchError`
        (pylance's ``OSError``); an expression reading no column, of no type (a bare NULL),
        or failing on a row publishes nothing."""
        where = "LanceDataset.add_columns"
        for name, _ in exprs:
            if name in self.schema.names:
                raise SchemaMismatchError(f"Column {name} already exists in the dataset")
        reads = _lancet.expression_columns(exprs)
        if not reads:
            raise InvalidInputError(f"{where}: the expressions read no column of the table")
        # the new fields' types and nullability, over no rows: an unknown column fails here,
        # as pylance's schema error (an OSError)
        try:
            schema = read(_lancet.project(self.schema.empty_table(), exprs)).schema
        except InvalidInputError as e:
            raise SchemaMismatchError(str(e)) from e
        for field in schema:
            if pa.types.is_null(field.type):
                raise InvalidInputError(f"{where}: {field.name} has no type (cast a NULL to one)")
        files = []
        for fid, _, _ in self._ds.fragments():
            new = read(_lancet.project(self._ds.fragment_rows(fid, reads), exprs)).read_all()
            files.append((fid, _lancet.write_new_column_file(self._ds, fid, new)))
        self._moved(_lancet.commit_new_columns(self._ds, schema_stream(schema), files))

    def drop_columns(self, columns: List[str]) -> None:
        self._moved(self._ds.drop_columns(list(columns)))

    def alter_columns(self, *alterations) -> None:
        parsed = []
        for a in alterations:
            if "path" not in a:
                raise InvalidInputError("each alteration names its column by 'path'")
            dtype = a.get("data_type")
            if dtype is not None:
                dtype = schema_stream(pa.schema([pa.field("t", dtype)]))
            parsed.append((a["path"], a.get("name"), a.get("nullable"), dtype))
        self._moved(self._ds.alter_columns(parsed))

    def create_scalar_index(self, column: str, index_type: str = "BTREE", name: Optional[str] = None,
                            *, replace: bool = True, train: bool = True, fragment_ids=None,
                            index_uuid=None, progress_callback=None, format_version=None,
                            document_granularity="row", **kwargs) -> None:
        """Builds the BTree `{column}_idx` over every fragment, as pylance's (with
        ``train=False`` an empty one, covering no fragment until ``optimize_indices``). Lance's
        other scalar index types are not implemented (``NotImplementedError``); with
        ``replace=False`` an existing index of that name is refused."""
        where = "LanceDataset.create_scalar_index"
        kind = str(getattr(index_type, "value", index_type)).upper()
        if kind != "BTREE":
            if kind in _LANCE_INDEX_TYPES:
                raise UnsupportedError(f"{where}: lancet builds BTREE indexes, not {kind}")
            raise InvalidInputError(f"{where}: unknown index type {index_type!r}")
        if name is not None and name != f"{column}_idx":
            raise UnsupportedError(f"{where}: lancet names a BTree {column}_idx, not {name!r}")
        _args.refuse(where, fragment_ids=fragment_ids, index_uuid=index_uuid,
                     progress_callback=progress_callback, format_version=format_version)
        _args.refuse_unless(where, "document_granularity",
                            str(getattr(document_granularity, "value", document_granularity)), "row")
        for key, value in kwargs.items():  # pylance's index parameters
            _args.refuse(where, **{key: value})
        if not replace and any(i["name"] == f"{column}_idx" for i in self.list_indices()):
            raise InvalidInputError(f"{where}: the index {column}_idx already exists (replace=False)")
        if train:
            self._moved(self._ds.create_scalar_index(column))
        else:  # an empty index, as pylance's: it covers no fragment until optimized
            segment = self._ds.train_btree_segment(column, [])
            self._moved(self._ds.commit_btree_segments(column, [segment]))

    def index_statistics(self, index_name: str) -> dict:
        """Deprecated, as pylance's: :meth:`LanceStats.index_stats` (``ds.stats``)."""
        warnings.warn("LanceDataset.index_statistics() is deprecated, use LanceDataset.stats.index_stats() instead",
                      DeprecationWarning)
        return self.stats.index_stats(index_name)

    def all_files(self) -> pa.RecordBatchReader:
        """Every file under the table's root (its primary store), as pylance's: ``base_uri``
        (dictionary), ``path`` relative to it, ``size_bytes``, ``last_modified`` (UTC)."""
        files = sorted(_lancet.all_files(self._ds))
        n = len(files)
        table = pa.table({
            "base_uri": pa.DictionaryArray.from_arrays(pa.array([0] * n, pa.int32()), pa.array([self.uri])),
            "path": pa.array([f[0] for f in files], pa.string()),
            "size_bytes": pa.array([f[1] for f in files], pa.int64()),
            "last_modified": pa.array([f[2] for f in files], pa.timestamp("us", tz="UTC")),
        }, schema=pa.schema([
            pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), False),
            pa.field("path", pa.string(), False), pa.field("size_bytes", pa.int64(), False),
            pa.field("last_modified", pa.timestamp("us", tz="UTC"), False)]))
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())

    def tracked_files(self, *, min_version: Optional[int] = None,
                      progress: Optional[Callable] = None) -> pa.RecordBatchReader:
        """Every file each version of the table (from `min_version`) references, as pylance's:
        ``version``, ``base_uri`` (dictionary), ``path`` relative to it and ``type``
        (``manifest``, ``transaction file``, ``data file``, ``deletion file``, ``index
        file``). `progress(done, total)` is called after each version. A fragment-tree
        version lists its fragments' files (its tree's own objects are not Lance files)."""
        rows = _lancet.tracked_files(self._ds, min_version, progress)
        bases = sorted({r[1] for r in rows})
        kinds = ["data file", "manifest", "deletion file", "transaction file", "index file"]
        shown = {b: b or self.uri for b in bases}
        schema = pa.schema([
            pa.field("version", pa.int64(), False),
            pa.field("base_uri", pa.dictionary(pa.int32(), pa.string()), False),
            pa.field("path", pa.string(), False),
            pa.field("type", pa.dictionary(pa.int8(), pa.string()), False)])
        table = pa.table({
            "version": pa.array([r[0] for r in rows], pa.int64()),
            "base_uri": pa.DictionaryArray.from_arrays(
                pa.array([bases.index(r[1]) for r in rows], pa.int32()),
                pa.array([shown[b] for b in bases], pa.string())),
            "path": pa.array([r[2] for r in rows], pa.string()),
            "type": pa.DictionaryArray.from_arrays(
                pa.array([kinds.index(r[3]) for r in rows], pa.int8()), pa.array(kinds, pa.string())),
        }, schema=schema)
        return pa.RecordBatchReader.from_batches(schema, table.to_batches())

    def prewarm_index(self, name: str, *, with_position: bool = False, index_segments=None) -> None:
        """Reads every page of the BTree `name` into the session's cache, as pylance's, so
        later searches read none. No index of that name is
        :class:`lancet.errors.IndexNotFoundError` (pylance's ``RuntimeError``); another type
        of index is not implemented."""
        where = "LanceDataset.prewarm_index"
        _args.refuse_unless(where, "with_position", with_position, False)
        _args.refuse(where, index_segments=index_segments)
        found = [d for d in self.describe_indices() if d.name == name]
        if not found:
            raise IndexNotFoundError(f"Lance index not found: name={name}")
        if found[0].index_type != "BTree":
            raise UnsupportedError(f"{where}: lancet prewarms BTree indexes, not {found[0].index_type}")
        _lancet.prewarm_index(self._ds, name)

    @property
    def optimize(self) -> "DatasetOptimizer":
        return DatasetOptimizer(self)

    def restore(self) -> None:
        """Makes this version the latest (a new version equal to it)."""
        self._moved(self._ds.restore())

    def cleanup_old_versions(self, older_than: Optional[_dt.timedelta] = None,
                             retain_versions: Optional[int] = None, *, delete_unverified: bool = False,
                             error_if_tagged_old_versions: bool = True, delete_rate_limit=None,
                             versions=None, delete_concurrency=None,
                             dry_run: bool = False) -> "CleanupStats":
        """Removes versions older than `older_than` (14 days by default) beyond the
        `retain_versions` newest, and the files only they use; tagged versions stay. The
        deletion rate and concurrency change no answer; `versions` is refused; ``dry_run``
        (lancet's) only reports."""
        _args.refuse("LanceDataset.cleanup_old_versions", versions=versions)
        older = (older_than if older_than is not None else _dt.timedelta(days=14)).total_seconds()
        report = self._ds.cleanup(older, retain_versions, delete_unverified, dry_run)
        return CleanupStats(report)

    @property
    def tags(self) -> "Tags":
        return Tags(self)

    def sql(self, sql: str) -> "SqlQueryBuilder":
        """A SQL query over this version, the table called ``dataset`` (or the name given to
        :meth:`SqlQueryBuilder.table_name`): ``ds.sql("SELECT count(*) FROM dataset WHERE
        id > 3").build().to_batch_records()``. DataFusion runs it over lancet's provider:
        filters lancet answers exactly are pushed into its scans (through a BTree where one
        covers the column)."""
        return SqlQueryBuilder(self, str(sql))

    def delta(self, compared_against: Optional[int] = None, *, begin_version: Optional[int] = None,
              end_version: Optional[int] = None) -> "DatasetDelta":
        if compared_against is not None:
            # as pylance: the older of the two versions begins the range
            begin_version, end_version = sorted((compared_against, self.version))
        if begin_version is None or end_version is None:
            raise InvalidInputError("give compared_against, or begin_version and end_version")
        return DatasetDelta(*self._ds.delta(begin_version, end_version))

    def convert_to_tree(self) -> None:
        """Moves the fragments into a fragment metadata tree (a new version)."""
        self._moved(self._ds.convert_to_tree())

    def flatten(self) -> None:
        """Lists every fragment in the manifest again (a new version pylance reads)."""
        self._moved(self._ds.flatten())

    @staticmethod
    def commit(base_uri, operation, read_version: Optional[int] = None, commit_lock=None,
               storage_options=None, enable_v2_manifest_paths=None, detached: bool = False,
               max_retries: int = 20, *, commit_message=None, enable_stable_row_ids=None,
               namespace_client=None, table_id=None, namespace_client_managed_versioning: bool = False,
               base_store_params=None,
               commit_timeout: _dt.timedelta = _dt.timedelta(seconds=1800)) -> "LanceDataset":
        """Commits `operation` (a :class:`LanceOperation`, or a :class:`Transaction` with its
        read version and properties) read at `read_version`, as pylance's: an Overwrite may
        create the table, `enable_stable_row_ids` applies to a table it creates, and
        `commit_message` is recorded in the transaction's properties
        (:data:`LANCE_COMMIT_MESSAGE_KEY`). pylance's other arguments are refused unless left
        at their default."""
        where = "LanceDataset.commit"
        properties = _merge_message_to_properties(commit_message, None)
        if isinstance(operation, Transaction):
            if commit_message is not None:
                raise InvalidInputError("commit_message is not supported when calling commit with a "
                                        "Transaction. Set the message on the transaction properties instead.")
            properties = dict(operation.transaction_properties or {}) or None
            if read_version is None:
                read_version = operation.read_version
            operation = operation.operation
        _args.refuse(where, commit_lock=commit_lock,
                     namespace_client=namespace_client, table_id=table_id,
                     base_store_params=base_store_params)
        if storage_options:
            _args.refuse(where, storage_options=storage_options)
        if enable_v2_manifest_paths is not None:
            _args.refuse_unless(where, "enable_v2_manifest_paths", enable_v2_manifest_paths, True)
        _args.refuse_unless(where, "detached", detached, False)
        _args.refuse_unless(where, "max_retries", max_retries, 20)
        _args.refuse_unless(where, "namespace_client_managed_versioning",
                            namespace_client_managed_versioning, False)
        _args.refuse_unless(where, "commit_timeout", commit_timeout, _dt.timedelta(seconds=1800))
        if enable_stable_row_ids is not None and not isinstance(operation, LanceOperation.Overwrite):
            _args.refuse(where, enable_stable_row_ids=enable_stable_row_ids)
        uri = str(base_uri)
        if isinstance(operation, LanceOperation.Append):
            if read_version is None:
                native = _lancet.open(uri)
            else:
                native = _lancet.open(uri, version=read_version)
            native = native.commit_append([f.to_bytes() for f in operation.fragments], properties)
            return LanceDataset(uri, _native=native)
        if isinstance(operation, LanceOperation.Overwrite):
            if operation.initial_bases:
                _args.refuse(where, initial_bases=operation.initial_bases)
            new_schema = operation.new_schema
            if isinstance(new_schema, LanceSchema):
                new_schema = new_schema.to_pyarrow()
            fragments = [f.to_bytes() for f in operation.fragments]
            try:
                existing = _lancet.open(uri)
            except NotFoundError:
                existing = None
            if existing is None:
                stable = operation.enable_stable_row_ids if enable_stable_row_ids is None else enable_stable_row_ids
                native = _lancet.create_from_fragments(
                    uri, schema_stream(new_schema), fragments, operation.layout,
                    bool(stable), operation.data_storage_version or "stable", properties)
            else:
                # as pylance: every row replaced, whatever version it was read at
                native = existing.commit_overwrite(schema_stream(new_schema), fragments,
                                                   operation.data_storage_version, properties)
            return LanceDataset(uri, _native=native)
        if not isinstance(operation, LanceOperation.BaseOperation):
            raise TypeError(f"{where}: operation must be a LanceOperation or a Transaction, "
                            f"not {type(operation).__name__}")
        name, args = to_native(operation)
        native = _lancet.open(uri) if read_version is None else _lancet.open(uri, version=read_version)
        try:
            committed = _lancet.commit_operation(native, name, args, properties)
        except InvalidInputError as e:
            if isinstance(e, OSError):
                raise
            # a commit refused as Lance's commit refuses it is pylance's OSError too
            raise InvalidCommitError(*e.args) from e
        return LanceDataset(uri, _native=committed)


class MergeInsertBuilder:
    """pylance's merge_insert builder: what happens to matched rows, unmatched source rows
    and target rows no source row matches; `execute(data)` runs it in one commit."""

    def __init__(self, dataset: LanceDataset, on: List[str]):
        self._dataset = dataset
        self._on = on
        self._matched = "nothing"
        self._condition = None
        self._insert = False
        self._delete_by_source = False
        self._by_source_filter = None
        self._use_index = True

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeInsertBuilder":
        self._matched, self._condition = "update_all", condition
        return self

    def when_matched_delete(self) -> "MergeInsertBuilder":
        self._matched, self._condition = "delete", None
        return self

    def when_matched_fail(self) -> "MergeInsertBuilder":
        self._matched, self._condition = "fail", None
        return self

    def when_not_matched_insert_all(self) -> "MergeInsertBuilder":
        self._insert = True
        return self

    def when_not_matched_by_source_delete(self, expr: Optional[str] = None) -> "MergeInsertBuilder":
        self._delete_by_source, self._by_source_filter = True, expr
        return self

    def use_index(self, use_index: bool) -> "MergeInsertBuilder":
        self._use_index = use_index
        return self

    def conflict_retries(self, max_retries: int) -> "MergeInsertBuilder":
        """Lance's default (10) only: the merge is planned again after a conflict that many
        times."""
        _args.refuse_unless("MergeInsertBuilder.conflict_retries", "max_retries", max_retries, 10)
        return self

    def retry_timeout(self, timeout) -> "MergeInsertBuilder":
        """Lance's default (30 s) only."""
        _args.refuse_unless("MergeInsertBuilder.retry_timeout", "timeout", timeout, _dt.timedelta(seconds=30))
        return self

    def execute(self, data_obj, *, schema: Optional[pa.Schema] = None) -> dict:
        native, c = self._dataset._ds.merge_insert(
            self._on, to_reader(data_obj, schema), self._matched, self._condition, self._insert,
            self._delete_by_source, self._by_source_filter, self._use_index)
        self._dataset._moved(native)
        return {
            "num_inserted_rows": c["num_inserted_rows"],
            "num_updated_rows": c["num_updated_rows"],
            "num_deleted_rows": c["num_deleted_rows"],
        }

    def execute_batches(self, data_obj, *, schema: Optional[pa.Schema] = None) -> dict:
        """:meth:`execute` over a stream of batches, as pylance's."""
        return self.execute(data_obj, schema=schema)

    def write_mode(self, mode: str) -> "MergeInsertBuilder":
        """How merged rows are written: ``"auto"`` and ``"rewrite_rows"`` (lancet deletes the
        matched rows and writes whole rows in new fragments); ``"rewrite_columns"`` is not
        implemented."""
        if mode not in ("auto", "rewrite_rows", "rewrite_columns"):
            raise InvalidInputError(f"write_mode must be auto, rewrite_rows or rewrite_columns, not {mode!r}")
        if mode == "rewrite_columns":
            raise UnsupportedError("MergeInsertBuilder.write_mode: lancet does not implement "
                                   "rewrite_columns (matched rows are rewritten whole)")
        return self


class DatasetOptimizer:
    def __init__(self, dataset: LanceDataset):
        self._dataset = dataset

    def compact_files(self, *, target_rows_per_fragment: Optional[int] = None,
                      max_rows_per_group: Optional[int] = None, max_bytes_per_file=None,
                      materialize_deletions: Optional[bool] = None,
                      materialize_deletions_threshold: Optional[float] = None,
                      defer_index_remap: Optional[bool] = None,
                      num_threads=None, batch_size=None, compaction_mode=None,
                      binary_copy_read_batch_bytes=None, max_source_fragments=None, max_source_rows=None,
                      max_source_bytes=None, excluded_fragment_ids=None,
                      data_storage_version=None) -> dict:
        """Rewrites small fragments (and those with many deletions) into fewer, as pylance's;
        thread count, batch size and read sizes change no answer; the fragment-selection
        limits and other file versions are refused."""
        _args.refuse("DatasetOptimizer.compact_files", max_bytes_per_file=max_bytes_per_file,
                     compaction_mode=compaction_mode, max_source_fragments=max_source_fragments,
                     max_source_rows=max_source_rows, max_source_bytes=max_source_bytes,
                     excluded_fragment_ids=excluded_fragment_ids,
                     data_storage_version=data_storage_version)
        # unset: Lance 14.0.2's CompactionOptions defaults
        native, c = self._dataset._ds.compact(
            1024 * 1024 if target_rows_per_fragment is None else target_rows_per_fragment,
            1024 if max_rows_per_group is None else max_rows_per_group,
            True if materialize_deletions is None else materialize_deletions,
            0.1 if materialize_deletions_threshold is None else materialize_deletions_threshold,
            bool(defer_index_remap))
        self._dataset._moved(native)
        return {"fragments_removed": c["fragments_removed"], "fragments_added": c["fragments_added"],
                "version": c["version"]}

    def optimize_indices(self, **kwargs) -> None:
        """Extends every BTree over the fragments it misses, as pylance's: merged with the
        newest segment into one (`num_indices_to_merge` unset), with the newest N
        (``num_indices_to_merge=N``), or a new segment (``0``). `index_names` (None: every
        index) and `retrain` are refused otherwise."""
        where = "DatasetOptimizer.optimize_indices"
        merge = kwargs.pop("num_indices_to_merge", None)
        merge = 1 if merge is None else int(merge)
        if merge < 0:
            raise InvalidInputError(f"{where}: num_indices_to_merge must be at least 0")
        _args.refuse(where, index_names=kwargs.pop("index_names", None))
        if kwargs.pop("retrain", False):
            _args.refuse(where, retrain=True)
        _args.no_extra(where, kwargs)
        self._dataset._moved(self._dataset._ds.optimize_indices(merge))


class Tags:
    def __init__(self, dataset: LanceDataset):
        self._dataset = dataset

    def list(self) -> Dict[str, dict]:
        return {name: {"version": v} for name, v in self._dataset._ds.tags_list()}

    def get_version(self, tag: str) -> int:
        tags = self.list()
        if tag not in tags:
            from .errors import NotFoundError

            raise NotFoundError(f"tag {tag!r} not found")
        return tags[tag]["version"]

    def create(self, tag: str, version: Optional[int] = None) -> None:
        self._dataset._ds.tags_change("create", tag, version)

    def update(self, tag: str, version: Optional[int] = None) -> None:
        self._dataset._ds.tags_change("update", tag, version)

    def delete(self, tag: str) -> None:
        self._dataset._ds.tags_change("delete", tag)


class LanceStats:
    """Statistics of a version (pylance's ``LanceStats``)."""

    def __init__(self, dataset: LanceDataset):
        self._dataset = dataset

    def dataset_stats(self, max_rows_per_group: int = 1024) -> dict:
        """Deleted rows, fragments, and fragments holding fewer than `max_rows_per_group` rows
        (files too small for one row group), as pylance counts them (counts an old writer left
        unknown read from the files)."""
        fragments = self._dataset._ds.fragments()
        return {
            "num_deleted_rows": sum(p - (live if live is not None else p) for _, p, live in fragments),
            "num_fragments": len(fragments),
            "num_small_files": sum(1 for _, p, _ in fragments if p < max_rows_per_group),
        }

    def index_stats(self, index_name: str) -> dict:
        """Statistics of index `index_name`, as pylance's: its type, each segment's smallest
        and largest value and pages, and the fragments and live rows it covers and does not
        (rows of fragments its segments cover, per segment). No index of that name is a
        ``KeyError``."""
        ds = self._dataset
        described = [d for d in ds.describe_indices() if d.name == index_name]
        if not described:
            raise KeyError(f'Index "{index_name}" not found')
        index = described[0]
        live = {fid: (physical if rows is None else rows) for fid, physical, rows in ds._ds.fragments()}
        bounds = _lancet.btree_statistics(ds._ds, index_name) if index.index_type == "BTree" else {}
        segments, per_delta, covered = [], [], set()
        for s in index.segments:
            ids = [fid for fid in s.fragment_ids if fid in live]
            per_delta.append(sum(live[fid] for fid in ids))
            covered.update(ids)
            if s.uuid in bounds and s.fragment_ids:
                low, high, pages = bounds[s.uuid]
                segments.append({"min": low, "max": high, "num_pages": pages})
            else:  # a segment covering nothing (not trained yet) has nothing to describe
                segments.append({})
        created = [s.created_at for s in index.segments if s.created_at is not None]
        indexed_rows = sum(per_delta)
        return {
            # as pylance names it: the type of a trained segment, "N/A" while none is
            "index_type": index.index_type if any(segments) else "N/A",
            "name": index_name,
            "num_indices": len(segments),
            "num_segments": len(segments),
            "indices": segments,
            "segments": [dict(s) for s in segments],
            "num_indexed_fragments": len(covered),
            "num_indexed_rows": indexed_rows,
            "num_unindexed_fragments": len(live) - len(covered),
            "num_unindexed_rows": ds.count_rows() - indexed_rows,
            "num_indexed_rows_per_delta": per_delta,
            "updated_at_timestamp_ms": (int(max(created).timestamp() * 1000) if created else None),
        }

    def data_stats(self):
        raise UnsupportedError("LanceStats.data_stats: lancet does not implement per-field data statistics")


class Branches:
    """A table's branches (pylance's ``Branches``)."""

    def __init__(self, dataset: LanceDataset):
        self._dataset = dataset

    def list(self) -> Dict[str, dict]:
        """Every branch by name: pylance's ``Branch`` fields (``parent_branch``,
        ``branch_identifier``, ``parent_version``, ``create_at``, ``manifest_size``,
        ``metadata``)."""
        out = {}
        for b in _lancet.branch_list(self._dataset._main_uri()):
            name = b.pop("name")
            out[name] = b
        return out

    def list_ordered(self, order: Optional[str] = None) -> List[tuple]:
        """The branches by creation time (``"asc"``, the default, or ``"desc"``), then name."""
        if order not in (None, "asc", "desc"):
            raise InvalidInputError(f"order must be 'asc' or 'desc', not {order!r}")
        items = sorted(self.list().items(), key=lambda kv: (kv[1]["create_at"], kv[0]))
        return items[::-1] if order == "desc" else items

    def delete(self, branch: str) -> None:
        """Deletes `branch` and its versions, as pylance's (refused while another branch forks
        from it or a tag names one of its versions)."""
        _lancet.branch_delete(self._dataset._main_uri(), branch)

    def replace_metadata(self, branch: str, metadata: Dict[str, str]) -> None:
        raise UnsupportedError("Branches.replace_metadata: lancet does not implement changing a branch's metadata")


class CleanupStats:
    def __init__(self, report: dict):
        self.bytes_removed = report["bytes_removed"]
        self.old_versions = report["old_versions"]
        self.objects_removed = report["objects_removed"]
        self.removed_versions = report["removed_versions"]

    def __repr__(self) -> str:
        return f"CleanupStats(bytes_removed={self.bytes_removed}, old_versions={self.old_versions})"


class DatasetDelta:
    def __init__(self, inserted, updated, deleted):
        self._inserted, self._updated, self._deleted = inserted, updated, deleted

    def get_inserted_rows(self) -> pa.RecordBatchReader:
        return read(self._inserted)

    def get_updated_rows(self) -> pa.RecordBatchReader:
        return read(self._updated)

    def get_deleted_row_ids(self) -> pa.RecordBatchReader:
        t = pa.table({"_rowid": pa.array(self._deleted, pa.uint64())})
        return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())


# pylance 14.0.2's LanceDataset names lancet does not implement. Each exists and raises
# UnsupportedError (a NotImplementedError) naming the feature, never AttributeError:
# a ported script stops at the call with the reason, not at a missing name.
_NOT_IMPLEMENTED = {
    "add_bases": "adding base paths to a table",
    "base_paths": "listing a table's base paths",
    "centroids": "vector indexes (IVF centroids)",
    "commit_batch": "committing several transactions at once",
    "commit_existing_index_segments": "committing index segments built elsewhere (lancet: commit_btree_segments)",
    "create_index": "vector and full-text indexes (lancet builds BTree indexes: create_scalar_index)",
    "create_index_uncommitted": "vector and full-text indexes",
    "deep_clone": "deep clones (lancet makes shallow clones: shallow_clone)",
    "explain_cleanup_old_versions": "explaining a cleanup (lancet: cleanup_old_versions(dry_run=True))",
    "get_ivf_model": "vector indexes (IVF models)",
    "initialize_mem_wal": "the MemWAL",
    "io_stats_incremental": "I/O statistics (lancet: scan_stats)",
    "io_stats_snapshot": "I/O statistics (lancet: scan_stats)",
    "latest_storage_options": "storage options",
    "mem_wal_index_details": "the MemWAL",
    "mem_wal_writer": "the MemWAL",
    "merge_existing_index_segments": "merging index segments built elsewhere",
    "merge_index_metadata": "merging index metadata",
    "migrate_manifest_paths_v2": "migrating manifest naming",
    "new_file_session": "file sessions",
    "read_blob_ranges": "blob columns",
    "read_blobs": "blob columns",
    "remap_row_addrs": "remapping row addresses",
    "take_blobs": "blob columns",
}

_NOT_IMPLEMENTED_PROPERTIES = {
    "initial_storage_options": "storage options",
    "storage_options_accessor": "storage options",
}


def _unsupported(name: str, feature: str, owner: str = "LanceDataset") -> UnsupportedError:
    return UnsupportedError(f"{owner}.{name}: lancet does not implement {feature}")


def _not_implemented(name: str, feature: str, owner: str = "LanceDataset"):
    def method(self, *args, **kwargs):
        raise _unsupported(name, feature, owner)

    method.__name__ = name
    method.__qualname__ = f"{owner}.{name}"
    method.__doc__ = f"Not implemented by lancet: {feature}. Raises UnsupportedError."
    return method


def _not_implemented_property(name: str, feature: str) -> property:
    def get(self):
        raise _unsupported(name, feature)

    return property(get, doc=f"Not implemented by lancet: {feature}. Raises UnsupportedError.")


for _name, _feature in _NOT_IMPLEMENTED.items():
    setattr(LanceDataset, _name, _not_implemented(_name, _feature))
for _name, _feature in _NOT_IMPLEMENTED_PROPERTIES.items():
    setattr(LanceDataset, _name, _not_implemented_property(_name, _feature))

# pylance's MergeInsertBuilder names lancet does not implement, and what each is
_MERGE_NOT_IMPLEMENTED = {
    "analyze_plan": "merge plans (lancet's merge is one hash join: see docs)",
    "analyze_plan_batches": "merge plans",
    "explain_plan": "merge plans",
    "execute_uncommitted": "staged merges",
    "execute_uncommitted_batches": "staged merges",
    "data_storage_version": "a merge writing another file version than its table's",
    "target_bases": "writing to other base paths",
    "target_all_bases": "writing to other base paths",
    "mark_sstables_as_compacted": "the MemWAL",
}
for _name, _feature in _MERGE_NOT_IMPLEMENTED.items():
    setattr(MergeInsertBuilder, _name, _not_implemented(_name, _feature, "MergeInsertBuilder"))


def _from_pydantic_model(cls, *args, **kwargs):
    raise _unsupported("from_pydantic_model", "schemas from pydantic models")


LanceDataset.from_pydantic_model = classmethod(_from_pydantic_model)
