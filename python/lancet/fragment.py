"""The distributed write: fragments written anywhere, committed once.

:class:`FragmentMetadata` is a fragment's Lance ``DataFragment`` protobuf (picklable, so
Ray tasks return it); :func:`write_fragments` writes data as uncommitted fragments of an
existing table or of one not created yet; :class:`LanceOperation` names the commit
(``LanceDataset.commit(uri, LanceOperation.Append(fragments), read_version=...)``).
"""

from __future__ import annotations

import json
import warnings
from typing import TYPE_CHECKING, List, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pa_ds

from . import _args, _lancet
from ._data import read, to_reader
from .errors import InvalidInputError, NotFoundError, SchemaMismatchError, UnsupportedError

if TYPE_CHECKING:
    from .dataset import LanceDataset
    from .scanner import LanceScanner

__all__ = ["DataFile", "DeletionFile", "FragmentMetadata", "FragmentSession", "LanceFragment", "RowIdMeta",
           "write_fragments"]


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

    def _asdict(self) -> dict:
        return {"fields": self.fields, "column_indices": self.column_indices,
                "file_major_version": self.file_major_version,
                "file_minor_version": self.file_minor_version,
                "file_size_bytes": self.file_size_bytes, "base_id": self.base_id, "path": self._path}

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
    sequence; as JSON ``{"Inline": [byte, ...]}``, as pylance writes it."""

    def __init__(self, data: bytes):
        self._data = bytes(data)

    def asdict(self) -> dict:
        return {"Inline": list(self._data)}

    def json(self) -> str:
        return json.dumps(self.asdict())

    @classmethod
    def from_dict(cls, data: dict) -> "RowIdMeta":
        if "Inline" not in data:
            raise UnsupportedError("RowIdMeta: lancet reads row ids stored inline, not in an external file")
        return cls(bytes(data["Inline"]))

    @classmethod
    def from_json(cls, text: str) -> "RowIdMeta":
        return cls.from_dict(json.loads(text))

    def __eq__(self, other) -> bool:
        return isinstance(other, RowIdMeta) and other._data == self._data

    def __reduce__(self):
        return (RowIdMeta, (self._data,))

    def __repr__(self) -> str:
        return f"RowIdMeta({len(self._data)} bytes)"


class RowDatasetVersionMeta:
    """A fragment's stored row versions (pylance's ``RowDatasetVersionMeta``), kept as Lance's
    serialized sequence; as JSON ``{"inline": [byte, ...]}``."""

    def __init__(self, data: bytes = b""):
        self._data = bytes(data)

    def asdict(self) -> dict:
        return {"inline": list(self._data)}

    def json(self) -> str:
        return json.dumps(self.asdict())

    @classmethod
    def from_json(cls, text: str) -> "RowDatasetVersionMeta":
        data = json.loads(text)
        if "inline" not in data:
            raise UnsupportedError("RowDatasetVersionMeta: lancet reads row versions stored inline")
        return cls(bytes(data["inline"]))

    def __eq__(self, other) -> bool:
        return isinstance(other, RowDatasetVersionMeta) and other._data == self._data

    def __reduce__(self):
        return (RowDatasetVersionMeta, (self._data,))

    def __repr__(self) -> str:
        return "RowDatasetVersionMeta()"


class FragmentMetadata:
    """One fragment as Lance records it (pylance's ``FragmentMetadata``: ``id``, ``files``,
    ``physical_rows``, ``deletion_file``, ``row_id_meta``, ...), held as its ``DataFragment``
    protobuf bytes (picklable, so Ray tasks return it). Built from its fields as pylance's
    is, or read from a table; a commit checks it as it checks any fragment."""

    def __init__(self, id: int, files: List[DataFile], physical_rows: int,
                 deletion_file: Optional[DeletionFile] = None, row_id_meta: Optional[RowIdMeta] = None,
                 created_at_version_meta: Optional[RowDatasetVersionMeta] = None,
                 last_updated_at_version_meta: Optional[RowDatasetVersionMeta] = None,
                 overlays: Optional[list] = None):
        if overlays:
            raise UnsupportedError("FragmentMetadata: lancet does not write data overlay files")
        self._set(_lancet.fragment_from_fields(
            int(id), int(physical_rows or 0), list(files), deletion_file,  # None: not yet written
            None if row_id_meta is None else row_id_meta._data,
            None if created_at_version_meta is None else created_at_version_meta._data,
            None if last_updated_at_version_meta is None else last_updated_at_version_meta._data))

    def _set(self, data: bytes) -> None:
        self._data = bytes(data)
        self._info = _lancet.fragment_info(self._data)

    @classmethod
    def _from_bytes(cls, data: bytes) -> "FragmentMetadata":
        """The fragment a stored record (its ``DataFragment`` protobuf) describes."""
        made = cls.__new__(cls)
        made._set(data)
        return made

    def __reduce__(self):
        return (_fragment_from_bytes, (self._data,))

    def __eq__(self, other) -> bool:
        return isinstance(other, FragmentMetadata) and other._data == self._data

    def __repr__(self) -> str:
        return (f"FragmentMetadata(id={self.id}, files={self.files}, physical_rows={self.physical_rows}, "
                f"deletion_file={self.deletion_file}, row_id_meta={self.row_id_meta}, "
                f"created_at_version_meta={self.created_at_version_meta}, "
                f"last_updated_at_version_meta={self.last_updated_at_version_meta}, overlays=[])")

    def to_json(self) -> dict:
        """The fragment as a JSON-serializable dict, in pylance's shape."""
        def meta(m):
            return None if m is None else m.asdict()

        d = self.deletion_file
        return dict(id=self.id, files=[f._asdict() for f in self.files], overlays=[],
                    physical_rows=self.physical_rows, deletion_file=None if d is None else d.asdict(),
                    row_id_meta=meta(self.row_id_meta),
                    created_at_version_meta=meta(self.created_at_version_meta),
                    last_updated_at_version_meta=meta(self.last_updated_at_version_meta))

    @staticmethod
    def from_json(json_data: str) -> "FragmentMetadata":
        """The fragment :meth:`to_json` (or pylance's ``to_json``) describes."""
        d = json.loads(json_data)

        def version_meta(key):
            v = d.get(key)
            return None if v is None else RowDatasetVersionMeta.from_json(json.dumps(v))

        deletion = d.get("deletion_file")
        ids = d.get("row_id_meta")
        return FragmentMetadata(
            id=d["id"], files=[DataFile(**f) for f in d["files"]], physical_rows=d["physical_rows"],
            deletion_file=None if deletion is None else DeletionFile(**deletion),
            row_id_meta=None if ids is None else RowIdMeta.from_dict(ids),
            created_at_version_meta=version_meta("created_at_version_meta"),
            last_updated_at_version_meta=version_meta("last_updated_at_version_meta"),
            overlays=d.get("overlays") or None)

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
        v = self._info["created_at_versions"]
        return None if v is None else RowDatasetVersionMeta(v)

    @property
    def last_updated_at_version_meta(self) -> Optional[RowDatasetVersionMeta]:
        v = self._info["last_updated_at_versions"]
        return None if v is None else RowDatasetVersionMeta(v)

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


