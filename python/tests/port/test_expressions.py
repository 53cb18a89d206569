"""Filters engines push as pyarrow Expressions, translated from their Substrait form
(``lancet._substrait``): every form is pushed down as Lance SQL or refused by rule and then
applied by pyarrow, and either way the rows are pyarrow's own answer and pylance's."""

import datetime

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lancet
from lancet._substrait import Unsupported, to_sql

F = pc.field

STRUCT = pa.struct([("a", pa.int32()), ("inner", pa.struct([("z", pa.string())]))])


def _rows():
    n = 12
    return pa.table({
        "x": pa.array([None if i == 3 else i for i in range(n)], pa.int64()),
        "y": pa.array([i * 0.5 if i != 5 else None for i in range(n)], pa.float64()),
        "s": pa.array([None if i == 4 else f"s{i % 5}'" for i in range(n)]),
        "b": pa.array([None if i == 7 else i % 2 == 0 for i in range(n)]),
        "i": pa.array(range(n), pa.int32()),
        "d": pa.array([datetime.date(2021, 1, 1 + i) for i in range(n)]),
        "ts": pa.array([datetime.datetime(2020, 1, 1, i) for i in range(n)], pa.timestamp("us", "UTC")),
        "dec": pa.array([i for i in range(n)], pa.decimal128(10, 2)),
        "bin": pa.array([bytes([97 + i % 3]) for i in range(n)]),
        "st": pa.array([{"a": i % 4, "inner": {"z": f"z{i % 2}"}} if i != 6 else None for i in range(n)], STRUCT),
    })


# (expression, whether lancet pushes it down as SQL, what pylance 14.0.2 does with it:
# answers as pyarrow, answers otherwise, or refuses it)
SAME, WRONG, REFUSES = "same", "wrong", "refuses"
EXPRESSIONS = [
    (F("x") == 5, True, SAME), (F("x") != 5, True, SAME), (F("x") <= 4, True, SAME),
    (F("x") > -1, True, SAME), ((F("x") > 1) & (F("y") < 3.5), True, SAME),
    ((F("x") < 2) | (F("s") == "s3'"), True, SAME), (~(F("x") > 4), True, SAME),
    (F("s").is_null(), True, SAME), (F("s").is_valid(), True, SAME), (F("b"), True, SAME),
    (~F("b"), True, SAME), (F("x").isin([1, 2, 9]), True, SAME), (F("s").isin(["s1'", "s2'"]), True, SAME),
    (F("x") + 1 > 5, True, SAME), (F("x") * 2 <= 8, True, SAME), (F("x") - 3 == 0, True, SAME),
    (pc.abs(F("x") - 6) < 2, True, SAME), (pc.negate(F("x")) < -8, True, SAME), (F("i") == 3, True, SAME),
    (F("d") >= datetime.date(2021, 1, 6), True, SAME),
    (F("ts") < datetime.datetime(2020, 1, 1, 4, tzinfo=datetime.timezone.utc), True, SAME),
    (F("dec") > pa.scalar(3, pa.decimal128(10, 2)), True, SAME), (F("bin") == b"b", True, SAME),
    (pc.starts_with(F("s"), "s1"), True, SAME), (pc.ends_with(F("s"), "2'"), True, SAME),
    (pc.match_substring(F("s"), "3"), True, SAME),
    (F("x").cast(pa.float64(), safe=False) > 4.5, True, SAME),
    # nested fields: pylance refuses them in pushed filters
    (F("st", "a") == 2, True, REFUSES), (F("st", "inner", "z") == "z1", True, REFUSES),
    # refused by rule and answered by pyarrow; pylance drops the NULL matching and the
    # case-insensitivity the Substrait form does not carry, and answers otherwise
    (F("x").isin([1, None]), False, WRONG), (pc.starts_with(F("s"), "S1", ignore_case=True), False, WRONG),
    (F("y") == float("nan"), False, SAME), (pc.utf8_lower(F("s")) == "s1'", False, REFUSES),
    (F("i") == 3.5, False, REFUSES), (pc.is_nan(F("y")), False, SAME),
    (pc.if_else(F("b"), F("x"), 0) > 3, False, SAME),
]


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    base = tmp_path_factory.mktemp("expressions")
    out = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        ds = lib.write_dataset(_rows(), str(base / name), max_rows_per_file=5)
        ds.create_scalar_index("x", "BTREE")
        out[name] = lib.dataset(str(base / name))
    return out


@pytest.mark.parametrize("expression,pushed,pylance", EXPRESSIONS, ids=[str(e) for e, _, _ in EXPRESSIONS])
def test_an_expression_answers_as_pyarrow(twins, expression, pushed, pylance):
    want = sorted(_rows().filter(expression).column("i").to_pylist())
    scanner = twins["lancet"].scanner(filter=expression)
    assert (scanner._sql is not None) == pushed, scanner._sql
    assert sorted(scanner.to_table().column("i").to_pylist()) == want
    assert twins["lancet"].count_rows(filter=expression) == len(want)
    if pylance == REFUSES:
        with pytest.raises(Exception):
            twins["pylance"].to_table(filter=expression)
        return
    theirs = sorted(twins["pylance"].to_table(filter=expression).column("i").to_pylist())
    assert (theirs == want) == (pylance == SAME), theirs


def test_an_indexed_column_is_answered_by_its_btree(twins):
    plan = twins["lancet"].scanner(filter=(F("x") == 5) | F("x").isin([7, 8])).analyze_plan()
    assert "indexes_answered={x_idx: 3 fragments}" in plan and "output_rows=3" in plan, plan


def test_the_sql_written_for_each_form():
    s = _rows().schema
    assert to_sql((F("x") > 1) & ~F("b"), s) == "((`x` > 1) AND (NOT `b`))"
    assert to_sql(F("s") == "it's", s) == "(`s` = 'it''s')"
    assert to_sql(F("st", "inner", "z").isin(["a", "b"]), s) == "(`st`.`inner`.`z` IN ('a', 'b'))"
    assert to_sql(F("d") < datetime.date(2020, 2, 29), s) == "(`d` < DATE '2020-02-29')"
    assert to_sql(F("bin") != b"\x00\xff", s) == "(`bin` <> X'00ff')"
    for refused in (F("x").isin([1, None]), F("y") == float("inf"), pc.utf8_lower(F("s")) == "a",
                    F("nope") == 1):
        with pytest.raises(Unsupported):
            to_sql(refused, s)


@pytest.mark.parametrize("data", [b"", b"\x0a\xff", b"\x1a\x05\x0a\x03\x1a\x01", bytes(range(256))])
def test_hostile_bytes_are_refused_not_crashed_on(data, monkeypatch):
    class Fake:
        def to_substrait(self, schema):
            return data

    with pytest.raises(Unsupported):
        to_sql(Fake(), pa.schema([("x", pa.int64())]))
