"""Lance schemas, as pylance's ``lance.schema``: :class:`LanceSchema` is a table's field list as
Lance records it (field ids, parents, unenforced key positions), convertible to and from a
pyarrow schema. The transactions lancet reads back (:meth:`LanceDataset.read_transaction`)
carry their schemas as one."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import pyarrow as pa

from . import _lancet
from ._data import read, schema_stream

__all__ = ["LanceField", "LanceSchema", "json_to_schema", "schema_to_json"]


class LanceField:
    """One field of a :class:`LanceSchema` (pylance's ``LanceField``)."""

    def __init__(self, info: dict, children: List["LanceField"]):
        self._info = info
        self._children = children

    def name(self) -> str:
        return self._info["name"]

    def id(self) -> int:
        return self._info["id"]

    def children(self) -> List["LanceField"]:
        return list(self._children)

    def is_unenforced_primary_key(self) -> bool:
        return self._info["unenforced_primary_key_position"] is not None

    def unenforced_primary_key_position(self) -> Optional[int]:
        """The key position from 1; None for a key column ordered by field id, as pylance's."""
        return self._info["unenforced_primary_key_position"] or None

    def is_unenforced_clustering_key(self) -> bool:
        return self._info["unenforced_clustering_key_position"] is not None

    def unenforced_clustering_key_position(self) -> Optional[int]:
        return self._info["unenforced_clustering_key_position"]

    def __repr__(self) -> str:
        return (f"LanceField(name={self.name()!r}, id={self.id()}, "
                f"logical_type={self._info['logical_type']!r}, nullable={self._info['nullable']}, "
                f"children={self._children!r})")

    def __eq__(self, other) -> bool:
        return (isinstance(other, LanceField) and other._info == self._info
                and other._children == self._children)


class LanceSchema:
    """A table's schema as Lance records it: fields with ids (pylance's ``LanceSchema``)."""

    def __init__(self, fields: List[bytes], metadata: Optional[Dict[str, bytes]] = None):
        self._fields = [bytes(f) for f in fields]
        self._metadata = dict(metadata or {})
        infos = [_lancet.field_info(f) for f in self._fields]
        by_parent: Dict[int, List[dict]] = {}
        for info in infos:
            by_parent.setdefault(info["parent_id"], []).append(info)

        def build(info: dict) -> LanceField:
            return LanceField(info, [build(c) for c in by_parent.get(info["id"], [])])

        self._top = [build(i) for i in by_parent.get(-1, [])]

    @staticmethod
    def from_pyarrow(schema: pa.Schema) -> "LanceSchema":
        """`schema` as a new table records it: field ids depth-first from 0."""
        fields = _lancet.schema_from_arrow(schema_stream(schema))
        metadata = {k.decode(): v for k, v in (schema.metadata or {}).items()}
        return LanceSchema(fields, metadata)

    def to_pyarrow(self) -> pa.Schema:
        return read(_lancet.schema_to_arrow(self._fields, self._metadata)).schema

    def fields(self) -> List[LanceField]:
        return list(self._top)

    def field(self, name: str) -> Optional[LanceField]:
        """The field at `name` (a top-level name, or a dotted path into structs)."""
        found = None
        level = self._top
        for part in name.split("."):
            found = next((f for f in level if f.name() == part), None)
            if found is None:
                return None
            level = found.children()
        return found

    def field_case_insensitive(self, name: str) -> Optional[LanceField]:
        found = None
        level = self._top
        for part in name.split("."):
            found = next((f for f in level if f.name().lower() == part.lower()), None)
            if found is None:
                return None
            level = found.children()
        return found

    def unenforced_primary_key(self) -> List[LanceField]:
        """The primary key's fields in key order (Lance's: explicit positions, then by id)."""
        return self._by_ids(_lancet.key_fields(self._fields)[0])

    def unenforced_clustering_key(self) -> List[LanceField]:
        return self._by_ids(_lancet.key_fields(self._fields)[1])

    def _by_ids(self, ids: List[int]) -> List[LanceField]:
        every = {}

        def walk(fields):
            for f in fields:
                every[f.id()] = f
                walk(f.children())

        walk(self._top)
        return [every[i] for i in ids if i in every]

    def __eq__(self, other) -> bool:
        return isinstance(other, LanceSchema) and other._top == self._top and other._metadata == self._metadata

    def __repr__(self) -> str:
        return f"LanceSchema(fields={self._top!r})"

    def __reduce__(self):
        return (LanceSchema, (self._fields, self._metadata))


# Lance's logical type names of Arrow's leaf types (lance-core's `LogicalType`), both ways
_LEAF = {
    "null": pa.null(), "bool": pa.bool_(), "int8": pa.int8(), "uint8": pa.uint8(), "int16": pa.int16(),
    "uint16": pa.uint16(), "int32": pa.int32(), "uint32": pa.uint32(), "int64": pa.int64(),
    "uint64": pa.uint64(), "halffloat": pa.float16(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "binary": pa.binary(), "large_string": pa.large_string(),
    "large_binary": pa.large_binary(), "date32:day": pa.date32(), "date64:ms": pa.date64(),
}
_LEAF_NAMES = {t: n for n, t in _LEAF.items()}
_UNITS = ("s", "ms", "us", "ns")


def _logical(t: pa.DataType) -> str:
    """The logical type name Lance records for a leaf type (ValueError for another)."""
    if t in _LEAF_NAMES:
        return _LEAF_NAMES[t]
    if getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "string"
    if getattr(pa.types, "is_binary_view", lambda _: False)(t):
        return "binary"
    if pa.types.is_decimal(t):
        return f"decimal:{t.bit_width}:{t.precision}:{t.scale}"
    if pa.types.is_time32(t) or pa.types.is_time64(t):
        return f"time{t.bit_width}:{t.unit}"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.unit}:{t.tz or '-'}"
    if pa.types.is_duration(t):
        return f"duration:{t.unit}"
    if pa.types.is_dictionary(t):
        return f"dict:{_logical(t.value_type)}:{_logical(t.index_type)}:false"
    raise ValueError(f"Json conversion: Unsupported type: {t}")


def _type_json(t: pa.DataType) -> dict:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": "list" if pa.types.is_list(t) else "large_list", "fields": [_field_json(t.value_field)]}
    if pa.types.is_fixed_size_list(t):
        return {"type": "fixed_size_list", "fields": [_field_json(t.value_field)], "length": t.list_size}
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed_size_binary", "length": t.byte_width}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(t.field(i)) for i in range(t.num_fields)]}
    return {"type": _logical(t)}


def _field_json(f: pa.Field) -> dict:
    out = {"name": f.name, "type": _type_json(f.type), "nullable": f.nullable}
    if f.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in f.metadata.items()}
    return out