class LanceFragment(pa_ds.Fragment):
    """One fragment of a table version (pylance's ``LanceFragment``): its record, its rows,
    and edits that write files without committing (``delete`` returns the new record for a
    ``LanceOperation.Delete``)."""

    def __init__(self, dataset: "LanceDataset", fragment_id: int, physical_rows: int, live_rows: int):
        self._dataset = dataset
        self._id = fragment_id
        self._physical = physical_rows
        self._live = live_rows

    def __reduce__(self):
        return (LanceFragment, (self._dataset, self._id, self._physical, self._live))

    def __repr__(self) -> str:
        return f"LanceFragment(id={self._id}, rows={self._live})"

    @property
    def fragment_id(self) -> int:
        return self._id

    @property
    def physical_rows(self) -> int:
        return self._physical

    @property
    def partition_expression(self):
        return pc.scalar(True)

    @property
    def physical_schema(self) -> pa.Schema:
        return self._dataset.schema

    def count_rows(self, filter=None) -> int:
        if filter is None and self._live is not None:
            return self._live
        return self.scanner(filter=filter).count_rows()

    def scanner(self, schema=None, /, *, columns=None, batch_size=None, filter=None, limit=None,
                offset=None, with_row_id: bool = False, with_row_address: bool = False,
                batch_readahead: int = 16, blob_handling=None, order_by=None, use_scalar_index=None,
                io_buffer_size=None, late_materialization=None, include_deleted_rows=None,
                batch_size_bytes=None, strict_batch_size=None) -> "LanceScanner":
        """A scan of this fragment (the arguments as :meth:`LanceDataset.scanner`'s). The
        positional `schema` is pyarrow's ``Fragment.scanner``'s, which DataFusion passes: the
        dataset's schema, or a projection of it."""
        if schema is not None and columns is None and schema != self._dataset.schema:
            columns = [n for n in schema.names]
        return self._dataset.scanner(
            columns, filter, limit, offset, batch_size=batch_size, fragments=[self._id],
            with_row_id=with_row_id, with_row_address=with_row_address, blob_handling=blob_handling,
            order_by=order_by, use_scalar_index=use_scalar_index, io_buffer_size=io_buffer_size,
            late_materialization=late_materialization, include_deleted_rows=include_deleted_rows,
            batch_size_bytes=batch_size_bytes, strict_batch_size=strict_batch_size)

    def to_table(self, columns=None, filter=None, limit=None, offset=None, with_row_id: bool = False,
                 with_row_address: bool = False, blob_handling=None, order_by=None,
                 use_scalar_index=None, io_buffer_size=None, late_materialization=None,
                 include_deleted_rows=None, batch_size_bytes=None, strict_batch_size=None) -> pa.Table:
        return self.scanner(
            columns=columns, filter=filter, limit=limit, offset=offset, with_row_id=with_row_id,
            with_row_address=with_row_address, blob_handling=blob_handling, order_by=order_by,
            use_scalar_index=use_scalar_index, io_buffer_size=io_buffer_size,
            late_materialization=late_materialization, include_deleted_rows=include_deleted_rows,
            batch_size_bytes=batch_size_bytes, strict_batch_size=strict_batch_size).to_table()

    def to_batches(self, *, columns=None, batch_size=None, filter=None, limit=None, offset=None,
                   with_row_id: bool = False, with_row_address: bool = False, batch_readahead: int = 16,
                   blob_handling=None, order_by=None, use_scalar_index=None, io_buffer_size=None,
                   late_materialization=None, include_deleted_rows=None, batch_size_bytes=None,
                   strict_batch_size=None) -> Iterator[pa.RecordBatch]:
        return self.scanner(
            columns=columns, batch_size=batch_size, filter=filter, limit=limit, offset=offset,
            with_row_id=with_row_id, with_row_address=with_row_address, blob_handling=blob_handling,
            order_by=order_by, use_scalar_index=use_scalar_index, io_buffer_size=io_buffer_size,
            late_materialization=late_materialization, include_deleted_rows=include_deleted_rows,
            batch_size_bytes=batch_size_bytes, strict_batch_size=strict_batch_size).to_batches()

    def head(self, num_rows: int) -> pa.Table:
        return self.scanner(limit=num_rows).to_table()

    @property
    def metadata(self) -> "FragmentMetadata":
        """The fragment's record in this version."""
        data = _lancet.fragment_metadata(self._dataset._ds, self._id)
        if data is None:
            raise NotFoundError(f"fragment {self._id} is not in version {self._dataset.version}")
        return FragmentMetadata._from_bytes(data)

    @property
    def schema(self) -> pa.Schema:
        return self._dataset.schema

    @property
    def num_deletions(self) -> int:
        """Rows its deletion file deletes."""
        return self._physical - self.count_rows()

    def data_files(self) -> List[DataFile]:
        return self.metadata.files

    def deletion_file(self) -> Optional[str]:
        """The deletion file's path relative to the table (``_deletions/...``), if any."""
        d = self.metadata.deletion_file
        return None if d is None else d.path(self._id)

    def take(self, indices, columns=None) -> pa.Table:
        """Rows by position among the fragment's live rows, in the order given."""
        if isinstance(indices, (pa.Array, pa.ChunkedArray)):
            indices = indices.to_pylist()
        indices = [int(i) for i in indices]
        ids = self.scanner(columns=["_rowid"]).to_table().column("_rowid").to_pylist()
        for i in indices:
            if i < 0 or i >= len(ids):
                raise InvalidInputError(f"index {i} is out of range (fragment {self._id} has "
                                        f"{len(ids)} rows)")
        return self._dataset.take_rows([ids[i] for i in indices], columns)

    def to_pandas(self, columns=None, filter=None, limit=None, offset=None, batch_size=None,
                  with_row_id: bool = False, with_row_address: bool = False, blob_mode: str = "lazy",
                  order_by=None, **kwargs):
        """The scan's rows as a pandas DataFrame (`kwargs` go to pyarrow's ``to_pandas``);
        `blob_mode` changes nothing (lancet reads no blob columns)."""
        return self.scanner(
            columns=columns, filter=filter, limit=limit, offset=offset, batch_size=batch_size,
            with_row_id=with_row_id, with_row_address=with_row_address,
            order_by=order_by).to_table().to_pandas(**kwargs)

    def validate(self) -> None:
        """Checks the version this fragment belongs to (its invariants, the fragment's among
        them, as :meth:`LanceDataset.validate`); raises the typed error of the first broken
        rule."""
        self._dataset.validate()

    def delete(self, predicate: str) -> Optional["FragmentMetadata"]:
        """The fragment with the rows matching `predicate` deleted too: its new record (a new
        deletion file written, nothing committed), itself unchanged when no row matches, or
        ``None`` when no row is left."""
        rows = self.scanner(columns=[], filter=predicate, with_row_address=True).to_table()
        offsets = [a & 0xFFFFFFFF for a in rows.column("_rowaddr").to_pylist()]
        return self.delete_rows(offsets)

    def delete_rows(self, offsets) -> Optional["FragmentMetadata"]:
        """The fragment with the rows at physical `offsets` deleted too (as :meth:`delete`)."""
        offsets = [int(o) for o in offsets]
        if not offsets:
            return self.metadata
        if any(o < 0 for o in offsets):
            raise InvalidInputError("row offsets are at least 0")
        data = _lancet.fragment_delete_rows(self._dataset._ds, self._id, offsets)
        return None if data is None else FragmentMetadata._from_bytes(data)



