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


def schema_to_json(schema: pa.Schema) -> Dict[str, Any]:
    """Not implemented by lancet: pylance's JSON form of a schema."""
    from .errors import UnsupportedError
    raise UnsupportedError("lancet.schema.schema_to_json: lancet does not implement pylance's JSON schemas")


def json_to_schema(schema_json: Dict[str, Any]) -> pa.Schema:
    """Not implemented by lancet: pylance's JSON form of a schema."""
    from .errors import UnsupportedError
    raise UnsupportedError("lancet.schema.json_to_schema: lancet does not implement pylance's JSON schemas")