def schema_to_json(schema: pa.Schema) -> Dict[str, Any]:
    """`schema` as Lance's JSON form (pylance's ``schema_to_json``): each field's name,
    type (Lance's logical type name, with the fields of a list or struct and the length of a
    fixed-size one), nullability and metadata, and the schema's metadata."""
    out: Dict[str, Any] = {"fields": [_field_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = {k.decode(): v.decode() for k, v in schema.metadata.items()}
    return out


def _type_of(j: dict) -> pa.DataType:
    name = j["type"]
    if name in _LEAF:
        return _LEAF[name]
    if name in ("list", "large_list", "fixed_size_list", "struct"):
        if not j.get("fields"):
            raise ValueError(f"Json conversion: {name} type requires a field")
        fields = [_field_of(f) for f in j["fields"]]
        if name == "struct":
            return pa.struct(fields)
        if name == "fixed_size_list":
            if j.get("length") is None:
                raise ValueError("Json conversion: FixedSizeList type requires a length")
            return pa.list_(fields[0], j["length"])
        return (pa.list_ if name == "list" else pa.large_list)(fields[0])
    if name == "fixed_size_binary":
        if j.get("length") is None:
            raise ValueError("Json conversion: FixedSizeBinary type requires a length")
        return pa.binary(j["length"])
    kind, _, rest = name.partition(":")
    parts = rest.split(":")
    if kind in ("time32", "time64", "duration") and len(parts) == 1 and parts[0] in _UNITS:
        return {"time32": pa.time32, "time64": pa.time64, "duration": pa.duration}[kind](parts[0])
    if kind == "timestamp" and len(parts) >= 2 and parts[0] in _UNITS:
        tz = ":".join(parts[1:])
        return pa.timestamp(parts[0], None if tz == "-" else tz)
    if kind == "decimal" and len(parts) == 3 and parts[0] in ("128", "256"):
        make = pa.decimal128 if parts[0] == "128" else pa.decimal256
        return make(int(parts[1]), int(parts[2]))
    if kind == "dict" and len(parts) == 3:
        return pa.dictionary(_type_of({"type": parts[1]}), _type_of({"type": parts[0]}))
    raise ValueError(f"Json conversion: Unsupported type: {j!r}")


def _field_of(j: dict) -> pa.Field:
    return pa.field(j["name"], _type_of(j["type"]), j["nullable"], metadata=j.get("metadata"))


def json_to_schema(schema_json: Dict[str, Any]) -> pa.Schema:
    """The pyarrow schema of Lance's JSON form (pylance's ``json_to_schema``); a type it does
    not name is a ``ValueError``."""
    return pa.schema([_field_of(f) for f in schema_json["fields"]], metadata=schema_json.get("metadata"))