def _merge_columns(self, value_func, columns: Optional[List[str]] = None, batch_size: Optional[int] = None,
                   reader_schema: Optional[pa.Schema] = None):
    """New columns for this fragment from `value_func` (a function over batches of `columns`,
    or a :class:`lancet.udf.BatchUDF`), written as its file and not committed, as pylance's:
    the fragment's new record and the table's schema with the new fields, which a
    ``LanceOperation.Merge`` of every fragment commits. A dict of SQL expressions is not
    implemented here (``LanceDataset.add_columns`` takes one)."""
    from . import backfill
    from .schema import LanceSchema

    where = "LanceFragment.merge_columns"
    _args.refuse(where, reader_schema=reader_schema)
    if isinstance(value_func, dict):
        raise UnsupportedError(f"{where}: lancet does not implement SQL expressions here "
                               "(LanceDataset.add_columns takes them)")
    if not callable(value_func):
        raise TypeError(f"{where}: value_func must be a function over record batches")
    native = self._dataset._ds
    new = backfill.new_schema_of(self._dataset, value_func, columns)
    both = [n for n in new.names if n in self._dataset.schema.names]
    if both:
        raise InvalidInputError(f"{where}: the table has the columns {both}")
    out = backfill.compute(native, self._id, value_func, columns, new)
    record, fields, metadata = _lancet.merge_fragment_columns(native, self._id, out)
    return FragmentMetadata._from_bytes(record), LanceSchema(fields, metadata)


