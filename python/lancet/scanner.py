"""A scan of a table (pylance's ``LanceScanner``): the projection and filter pushed to lancet,
what lancet cannot answer applied after it by pyarrow.

Columns are names (the table's, ``_rowid``, ``_rowaddr``, ``_rowoffset``,
``_row_created_at_version``, ``_row_last_updated_at_version``) or, as a dict,
SQL expressions by output name (``{"b2": "b * 2"}``) that the native half evaluates per batch
with lancet-filter's evaluator. ``_rowoffset`` is a row's position among the table's live
rows (what ``take`` takes), computed from its address and each fragment's deletions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds

from . import _lancet
from ._data import read
from ._substrait import Unsupported, to_sql
from .errors import InvalidInputError
from .scan_stats import Counting, reporting

if TYPE_CHECKING:
    from .dataset import LanceDataset

__all__ = ["LanceScanner", "filter_parts"]

# columns every table has without storing them
_ROW_COLUMNS = ("_rowid", "_rowaddr", "_rowoffset", "_row_last_updated_at_version", "_row_created_at_version")
# those the native half reads when named among the columns (the others by flags)
_NAMED_ROW_COLUMNS = ("_row_last_updated_at_version", "_row_created_at_version")
# those a take reads when named among the columns
_TAKEN_ROW_COLUMNS = ("_rowid", "_rowaddr") + _NAMED_ROW_COLUMNS


def _parts(name: str) -> List[str]:
    """`name` split at the dots outside backticks, backticks removed (lancet-read's
    ``paths::parts``)."""
    out, quoted = [""], False
    for c in name:
        if c == "`":
            quoted = not quoted
        elif c == "." and not quoted:
            out.append("")
        else:
            out[-1] += c
    return out


def field_at(schema: pa.Schema, name: str) -> Optional[pa.Field]:
    """The field a scan's column `name` reads: a top-level column, or a field inside a struct
    column by its path (``s.x``, ```outer field`.`inner field```), named as asked; ``None``
    when the table has none."""
    if name in schema.names:
        return schema.field(name)
    top, *children = _parts(name)
    if top not in schema.names:
        return None
    field = schema.field(top)
    for child in children:
        if not pa.types.is_struct(field.type) or field.type.get_field_index(child) < 0:
            return None
        field = field.type.field(child)
    return pa.field(name, field.type, True)


def _pruned(array, paths: List[List[str]]):
    """`array` (a struct column) with only the fields `paths` name (an empty path: all)."""
    if any(not p for p in paths) or not pa.types.is_struct(array.type):
        return array
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    children, names = [], []
    for i in range(array.type.num_fields):
        name = array.type.field(i).name
        below = [p[1:] for p in paths if p[0] == name]
        if below:
            children.append(_pruned(array.field(i), below))
            names.append(name)
    return pa.StructArray.from_arrays(children, names=names, mask=array.is_null())


def taken_columns(schema: pa.Schema, columns: Optional[List[str]]):
    """For a take of `columns` (some inside struct columns), the top-level columns to read
    and how to shape what was read: as pylance's take, a field inside a struct column comes
    back as its struct with only the fields asked for."""
    if columns is None or all(c in schema.names or c in _TAKEN_ROW_COLUMNS for c in columns):
        return columns, lambda t: t
    paths: Dict[str, List[List[str]]] = {}
    for c in columns:
        if c in schema.names:
            paths.setdefault(c, []).append([])
        elif field_at(schema, c) is not None:
            top, *children = _parts(c)
            paths.setdefault(top, []).append(children)
        else:
            raise InvalidInputError(f"the table has no column {c!r}")

    def shape(t: pa.Table) -> pa.Table:
        return pa.table({top: _pruned(t.column(top), below) for top, below in paths.items()})

    return list(paths), shape


def filter_parts(filter, schema: pa.Schema) -> Tuple[Optional[str], Optional[pc.Expression]]:
    """A filter as (Lance SQL pushed down, pyarrow expression applied after): a pyarrow
    Expression over the table's `schema` is translated from its Substrait form
    (:mod:`lancet._substrait`), or applied by pyarrow when some part has no translation."""
    if filter is None:
        return None, None
    if isinstance(filter, str):
        return filter, None
    if isinstance(filter, pc.Expression):
        try:
            return to_sql(filter, schema), None
        except Unsupported:
            return None, filter
    raise InvalidInputError(f"a filter is SQL text or a pyarrow Expression, not {type(filter).__name__}")


class LanceScanner(pa_ds.Scanner):
    """A scan: the projection and filter pushed to lancet, the rest applied by pyarrow."""

    def __init__(self, dataset: "LanceDataset", columns, filter, limit, offset, with_row_id,
                 with_row_address, fragments, batch_size=None, include_deleted=False,
                 stats_callback=None):
        self._dataset = dataset
        self._include_deleted = include_deleted
        self._stats_callback = stats_callback
        if batch_size is not None and int(batch_size) <= 0:
            raise InvalidInputError(f"batch_size must be positive, not {batch_size}")
        self._batch_size = None if batch_size is None else int(batch_size)
        names = dataset.schema.names
        # a dict projection: the scan reads the columns its expressions use, then evaluates
        self._exprs: Optional[List[Tuple[str, str]]] = None
        if isinstance(columns, dict):
            self._exprs = [(str(k), str(v)) for k, v in columns.items()]
            self._exprs += [(c, c) for c, on in (("_rowid", with_row_id), ("_rowaddr", with_row_address)) if on]
            columns = _lancet.expression_columns(self._exprs)
            with_row_id = with_row_address = False
        self._offset_at: Optional[int] = None  # where `_rowoffset` goes among the columns
        self._drop_address = False
        if columns is not None:
            columns = list(columns)
            for c in columns:
                if c not in _ROW_COLUMNS and field_at(dataset.schema, c) is None:
                    raise InvalidInputError(f"the table has no column {c!r}")
            if "_rowoffset" in columns:
                self._offset_at = columns.index("_rowoffset")
                columns.remove("_rowoffset")
                self._drop_address = not with_row_address and "_rowaddr" not in columns
                with_row_address = True
            if "_rowid" in columns:
                with_row_id = True
            if "_rowaddr" in columns:
                with_row_address = True
        self._columns = columns
        self._sql, self._post = filter_parts(filter, dataset.schema)
        self._limit, self._offset = limit, offset
        self._with_row_id, self._with_row_address = with_row_id, with_row_address
        self._fragments = fragments

    def _native(self, columns, counters):
        return self._dataset._ds.scan(
            columns=columns, filter=self._sql, limit=self._limit, offset=self._offset,
            with_row_id=self._with_row_id, with_row_address=self._with_row_address,
            fragments=self._fragments, include_deleted=self._include_deleted, counters=counters,
        )

    def _requested(self):
        if self._columns is None:
            return None
        return [c for c in self._columns if c not in _ROW_COLUMNS or c in _NAMED_ROW_COLUMNS]

    def _rows(self, counters=None) -> pa.RecordBatchReader:
        """The rows the scan reads, in the order of `_columns` (then `_rowid`, `_rowaddr`),
        before `_rowoffset` and expressions are computed (counted into `counters`, the
        handle's counters when `None`)."""
        if self._post is None:
            reader = read(self._native(self._requested(), counters))
            if self._columns is not None and self._columns != reader.schema.names:
                wanted = self._columns + [n for n in reader.schema.names if n not in self._columns]
                schema = pa.schema([reader.schema.field(n) for n in wanted])
                return pa.RecordBatchReader.from_batches(
                    schema, (b.select(wanted) for b in reader))
            return reader
        # a filter lancet cannot translate: the rows read, pyarrow filters, then offset,
        # limit and projection (a limit counts matching rows)
        if self._limit is not None or self._offset:
            t = self._filtered_reader(counters).read_all()
            t = t.slice(self._offset or 0, self._limit if self._limit is not None else None)
            return pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
        return self._filtered_reader(counters)

    def _filtered_reader(self, counters) -> pa.RecordBatchReader:
        named = [c for c in self._columns or () if c in _NAMED_ROW_COLUMNS]
        reader = read(self._dataset._ds.scan(
            columns=self._dataset.schema.names + named if named else None, filter=None,
            with_row_id=self._with_row_id,
            with_row_address=self._with_row_address, fragments=self._fragments,
            include_deleted=self._include_deleted, counters=counters))
        wanted = self._columns if self._columns is not None else reader.schema.names
        extra = [n for n in reader.schema.names if n in _ROW_COLUMNS and n not in wanted]
        schema = pa.schema([reader.schema.field(n) for n in wanted + extra])

        def batches():
            for b in reader:
                t = pa.Table.from_batches([b]).filter(self._post)
                for out in t.select(wanted + extra).to_batches():
                    yield out

        return pa.RecordBatchReader.from_batches(schema, batches())

    def _shaped(self, reader: pa.RecordBatchReader) -> pa.RecordBatchReader:
        """`reader`'s rows as the caller asked: `_rowoffset` placed, expressions evaluated."""
        if self._offset_at is not None:
            offsets = _RowOffsets(self._dataset)  # reads the fragment list when first asked
            at, drop = self._offset_at, self._drop_address
            field = pa.field("_rowoffset", pa.uint64(), True)

            def placed(schema_or_batch, values=None):
                names = schema_or_batch.names if isinstance(schema_or_batch, pa.Schema) else \
                    schema_or_batch.schema.names
                i = min(at, len(names))
                if values is None:
                    out = schema_or_batch.insert(i, field)
                else:
                    out = schema_or_batch.add_column(i, field, values)
                if not drop:
                    return out
                i = out.schema.get_field_index("_rowaddr") if values is not None else \
                    out.get_field_index("_rowaddr")
                return out.remove_column(i) if values is not None else out.remove(i)

            schema = placed(reader.schema)
            reader = pa.RecordBatchReader.from_batches(
                schema, (placed(b, offsets.of(b.column("_rowaddr"))) for b in reader))
        if self._exprs is not None:
            reader = read(_lancet.project(reader, self._exprs))
        return reader

    def to_reader(self) -> pa.RecordBatchReader:
        """The rows as a reader; with a `scan_stats_callback`, the callback gets the scan's
        :class:`~lancet.scan_stats.ScanStatistics` once the last batch is read."""
        if self._stats_callback is None:
            return self._shaped(self._rows())
        counting = Counting()
        return reporting(self._shaped(self._rows(counting.counters)), counting, self._stats_callback)

    def to_table(self) -> pa.Table:
        return self.to_reader().read_all()

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as batches, none longer than the scan's `batch_size` when it has one."""
        if self._batch_size is None:
            return iter(self.to_reader())
        size = self._batch_size
        return (b.slice(i, size) for b in self.to_reader() for i in range(0, max(b.num_rows, 1), size)
                if b.num_rows)

    def scan_batches(self):
        return self.to_batches()

    def count_rows(self) -> int:
        if self._post is None and self._limit is None and not self._offset and self._fragments is None \
                and not self._include_deleted:
            return self._dataset._ds.count_rows(self._sql)
        return self.to_table().num_rows

    def head(self, num_rows: int) -> pa.Table:
        return self.to_table().slice(0, num_rows)

    def explain_plan(self, verbose: bool = False) -> str:
        """lancet's plan of this scan as text (:mod:`lancet.plan`): what it reads, which
        BTree answers each filter column on how many fragments; nothing is read but the
        table's manifest and index list."""
        from .plan import explain

        return explain(self, verbose)

    def analyze_plan(self, count_rows: bool = False) -> str:
        """The plan of :meth:`explain_plan` with what running the scan read: rows, batches,
        time, index pages, the fragments each index answered for, fragments read directly.
        With `count_rows` the rows are counted without reading columns; a limit or offset
        with it is refused, as pylance refuses it."""
        from .plan import analyze

        if count_rows and (self._limit is not None or self._offset):
            raise InvalidInputError("Cannot use limit/offset with aggregate. Apply limit to the result instead.")
        return analyze(self, count_rows)

    @property
    def projected_schema(self) -> pa.Schema:
        """The schema of the rows this scan returns (nothing is read)."""
        schema = self._dataset.schema
        names = self._columns if self._columns is not None else schema.names
        extra = {"_rowid": self._with_row_id, "_rowaddr": self._with_row_address}
        fields = [field_at(schema, n) for n in names if n not in extra]
        wanted = [n for n in names if n not in extra]
        for name, on in extra.items():
            if on:
                fields.append(pa.field(name, pa.uint64(), True))
                wanted.append(name)
        if self._columns is not None:
            order = self._columns + [n for n in wanted if n not in self._columns]
            by_name = {f.name: f for f in fields}
            fields = [by_name[n] for n in order]
        return self._shaped(pa.RecordBatchReader.from_batches(pa.schema(fields), [])).schema

    @property
    def dataset_schema(self) -> pa.Schema:
        return self._dataset.schema


class _RowOffsets:
    """Each row's position among the table's live rows, in the order a full scan returns
    them (fragment by fragment, each in offset order), from its row address: the live rows
    of the fragments before it, plus its rank among its fragment's live rows. A fragment
    with deletions has its live offsets read once (its row addresses, no column data)."""

    def __init__(self, dataset: "LanceDataset"):
        self._dataset = dataset
        self._start: Dict[int, int] = {}
        self._partial: Dict[int, bool] = {}
        self._live: Dict[int, pa.Array] = {}
        self._listed = False

    def _list(self) -> None:
        self._listed = True
        at = 0
        for f in self._dataset.get_fragments():
            live = f.count_rows()
            self._start[f.fragment_id] = at
            self._partial[f.fragment_id] = live < f.physical_rows
            at += live

    def _live_offsets(self, fragment: int) -> pa.Array:
        if fragment not in self._live:
            t = read(self._dataset._ds.scan(columns=[], filter=None, with_row_address=True,
                                            fragments=[fragment])).read_all()
            self._live[fragment] = pc.bit_wise_and(t.column("_rowaddr").combine_chunks(),
                                                   pa.scalar(0xFFFFFFFF, pa.uint64()))
        return self._live[fragment]

    def of(self, addresses: pa.Array) -> pa.Array:
        addresses = addresses.cast(pa.uint64())
        if len(addresses) == 0:
            return pa.array([], pa.uint64())
        if not self._listed:
            self._list()
        fragments = pc.shift_right(addresses, pa.scalar(32, pa.uint64()))
        local = pc.bit_wise_and(addresses, pa.scalar(0xFFFFFFFF, pa.uint64()))
        positions, values = [], []
        for fid in pc.unique(fragments).to_pylist():
            rows = pc.indices_nonzero(pc.equal(fragments, pa.scalar(fid, pa.uint64())))
            offsets = pc.take(local, rows)
            if self._partial[fid]:
                offsets = pc.index_in(offsets, value_set=self._live_offsets(fid)).cast(pa.uint64())
            positions.append(rows)
            values.append(pc.add(offsets, pa.scalar(self._start[fid], pa.uint64())))
        if len(values) == 1:
            return values[0]
        order = pc.sort_indices(pa.concat_arrays(positions))
        return pc.take(pa.concat_arrays(values), order)
