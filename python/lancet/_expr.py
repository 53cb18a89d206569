"""pyarrow compute expressions (what DuckDB, Polars and DataFusion push down) as Lance
filter SQL.

pyarrow offers no structured view of an :class:`pyarrow.compute.Expression`, only its
text (``(x == 5)``, ``((a > 1) and (b < 2.5))``, ``is_in(x, {value_set=int64:[1, 2]...})``);
this module parses that text for the forms it knows. Anything else raises
:class:`Unsupported`, and the caller then evaluates the expression with pyarrow itself
over the rows read, so an answer never depends on what could be pushed down.
"""

from __future__ import annotations

import re

__all__ = ["to_sql", "Unsupported"]


class Unsupported(Exception):
    """An expression this module does not translate (the caller filters with pyarrow)."""


_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<date>\d{4}-\d{2}-\d{2}(?![\d:]))
    | (?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|,|\{|\}|=|\[|\]|:)
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)

_COMPARE = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _tokens(text: str):
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise Unsupported(f"cannot read {text[pos:pos + 20]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _string(token: str) -> str:
    """A pyarrow string literal (double-quoted, backslash escapes) as a SQL literal."""
    body = re.sub(r"\\(.)", r"\1", token[1:-1])
    return "'" + body.replace("'", "''") + "'"


class _Parser:
    def __init__(self, text: str, columns: set[str]):
        self.toks = _tokens(text)
        self.i = 0
        self.columns = columns

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, value=None):
        tok = self.peek()
        if tok[0] is None or (value is not None and tok[1] != value):
            raise Unsupported(f"expected {value!r}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> str:
        out = self.expr()
        if self.i != len(self.toks):
            raise Unsupported("trailing text")
        return out

    def expr(self) -> str:
        kind, value = self.peek()
        if value == "(":
            self.take("(")
            left = self.expr()
            kind, op = self.peek()
            if op == ")":
                self.take(")")
                return left
            self.take()
            right = self.expr()
            self.take(")")
            if op in ("and", "or"):
                return f"({left} {op.upper()} {right})"
            if op in _COMPARE:
                return f"({left} {_COMPARE[op]} {right})"
            raise Unsupported(f"operator {op!r}")
        if kind == "name":
            if value in ("true", "false"):
                self.take()
                return value.upper()
            if value == "null":
                raise Unsupported("a NULL comparison")
            nxt = self.toks[self.i + 1][1] if self.i + 1 < len(self.toks) else None
            if nxt == "(":
                return self.call()
            self.take()
            if value not in self.columns:
                raise Unsupported(f"field {value!r}")
            return value
        if kind == "str":
            self.take()
            return _string(value)
        if kind == "num":
            self.take()
            return value
        if kind == "date":
            self.take()
            return f"DATE '{value}'"
        raise Unsupported(f"token {value!r}")

    def options(self) -> dict:
        """`{key=value, ...}` as raw token lists."""
        self.take("{")
        opts = {}
        while self.peek()[1] != "}":
            key = self.take()[1]
            self.take("=")
            depth, start = 0, self.i
            while True:
                v = self.peek()[1]
                if v is None:
                    raise Unsupported("unterminated options")
                if v in ("[", "(", "{"):
                    depth += 1
                elif v in ("]", ")", "}"):
                    if depth == 0:
                        break
                    depth -= 1
                elif v == "," and depth == 0:
                    break
                self.take()
            opts[key] = self.toks[start:self.i]
            if self.peek()[1] == ",":
                self.take(",")
        self.take("}")
        return opts

    def call(self) -> str:
        name = self.take()[1]
        self.take("(")
        arg = self.expr()
        opts = {}
        if self.peek()[1] == ",":
            self.take(",")
            opts = self.options()
        self.take(")")
        if name == "invert":
            return f"(NOT {arg})"
        if name == "is_null":
            if [t[1] for t in opts.get("nan_is_null", [])] not in ([], ["false"]):
                raise Unsupported("is_null with nan_is_null")
            return f"({arg} IS NULL)"
        if name == "is_valid":
            return f"({arg} IS NOT NULL)"
        if name == "is_in":
            toks = opts.get("value_set", [])
            matching = [t[1] for t in opts.get("null_matching_behavior", [])]
            if matching not in (["MATCH"], ["SKIP"], []):
                raise Unsupported("is_in null matching")
            # type : [ v, v, ... ]
            if len(toks) < 4 or toks[1][1] != ":" or toks[2][1] != "[" or toks[-1][1] != "]":
                raise Unsupported("is_in value set")
            values = []
            for kind, v in toks[3:-1]:
                if v == ",":
                    continue
                if kind == "num":
                    values.append(v)
                elif kind == "str":
                    values.append(_string(v))
                else:
                    raise Unsupported(f"is_in value {v!r}")
            if not values:
                return "FALSE"
            return f"({arg} IN ({', '.join(values)}))"
        raise Unsupported(f"function {name!r}")


def to_sql(expression, columns) -> str:
    """The Lance filter equal to `expression` (a pyarrow Expression) over a table with
    `columns`; raises :class:`Unsupported` for anything it does not translate."""
    return _Parser(str(expression), set(columns)).parse()