LanceFragment.merge_columns = _merge_columns


def _merge(self, data_obj, left_on: str, right_on: Optional[str] = None,
           schema=None) -> "tuple[FragmentMetadata, LanceSchema]":
    """The columns of `data_obj` joined to this fragment's rows on `left_on` (a column of
    the table) = `right_on` (of the data; `left_on` when None), written as the fragment's new
    file and not committed, as pylance's: a left join (a row no key matches reads NULL, a
    NULL key matches a NULL key, of repeated keys the last row wins). Returns the fragment's
    new record and the table's schema with the new fields, which a
    ``LanceOperation.Merge`` of every fragment commits. A key either side lacks, or a column
    both sides have, is :class:`lancet.errors.InvalidInputError` (pylance's ``ValueError``)."""
    from .join import Right
    from .schema import LanceSchema

    right_on = left_on if right_on is None else right_on
    right = pa.table(to_reader(data_obj, schema))
    names = self._dataset.schema.names
    if left_on not in names:
        raise InvalidInputError(f"Column {left_on} does not exist in the left side fragment")
    if right_on not in right.column_names:
        raise InvalidInputError(f"Column {right_on} does not exist in the right side fragment")
    for name in right.column_names:
        if name != right_on and name in names:
            raise InvalidInputError(f"Column {name} exists in left side fragment and right side dataset")
    side = Right(right, right_on)
    side.check_key_type(self._dataset.schema.field(left_on).type, InvalidInputError)
    native = self._dataset._ds
    left = read(native.fragment_rows(self._id, [left_on])).read_all().column(0)
    record, fields, metadata = _lancet.merge_fragment_columns(native, self._id, side.joined(left))
    return FragmentMetadata._from_bytes(record), LanceSchema(fields, metadata)


