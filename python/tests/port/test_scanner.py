"""pylance's scanner, ported: projections as SQL expressions and ``_rowoffset``, each step
run with ``import lance`` and with ``import lancet as lance`` on twin tables."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors

ENGINES = {"pylance": lance, "lancet": lancet}


def _rows():
    return pa.table({"a": pa.array(range(1, 11), pa.int64()),
                     "b": pa.array([f"s{i}" for i in range(10)]),
                     "c": pa.array([None if i % 4 == 0 else i * 1.5 for i in range(10)])})


@pytest.fixture
def twins(tmp_path):
    """The same table written and edited by each engine: three fragments, deletions in two."""
    out = {}
    for name, lib in ENGINES.items():
        ds = lib.write_dataset(_rows(), str(tmp_path / name), max_rows_per_file=4)
        ds.delete("a = 1 OR a = 6")
        out[name] = lib.dataset(str(tmp_path / name))
    return out


def _same(twins, **scan):
    got = {name: ds.to_table(**scan) for name, ds in twins.items()}
    assert got["lancet"].schema == got["pylance"].schema, scan
    assert got["lancet"].to_pylist() == got["pylance"].to_pylist(), scan
    return got["lancet"]


@pytest.mark.parametrize("scan", [
    {"columns": {"a2": "a * 2", "b": "b", "u": "upper(b)", "cc": "c + 1"}},
    {"columns": {"a2": "a * 2"}, "filter": "a > 5", "with_row_id": True},
    {"columns": {"a2": "a * 2", "a": "a"}, "limit": 3, "offset": 2},
    {"columns": {"s": "concat(b, '!')"}, "filter": "c IS NULL"},
    {"columns": ["a", "_rowoffset"]},
    {"columns": ["a", "_rowoffset"], "filter": "a > 4"},
    {"columns": ["_rowoffset", "a", "_rowid"]},
    {"columns": ["_rowoffset"], "filter": "b = 's9'"},
    {"columns": ["a", "_rowoffset"], "limit": 2, "offset": 3},
])
def test_projections_answer_as_pylances(twins, scan):
    _same(twins, **scan)


def test_a_row_offset_is_the_position_take_reads(twins):
    mine = twins["lancet"]
    t = mine.to_table(columns=["a", "_rowoffset"], filter="a % 2 = 0")
    assert mine.take(t.column("_rowoffset").to_pylist(), columns=["a"]).column("a") == t.column("a")


def test_the_projected_schema_is_known_before_reading(twins):
    for ds in twins.values():
        s = ds.scanner(columns={"a2": "a * 2", "u": "upper(b)"}).projected_schema
        assert s.names == ["a2", "u"]
        assert s.field("a2").type == pa.int64() and s.field("u").type == pa.string()


def test_an_expression_over_a_missing_column_is_refused_as_pylance_refuses(twins):
    for name, ds in twins.items():
        with pytest.raises(ValueError):
            ds.to_table(columns={"g": "nope + 1"})
    with pytest.raises(errors.InvalidInputError):
        twins["lancet"].to_table(columns={"g": "a +"})
