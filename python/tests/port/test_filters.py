"""pylance's filter functions, ported: each filter answered by lancet and by pylance 14.0.2
on twin tables (strings, lists, numbers, NULLs, a deleted row) gives the same rows."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors


def _rows():
    return pa.table({
        "i": pa.array(range(1, 8), pa.int64()),
        "s": pa.array(["abc", "xbz", None, "aaa", "ABC", "héé", "zzc"]),
        "l": pa.array([[1, 2], [3, None], None, [], [5], [1, 9], [2]], pa.list_(pa.int64())),
        "b": pa.array([b"abc", b"ab", None, b"\x00\xff", b"", b"abd", b"z"], pa.binary()),
        "lb": pa.array([b"abc", b"x", b"y", b"z", b"abc", None, b"q"], pa.large_binary()),
        "f": pa.array([b"ab", b"cd", b"ef", None, b"ab", b"gh", b"ij"], pa.binary(2)),
    })


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    base = tmp_path_factory.mktemp("filters")
    out = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        ds = lib.write_dataset(_rows(), str(base / name), max_rows_per_file=3)
        ds.delete("i = 7")
        out[name] = lib.dataset(str(base / name))
    return out


FILTERS = [
    "regexp_match(s, 'b.')",
    "regexp_like(s, '^a')",
    "regexp_like(s, '^a', 'i')",
    "NOT regexp_like(s, '^a')",
    "contains(s, 'b')",
    "NOT contains(s, 'b')",
    "ends_with(s, 'c')",
    "NOT ends_with(s, 'c')",
    "length(s) = 3",
    "char_length(s) = 3",
    "character_length(s) > 2",
    "NOT (length(s) = 3)",
    "lower(s) = 'abc'",
    "abs(i - 3) = 1",
    "array_length(l) = 2",
    "array_length(l) = 0",
    "array_has(l, 3)",
    "NOT array_has(l, 3)",
    "array_has(l, 3.0)",
    "array_contains(l, 1)",
    "NOT array_contains(l, 4)",
    "array_has_any(l, [1, 3])",
    "NOT array_has_any(l, [1, 9])",
    "array_has_any(l, [])",
    "array_has_all(l, [1, 9])",
    "NOT array_has_all(l, [3])",
    "array_has(l, NULL)",
    "i < 4 AND current_date() > DATE '2000-01-01'",
    "now() > TIMESTAMP '2000-01-01 00:00:00'",
    "current_date() < DATE '2000-01-01' OR i = 2",
    "array_has(l, 1) AND regexp_like(s, 'c$')",
    "b = X'616263'",
    "b = x'616263'",
    "X'616263' = b",
    "b > X'61'",
    "b <> X'616263'",
    "b IN (X'616263', X'00FF')",
    "b NOT IN (X'616263', X'')",
    "b = X''",
    "lb = X'616263'",
    "f = X'6364'",
    "f >= X'6566'",
    "b IS NULL OR b = X'7A'",
]


@pytest.mark.parametrize("filter", FILTERS)
def test_a_filter_answers_as_pylances(twins, filter):
    got = {name: ds.to_table(filter=filter).column("i").to_pylist() for name, ds in twins.items()}
    assert got["lancet"] == got["pylance"], filter
    assert twins["lancet"].count_rows(filter) == len(got["pylance"])


@pytest.mark.parametrize("filter", ["regexp_like(s, '(')", "array_has(s, 1)", "abs(s) = 1",
                                    "no_such_function(s)", "length(s)", "b = 'abc'", "s = X'616263'",
                                    "f = X'63'"])
def test_a_bad_call_is_refused_as_invalid_input(twins, filter):
    with pytest.raises(ValueError):
        twins["pylance"].to_table(filter=filter)
    with pytest.raises(errors.InvalidInputError):
        twins["lancet"].to_table(filter=filter)


@pytest.mark.parametrize("filter", ["b = X'6'", "b = X'zz'"])
def test_a_binary_literal_of_no_bytes_is_refused(twins, filter):
    """Where pylance reads hex digits that spell no bytes as matching nothing, lancet
    refuses the filter (python/README.md, "Where it differs")."""
    assert twins["pylance"].to_table(filter=filter).num_rows == 0
    with pytest.raises(errors.InvalidInputError, match="not a binary literal"):
        twins["lancet"].to_table(filter=filter)