def _update_columns(self, data_obj, left_on: str = "_rowid", right_on: Optional[str] = None,
                    schema=None, *, with_offsets: bool = False):
    """This fragment's rows with the values of the columns `data_obj` holds replaced where
    its `right_on` (`left_on` when None) matches their `left_on` (a column of the table,
    ``_rowid`` or ``_rowaddr``), written as the fragment's new file and not committed, as
    pylance's: rows no key matches keep their values, of repeated keys the last row wins,
    the key column is not updated. Returns the fragment's new record (the columns'
    fields tombstoned in the files that held them) and the ids of the fields modified, which
    ``LanceOperation.Update(updated_fragments=..., fields_modified=...)`` commits. A
    column the table lacks, a metadata column or another key type is
    :class:`lancet.errors.InvalidInputError` (pylance's ``ValueError``), a column of
    another type :class:`lancet.errors.SchemaMismatchError`. With ``with_offsets``, a third
    element: the physical offsets of the rows a key matched, as portable RoaringBitmap bytes
    (``LanceOperation.Update``'s ``updated_fragment_offsets``)."""
    from .join import Right

    right_on = left_on if right_on is None else right_on
    right = pa.table(to_reader(data_obj, schema))
    table = self._dataset.schema
    if left_on not in table.names and left_on not in ("_rowid", "_rowaddr"):
        raise InvalidInputError(f"Column {left_on} does not exist in the left side fragment")
    if right_on not in right.column_names:
        raise InvalidInputError(f"Column {right_on} does not exist in the right side fragment")
    columns = [n for n in right.column_names if n != right_on]
    for name in columns:
        if name in ("_rowid", "_rowaddr"):
            raise InvalidInputError(f"Column {name} is a reserved metadata column and cannot be updated")
        if name not in table.names:
            raise InvalidInputError(f"Column {name} in right side fragment does not exist in left side fragment")
        if right.schema.field(name).type != table.field(name).type:
            raise SchemaMismatchError(f"Attempt to project field by different types: "
                                      f"{right.schema.field(name).type} and {table.field(name).type}")
    native = self._dataset._ds
    if left_on in ("_rowid", "_rowaddr"):
        left = read(native.fragment_rows(self._id, columns)).read_all()
        key = _row_keys(self, left_on, left.num_rows)
    else:
        left = read(native.fragment_rows(self._id, list(dict.fromkeys(columns + [left_on])))).read_all()
        key = left.column(left_on)
    side = Right(right, right_on)
    side.check_key_type(key.type, InvalidInputError)
    values = side.updated(left.select(columns), key, live=pc.is_valid(key))
    file = native.write_column_file(self._id, values)
    record, modified = _lancet.fragment_with_file(native, self._id, file)
    if not with_offsets:
        return FragmentMetadata._from_bytes(record), list(modified)
    # the left rows are the fragment's physical rows, in offset order; a deleted row is
    # never a match
    matched = side.matched(key, live=pc.is_valid(key))
    live = self.to_table(columns=[], with_row_address=True).column("_rowaddr")
    live = pc.bit_wise_and(live, pa.scalar(0xFFFFFFFF, pa.uint64()))
    kept = pc.is_in(pa.array(range(len(matched)), pa.uint64()), value_set=live.combine_chunks())
    offsets = pc.indices_nonzero(pc.and_(pc.fill_null(matched, False), kept)).to_pylist()
    return FragmentMetadata._from_bytes(record), list(modified), _lancet.offsets_bitmap(offsets)


