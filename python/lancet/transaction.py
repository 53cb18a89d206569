"""Lance's operations and transactions, as pylance 14.0.2 names them (``lance.dataset``'s
``LanceOperation``, ``Transaction``, ``Index``, ``IndexFile``).

:class:`LanceOperation` holds one class per operation, with pylance's fields;
:meth:`LanceDataset.commit` commits an ``Append`` or an ``Overwrite``, and
:meth:`LanceDataset.read_transaction` / :meth:`LanceDataset.get_transactions` read every
operation a version records back as these objects (fragments as :class:`FragmentMetadata`,
schemas as :class:`lancet.schema.LanceSchema`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import uuid as _uuid
from abc import ABC
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple, Union

import pyarrow as pa

from . import _lancet
from .bitmap import Bitmap
from .fragment import DataFile, FragmentMetadata
from .schema import LanceSchema

__all__ = ["Index", "IndexFile", "LanceOperation", "Transaction"]


@dataclass
class IndexFile:
    """A file of an index segment."""

    path: str
    size_bytes: int


@dataclass
class Index:
    """One index segment of a version (pylance's ``Index``)."""

    uuid: str
    name: str
    fields: List[int]
    dataset_version: int
    fragment_ids: Bitmap
    index_version: int
    created_at: Optional[_dt.datetime] = None
    base_id: Optional[int] = None
    files: Optional[List[IndexFile]] = None
    index_details: Optional[Tuple[str, bytes]] = None
    covering_fields: List[int] = dataclasses.field(default_factory=list)


class LanceOperation:
    """Lance's operations, with pylance's fields."""

    class BaseOperation(ABC):
        """An operation a transaction records."""

    @dataclass
    class Overwrite(BaseOperation):
        """Replaces the table's schema and every fragment (or creates the table). lancet's
        own keyword-only fields say how a table it creates is laid out."""

        new_schema: Union[LanceSchema, pa.Schema]
        fragments: List[FragmentMetadata]
        initial_bases: Optional[list] = None
        _: dataclasses.KW_ONLY
        layout: str = "flat"
        enable_stable_row_ids: bool = False
        data_storage_version: Optional[str] = None

    @dataclass
    class Append(BaseOperation):
        fragments: List[FragmentMetadata]

    @dataclass
    class Delete(BaseOperation):
        updated_fragments: List[FragmentMetadata]
        deleted_fragment_ids: List[int]
        predicate: str

    @dataclass
    class Update(BaseOperation):
        removed_fragment_ids: List[int] = dataclasses.field(default_factory=list)
        updated_fragments: List[FragmentMetadata] = dataclasses.field(default_factory=list)
        new_fragments: List[FragmentMetadata] = dataclasses.field(default_factory=list)
        fields_modified: List[int] = dataclasses.field(default_factory=list)
        fields_for_preserving_frag_bitmap: List[int] = dataclasses.field(default_factory=list)
        update_mode: str = ""
        updated_fragment_offsets: Optional[Dict[int, bytes]] = None

    @dataclass
    class Merge(BaseOperation):
        fragments: List[FragmentMetadata]
        schema: Union[LanceSchema, pa.Schema]
        preserves_nullability: bool = False

    @dataclass
    class Restore(BaseOperation):
        version: int

    @dataclass
    class Clone(BaseOperation):
        is_shallow: bool
        ref_name: Optional[str]
        ref_version: int
        ref_path: str
        branch_name: Optional[str]

    @dataclass
    class RewriteGroup:
        old_fragments: List[FragmentMetadata]
        new_fragments: List[FragmentMetadata]

    @dataclass
    class RewrittenIndex:
        old_id: str
        new_id: str
        new_details_type_url: str
        new_details_value: bytes
        new_index_version: int

    @dataclass
    class Rewrite(BaseOperation):
        groups: List["LanceOperation.RewriteGroup"]
        rewritten_indices: List["LanceOperation.RewrittenIndex"]

    @dataclass
    class CreateIndex(BaseOperation):
        new_indices: List[Index]
        removed_indices: List[Index]

    @dataclass
    class DataReplacementGroup:
        fragment_id: int
        new_file: DataFile

    @dataclass
    class DataReplacement(BaseOperation):
        replacements: List["LanceOperation.DataReplacementGroup"]

    @dataclass
    class DataOverlayFile:
        data_file: DataFile
        offsets: list
        committed_version: Optional[int] = None

    @dataclass
    class DataOverlayGroup:
        fragment_id: int
        overlays: List["LanceOperation.DataOverlayFile"]

    @dataclass
    class DataOverlay(BaseOperation):
        groups: List["LanceOperation.DataOverlayGroup"]

    @dataclass
    class Project(BaseOperation):
        schema: LanceSchema
        preserves_nullability: bool = False

    @dataclass
    class UpdateMap:
        updates: Dict[str, Optional[str]]
        replace: bool = False

    @dataclass
    class UpdateConfig(BaseOperation):
        config_updates: Optional["LanceOperation.UpdateMap"] = None
        table_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        schema_metadata_updates: Optional["LanceOperation.UpdateMap"] = None
        field_metadata_updates: Optional[Dict[int, "LanceOperation.UpdateMap"]] = None


@dataclass
class Transaction:
    """A version's transaction: the version it was read at, its operation, its uuid and the
    properties it was committed with (``lance.dataset.Transaction``)."""

    read_version: int
    operation: LanceOperation.BaseOperation
    uuid: str = dataclasses.field(default_factory=lambda: str(_uuid.uuid4()))
    transaction_properties: Optional[Dict[str, str]] = dataclasses.field(default_factory=dict)


def from_native(t: Optional[dict]) -> Optional[Transaction]:
    """The transaction the native half decoded (``_lancet.read_transaction``), as objects."""
    if t is None:
        return None
    return Transaction(read_version=t["read_version"], operation=_operation(t["operation"], t["args"]),
                       uuid=t["uuid"], transaction_properties=dict(t["transaction_properties"]))


def _fragments(list_of_bytes) -> List[FragmentMetadata]:
    return [FragmentMetadata._from_bytes(b) for b in list_of_bytes]


def _schema(s: dict) -> LanceSchema:
    return LanceSchema(s["fields"], s["metadata"])


def _index(d: dict) -> Index:
    created = d["created_at"]
    if created is not None:
        created = _dt.datetime.fromtimestamp(created / 1000, tz=_dt.timezone.utc)
    files = d["files"]
    return Index(uuid=d["uuid"], name=d["name"], fields=list(d["fields"]),
                 dataset_version=d["dataset_version"], fragment_ids=Bitmap(d["fragment_ids"]),
                 index_version=d["index_version"], created_at=created, base_id=d["base_id"],
                 files=None if files is None else [IndexFile(p, n) for p, n in files],
                 index_details=d["index_details"], covering_fields=list(d["covering_fields"]))


def _update_map(m: Optional[dict]) -> Optional[LanceOperation.UpdateMap]:
    return None if m is None else LanceOperation.UpdateMap(dict(m["updates"]), m["replace"])


def _operation(name: str, a: dict) -> LanceOperation.BaseOperation:
    op = LanceOperation
    if name == "Append":
        return op.Append(_fragments(a["fragments"]))
    if name == "Delete":
        return op.Delete(_fragments(a["updated_fragments"]), list(a["deleted_fragment_ids"]), a["predicate"])
    if name == "Overwrite":
        return op.Overwrite(_schema(a["new_schema"]), _fragments(a["fragments"]))
    if name == "CreateIndex":
        return op.CreateIndex([_index(i) for i in a["new_indices"]], [_index(i) for i in a["removed_indices"]])
    if name == "Rewrite":
        groups = [op.RewriteGroup(_fragments(g["old_fragments"]), _fragments(g["new_fragments"]))
                  for g in a["groups"]]
        rewritten = [op.RewrittenIndex(**r) for r in a["rewritten_indices"]]
        return op.Rewrite(groups, rewritten)
    if name == "Merge":
        return op.Merge(_fragments(a["fragments"]), _schema(a["schema"]), a["preserves_nullability"])
    if name == "Project":
        return op.Project(_schema(a["schema"]), a["preserves_nullability"])
    if name == "Restore":
        return op.Restore(a["version"])
    if name == "Clone":
        return op.Clone(**a)
    if name == "Update":
        return op.Update(removed_fragment_ids=list(a["removed_fragment_ids"]),
                         updated_fragments=_fragments(a["updated_fragments"]),
                         new_fragments=_fragments(a["new_fragments"]),
                         fields_modified=list(a["fields_modified"]),
                         fields_for_preserving_frag_bitmap=list(a["fields_for_preserving_frag_bitmap"]),
                         update_mode=a["update_mode"],
                         updated_fragment_offsets=a["updated_fragment_offsets"])
    if name == "UpdateConfig":
        fields = a["field_metadata_updates"]
        return op.UpdateConfig(
            config_updates=_update_map(a["config_updates"]),
            table_metadata_updates=_update_map(a["table_metadata_updates"]),
            schema_metadata_updates=_update_map(a["schema_metadata_updates"]),
            field_metadata_updates=None if fields is None else {k: _update_map(v) for k, v in fields.items()})
    if name == "DataReplacement":
        return op.DataReplacement([
            op.DataReplacementGroup(g["fragment_id"], None if g["new_file"] is None else DataFile(**g["new_file"]))
            for g in a["replacements"]])
    from .errors import UnsupportedError
    raise UnsupportedError(f"lancet does not read a {name} operation as a LanceOperation")


def to_native(op: LanceOperation.BaseOperation) -> Tuple[str, dict]:
    """`op`'s name and fields as the native half commits them (the shapes
    :func:`from_native` reads)."""
    from .errors import UnsupportedError
    name = type(op).__name__
    if isinstance(op, (LanceOperation.Rewrite, LanceOperation.Clone, LanceOperation.DataOverlay)):
        raise UnsupportedError(f"LanceDataset.commit: lancet does not commit a {name} given as a "
                               "LanceOperation (compaction commits its own rewrites)")
    args = {}
    for f in dataclasses.fields(op):
        args[f.name] = _plain(getattr(op, f.name), f.name)
    return name, args


def _plain(value, what: str):
    from .errors import UnsupportedError
    if isinstance(value, FragmentMetadata):
        return value.to_bytes()
    if type(value).__name__ == "FragmentMetadata":
        raise UnsupportedError(f"LanceDataset.commit: {what} holds another library's FragmentMetadata; "
                               "lancet commits the fragments it wrote or read (write_fragments, read_transaction)")
    if isinstance(value, LanceSchema):
        return {"fields": value._fields, "metadata": value._metadata}
    if isinstance(value, pa.Schema):
        raise UnsupportedError(f"LanceDataset.commit: {what} as a pyarrow schema (give a LanceSchema: "
                               "dataset.lance_schema, or one read back with read_transaction)")
    if isinstance(value, Index):
        created = value.created_at
        return {"uuid": value.uuid, "name": value.name, "fields": list(value.fields),
                "dataset_version": value.dataset_version, "fragment_ids": sorted(value.fragment_ids),
                "index_version": value.index_version,
                "created_at": None if created is None else int(created.timestamp() * 1000),
                "base_id": value.base_id,
                "files": None if value.files is None else [(f.path, f.size_bytes) for f in value.files],
                "index_details": value.index_details, "covering_fields": list(value.covering_fields)}
    if isinstance(value, DataFile):
        return {"path": value.path, "fields": list(value.fields), "column_indices": list(value.column_indices),
                "file_major_version": value.file_major_version, "file_minor_version": value.file_minor_version,
                "file_size_bytes": value.file_size_bytes, "base_id": value.base_id}
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name), what) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v, what) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, what) for k, v in value.items()}
    return value
