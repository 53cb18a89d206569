"""pyarrow compute expressions (what DuckDB, Polars, DataFusion and Ray push down) as Lance
filter SQL, translated from their Substrait form by structure.

pyarrow serialises an :class:`pyarrow.compute.Expression` as a Substrait
``ExtendedExpression`` (``Expression.to_substrait(schema)``, the form pylance accepts too);
this module reads that message (a small protobuf reader: the few Substrait messages a filter
uses, by field number) and writes each node as Lance SQL by rule:

- field references by position, named through the base schema (nested fields by path);
- literals: booleans, integers, floats (not NaN or infinities), strings, binary, dates,
  timestamps, decimals; a typed NULL;
- ``equal``, ``not_equal``, ``lt``, ``lte``, ``gt``, ``gte``; ``and``, ``or``, ``not``;
  ``is_null``, ``is_not_null``; ``add``, ``subtract``, ``multiply``, ``divide``, ``negate``,
  ``abs``; ``starts_with``, ``ends_with``, ``contains`` (case-sensitive);
- a list membership (``is_in``) without NULL among the values (pyarrow's NULL matching is
  not in the Substrait form, so a NULL value is not translated);
- casts to booleans, integers, floats, strings, dates.

Anything else raises :class:`Unsupported`: the caller evaluates that expression with
pyarrow over the rows read, so an answer never depends on what is pushed down.
"""

from __future__ import annotations

import datetime as _dt
import math
import struct
from decimal import Decimal
from typing import Dict, List, Tuple

import pyarrow as pa

__all__ = ["to_sql", "Unsupported"]


class Unsupported(Exception):
    """An expression this module does not translate (the caller filters with pyarrow)."""


# --- protobuf wire format -------------------------------------------------------------------

Message = Dict[int, List[object]]


def _varint(data: bytes, pos: int) -> Tuple[int, int]:
    out = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise Unsupported("a truncated Substrait message")
        b = data[pos]
        pos += 1
        out |= (b & 0x7F) << shift
        if not b & 0x80:
            return out, pos
        shift += 7