def _row_keys(fragment: "LanceFragment", column: str, physical_rows: int) -> pa.Array:
    """The `column` (``_rowid`` or ``_rowaddr``) of each physical row of `fragment`, NULL at
    a deleted row (which no key matches)."""
    live = fragment.to_table(columns=[], with_row_id=True, with_row_address=True)
    offsets = pc.bit_wise_and(live.column("_rowaddr"), pa.scalar(0xFFFFFFFF, pa.uint64()))
    at = pa.array([None] * physical_rows, pa.int64()).to_pylist()
    for row, offset in enumerate(offsets.to_pylist()):
        at[offset] = row
    return live.column(column).combine_chunks().take(pa.array(at, pa.int64()))


_merge.__name__, _merge.__qualname__ = "merge", "LanceFragment.merge"
_update_columns.__name__, _update_columns.__qualname__ = "update_columns", "LanceFragment.update_columns"
LanceFragment.merge = _merge
LanceFragment.update_columns = _update_columns


def _create(dataset_uri, data, fragment_id: Optional[int] = None, schema: Optional[pa.Schema] = None,
            max_rows_per_group: Optional[int] = 1024, progress=None, mode: str = "append", *,
            data_storage_version: Optional[str] = None, use_legacy_format=None, storage_options=None,
            namespace_client=None, table_id=None, session=None) -> FragmentMetadata:
    """Writes `data` as one fragment of the table at `dataset_uri` (or of the table to be
    created there), uncommitted, with id `fragment_id` (0 when None; a commit numbers new
    fragments anyway), as pylance's ``LanceFragment.create``. No rows is refused."""
    written = write_fragments(data, dataset_uri, schema, mode=mode, max_rows_per_file=2 ** 63 - 1,
                              max_rows_per_group=1024 if max_rows_per_group is None else max_rows_per_group,
                              progress=progress, data_storage_version=data_storage_version,
                              use_legacy_format=use_legacy_format, storage_options=storage_options,
                              namespace_client=namespace_client, table_id=table_id, session=session)
    if not written:
        raise InvalidInputError("LanceFragment.create: input data was empty")
    (one,) = written
    return FragmentMetadata(0 if fragment_id is None else int(fragment_id), one.files, one.physical_rows,
                            one.deletion_file, one.row_id_meta)


_create.__name__, _create.__qualname__ = "create", "LanceFragment.create"
LanceFragment.create = staticmethod(_create)


def _create_from_file(filename: str, dataset: "LanceDataset", fragment_id: int) -> FragmentMetadata:
    """The record of fragment `fragment_id` made of the data file `filename` under the
    table's ``data/`` (written apart, with ``LanceFileWriter`` say), not committed, as
    pylance's: a ``LanceOperation.Append`` or ``Overwrite`` commits it. A file whose schema is
    not the table's is :class:`lancet.errors.InvalidInputError`."""
    return FragmentMetadata._from_bytes(_lancet.fragment_from_file(dataset._ds, str(filename), int(fragment_id)))


_create_from_file.__name__, _create_from_file.__qualname__ = "create_from_file", "LanceFragment.create_from_file"
LanceFragment.create_from_file = staticmethod(_create_from_file)


class FragmentSession:
    """Repeated takes from one fragment over the same columns (pylance's
    ``FragmentSession``): the fragment's live rows are listed once, when it opens."""

    def __init__(self, fragment: "LanceFragment", columns: Optional[List[str]], with_row_address: bool):
        self._dataset, self._columns = fragment._dataset, columns
        self._with_row_address = with_row_address
        live = fragment.scanner(columns=["_rowid", "_rowaddr"]).to_table()
        self._ids = live.column("_rowid").to_pylist()
        self._addresses = live.column("_rowaddr")
        self._fragment_id = fragment.fragment_id

    def take(self, indices) -> pa.Table:
        """The rows at `indices` (positions among the fragment's live rows), in the order
        given; a position past them is :class:`lancet.errors.InvalidInputError`."""
        if isinstance(indices, (pa.Array, pa.ChunkedArray)):
            indices = indices.to_pylist()
        indices = [int(i) for i in indices]
        for i in indices:
            if i < 0 or i >= len(self._ids):
                raise InvalidInputError(f"index {i} is out of range (fragment {self._fragment_id} "
                                        f"has {len(self._ids)} rows)")
        table = self._dataset.take_rows([self._ids[i] for i in indices], self._columns)
        if self._with_row_address:
            at = pa.array(indices, pa.int64())
            table = table.append_column(pa.field("_rowaddr", pa.uint64()), self._addresses.take(at))
        return table


def _open_session(self, columns: Optional[List[str]] = None,
                  with_row_address: Optional[bool] = None) -> FragmentSession:
    """A :class:`FragmentSession` over `columns` (every column when None), with
    ``_rowaddr`` when `with_row_address`, as pylance's."""
    if isinstance(columns, dict):
        raise TypeError("argument 'columns': 'dict' object is not an instance of 'Sequence'")
    return FragmentSession(self, None if columns is None else list(columns), bool(with_row_address))


_open_session.__name__, _open_session.__qualname__ = "open_session", "LanceFragment.open_session"
LanceFragment.open_session = _open_session


# pylance's LanceFragment names lancet does not implement yet, and what each is
_FRAGMENT_NOT_IMPLEMENTED: dict = {}


def _fragment_not_implemented(name: str, feature: str, static: bool):
    def method(*args, **kwargs):
        raise UnsupportedError(f"LanceFragment.{name}: lancet does not implement {feature}")

    method.__name__ = name
    method.__qualname__ = f"LanceFragment.{name}"
    method.__doc__ = f"Not implemented by lancet: {feature}. Raises UnsupportedError."
    return staticmethod(method) if static else method


for _name, _feature in _FRAGMENT_NOT_IMPLEMENTED.items():
    setattr(LanceFragment, _name, _fragment_not_implemented(_name, _feature, False))


def _fragment_from_bytes(data: bytes) -> FragmentMetadata:
    """A pickled :class:`FragmentMetadata` again."""
    return FragmentMetadata._from_bytes(data)


def _check_progress(where: str, progress) -> None:
    """`progress` is a ``FragmentWriteProgress`` (anything with ``begin`` and ``complete``)
    or ``None``."""
    if progress is not None and not (callable(getattr(progress, "begin", None))
                                     and callable(getattr(progress, "complete", None))):
        raise TypeError(f"{where}: progress must be a lancet.progress.FragmentWriteProgress, "
                        f"not {type(progress).__name__}")


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
    _check_progress(where, progress)
    _args.refuse(where, use_legacy_format=use_legacy_format, target_bases=target_bases,
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
        # an append's files are in the table's version (one file version per table)
        _args.refuse(where, data_storage_version=data_storage_version)
        written = native.write_fragments(reader, max_rows_per_file, max_rows_per_group, progress)
    elif native is not None and mode == "overwrite":
        written = native.write_overwrite_fragments(reader, max_rows_per_file, max_rows_per_group,
                                                   data_storage_version, progress)
    elif native is None:
        written = _lancet.write_new_fragments(reader, uri, max_rows_per_file, max_rows_per_group,
                                              data_storage_version or "stable", progress)
    else:
        raise InvalidInputError(f"write_fragments mode 'create' on an existing table at {uri}")
    return [FragmentMetadata._from_bytes(b) for b in written]