def _message(data: bytes) -> Message:
    """A protobuf message's fields by number: varints as ints, fixed64/fixed32 as their 8/4
    bytes, length-delimited fields as bytes (decoded further by whoever knows their type)."""
    out: Message = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(data, pos)
            value, pos = data[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise Unsupported(f"protobuf wire type {wire}")
        if pos > len(data):
            raise Unsupported("a truncated Substrait message")
        out.setdefault(number, []).append(value)
    return out


def _one(m: Message, number: int, default=None):
    values = m.get(number)
    return values[-1] if values else default


def _sub(m: Message, number: int) -> Message:
    raw = _one(m, number)
    return _message(raw) if raw is not None else {}


def _int64(v: int) -> int:
    """A varint as a signed 64-bit integer (two's complement)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def _text(raw: bytes) -> str:
    return raw.decode("utf-8")


# --- the base schema: names of fields by position -----------------------------------------

class _Field:
    def __init__(self, name: str, children: List["_Field"]):
        self.name, self.children = name, children


def _struct_fields(t: Message) -> List[Message]:
    """A Substrait struct type's field types."""
    return [_message(x) for x in _sub(t, 25).get(1, [])]


def _fields(names: List[str], types: List[Message], at: List[int]) -> List[_Field]:
    """The fields of a struct of `types` whose names start at ``names[at[0]]``, with the
    children of struct fields: the names run depth first through nested structs (pyarrow
    names no field inside a list or map)."""
    out = []
    for t in types:
        if at[0] >= len(names):
            raise Unsupported("the base schema names fewer fields than it has")
        name = names[at[0]]
        at[0] += 1
        children = _fields(names, _struct_fields(t), at) if 25 in t else []
        out.append(_Field(name, children))
    return out


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# --- literals ---------------------------------------------------------------------------------

_EPOCH = _dt.datetime(1970, 1, 1)


def _timestamp(value: int, precision: int) -> str:
    micros = value * 10 ** (6 - precision) if precision <= 6 else None
    if micros is None:
        if value % 10 ** (precision - 6):
            raise Unsupported("a timestamp finer than microseconds")
        micros = value // 10 ** (precision - 6)
    t = _EPOCH + _dt.timedelta(microseconds=micros)
    return f"TIMESTAMP '{t.isoformat(sep=' ', timespec='microseconds')}'"


def _float(raw: bytes, fmt: str) -> str:
    (v,) = struct.unpack(fmt, raw)
    if math.isnan(v) or math.isinf(v):
        raise Unsupported("a NaN or infinite literal (pyarrow and SQL order them differently)")
    return repr(float(v))


def _literal(lit: Message) -> str:
    if 1 in lit:
        return "TRUE" if _one(lit, 1) else "FALSE"
    for number in (2, 3, 5, 7):  # i8, i16, i32, i64
        if number in lit:
            return str(_int64(_one(lit, number)))
    if 10 in lit:
        return _float(_one(lit, 10), "<f")
    if 11 in lit:
        return _float(_one(lit, 11), "<d")
    if 12 in lit:
        return "'" + _text(_one(lit, 12)).replace("'", "''") + "'"
    if 13 in lit:
        return "X'" + bytes(_one(lit, 13)).hex() + "'"
    if 16 in lit:
        days = _int64(_one(lit, 16))
        return f"DATE '{(_dt.date(1970, 1, 1) + _dt.timedelta(days=days)).isoformat()}'"
    for number in (14, 27):  # timestamp, timestamp with a time zone (UTC): microseconds
        if number in lit:
            return _timestamp(_int64(_one(lit, number)), 6)
    for number in (34, 35):  # precision timestamp (with a time zone: UTC)
        if number in lit:
            p = _sub(lit, number)
            return _timestamp(_int64(_one(p, 2, 0)), _one(p, 1, 0))
    if 24 in lit:  # decimal: 16 little-endian bytes, precision, scale
        d = _sub(lit, 24)
        raw = bytes(_one(d, 1, b""))
        value = int.from_bytes(raw, "little", signed=True)
        return str(Decimal(value).scaleb(-_one(d, 3, 0)))
    if 29 in lit:  # a typed NULL
        return "NULL"
    raise Unsupported("a literal of this type")


# --- expressions ------------------------------------------------------------------------------

_COMPARE = {"equal": "=", "not_equal": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_ARITH = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_STRING = {"starts_with", "ends_with", "contains"}
_CASTS = {1: "BOOLEAN", 2: "TINYINT", 3: "SMALLINT", 5: "INT", 7: "BIGINT", 10: "FLOAT",
          11: "DOUBLE", 12: "STRING", 16: "DATE"}


class _Translator:
    def __init__(self, functions: Dict[int, str], fields: List[_Field]):
        self.functions, self.fields = functions, fields

    def field(self, ref: Message) -> str:
        if 4 not in ref:
            raise Unsupported("a field reference not rooted at the row")
        segment = _sub(ref, 1)
        fields, path = self.fields, []
        while segment:
            if 2 not in segment:
                raise Unsupported("a list or map element reference")
            step = _sub(segment, 2)
            i = _int64(_one(step, 1, 0))
            if not 0 <= i < len(fields):
                raise Unsupported(f"field {i} is not in the schema")
            path.append(fields[i].name)
            fields = fields[i].children
            segment = _sub(step, 2)
        if not path:
            raise Unsupported("a reference to the whole row")
        return ".".join(_quote(p) for p in path)

    def args(self, call: Message) -> List[str]:
        out = []
        for raw in call.get(4, []):
            arg = _message(raw)
            if 3 not in arg:
                raise Unsupported("a function argument that is not a value")
            out.append(self.expr(_sub(arg, 3)))
        return out

    def call(self, call: Message) -> str:
        name = self.functions.get(_one(call, 1, 0))
        if name is None:
            raise Unsupported("a function the message does not declare")
        options = {_text(_one(o, 1, b"")): [_text(p) for p in o.get(2, [])]
                   for o in (_message(x) for x in call.get(5, []))}
        args = self.args(call)
        if name in _COMPARE and len(args) == 2:
            return f"({args[0]} {_COMPARE[name]} {args[1]})"
        if name in ("and", "or") and args:
            return "(" + f" {name.upper()} ".join(args) + ")"
        if name == "not" and len(args) == 1:
            return f"(NOT {args[0]})"
        if name in ("is_null", "is_not_null") and len(args) == 1:
            return f"({args[0]} IS {'NOT ' if name == 'is_not_null' else ''}NULL)"
        if name in _ARITH and len(args) == 2:
            return f"({args[0]} {_ARITH[name]} {args[1]})"
        if name == "negate" and len(args) == 1:
            return f"(- {args[0]})"
        if name == "abs" and len(args) == 1:
            return f"abs({args[0]})"
        if name in _STRING and len(args) == 2:
            if options.get("case_sensitivity", ["CASE_SENSITIVE"]) != ["CASE_SENSITIVE"]:
                raise Unsupported(f"{name} ignoring case")
            return f"{name}({args[0]}, {args[1]})"
        raise Unsupported(f"the function {name}")

    def expr(self, e: Message) -> str:
        if 1 in e:
            return _literal(_sub(e, 1))
        if 2 in e:
            return self.field(_sub(e, 2))
        if 3 in e:
            return self.call(_sub(e, 3))
        if 8 in e:  # singular_or_list
            s = _sub(e, 8)
            options = [_message(x) for x in s.get(2, [])]
            if any(1 in o and 29 in _sub(o, 1) for o in options):
                raise Unsupported("a NULL in a list of values (pyarrow's NULL matching)")
            if not options:
                raise Unsupported("an empty list of values")
            values = ", ".join(self.expr(o) for o in options)
            return f"({self.expr(_sub(s, 1))} IN ({values}))"
        if 11 in e:  # cast
            c = _sub(e, 11)
            target = _sub(c, 1)
            kinds = [k for k in target if k in _CASTS]
            if len(kinds) != 1:
                raise Unsupported("a cast to this type")
            return f"CAST({self.expr(_sub(c, 2))} AS {_CASTS[kinds[0]]})"
        raise Unsupported("an expression of this kind")


def to_sql(expression, schema: pa.Schema) -> str:
    """`expression` (a pyarrow Expression over `schema`) as Lance filter SQL, by its Substrait
    form; :class:`Unsupported` when some part has no translation."""
    try:
        data = bytes(expression.to_substrait(schema))
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise Unsupported(f"pyarrow has no Substrait form for it: {e}") from e
    top = _message(data)
    functions = {}
    for raw in top.get(2, []):
        declaration = _message(raw)
        if 3 in declaration:
            f = _sub(declaration, 3)
            functions[_one(f, 2, 0)] = _text(_one(f, 3, b"")).split(":")[0]
    base = _sub(top, 4)
    names = [_text(n) for n in base.get(1, [])]
    types = [_message(t) for t in _sub(base, 2).get(1, [])]
    fields = _fields(names, types, [0])
    refs = top.get(3, [])
    if len(refs) != 1:
        raise Unsupported("not one expression")
    ref = _message(refs[0])
    if 1 not in ref:
        raise Unsupported("a measure, not an expression")
    return _Translator(functions, fields).expr(_sub(ref, 1))
