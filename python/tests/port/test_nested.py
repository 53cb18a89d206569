"""pylance's nested fields, ported: a field inside a struct column named by its path
(``s.x``, ```outer field`.`inner field```) in filters, projections, expressions and takes,
each run with ``import lance`` and with ``import lancet as lance`` on twin tables."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors

ENGINES = {"pylance": lance, "lancet": lancet}

STRUCT = pa.struct([("x", pa.int64()), ("y", pa.string()), ("flag", pa.bool_()),
                    ("inner", pa.struct([("z", pa.float64())]))])


def _rows():
    return pa.table({
        "id": pa.array(range(1, 8), pa.int64()),
        "s": pa.array([{"x": 1, "y": "a", "flag": True, "inner": {"z": 0.5}},
                       {"x": 5, "y": None, "flag": False, "inner": None},
                       None,
                       {"x": None, "y": "b", "flag": None, "inner": {"z": None}},
                       {"x": 7, "y": "ab", "flag": True, "inner": {"z": 2.5}},
                       {"x": 2, "y": "c", "flag": False, "inner": {"z": 1.0}},
                       {"x": 9, "y": "d", "flag": True, "inner": {"z": 3.0}}], STRUCT),
        "outer field": pa.array([{"inner field": i} for i in range(7)]),
    })


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    base = tmp_path_factory.mktemp("nested")
    out = {}
    for name, lib in ENGINES.items():
        ds = lib.write_dataset(_rows(), str(base / name), max_rows_per_file=3)
        ds.delete("id = 7")
        out[name] = lib.dataset(str(base / name))
    return out


@pytest.mark.parametrize("filter", [
    "s.x > 1", "s.x = 1", "s.y IS NULL", "s.y IS NOT NULL", "s.flag", "NOT s.flag", "s.flag = true",
    "`outer field`.`inner field` = 2", "s IS NULL", "s.x + 1 = 2", "s.x IN (1, 5)", "s.y LIKE 'a%'",
    "s.inner.z > 1.0", "s.inner.z IS NULL", "`s`.`x` >= 5 AND id < 6", "s.x = id OR s.inner.z = 0.5",
])
def test_a_filter_on_a_nested_field_answers_as_pylances(twins, filter):
    got = {name: ds.to_table(filter=filter).column("id").to_pylist() for name, ds in twins.items()}
    assert got["lancet"] == got["pylance"], filter
    assert twins["lancet"].count_rows(filter) == len(got["pylance"])


@pytest.mark.parametrize("columns", [
    ["s.x"], ["id", "s.y"], ["`outer field`.`inner field`"], {"q": "s.x * 2"}, ["s.x", "s"],
    ["s.inner.z", "id"], ["s.inner"],
])
def test_a_nested_field_projects_as_pylances(twins, columns):
    got = {name: (ds.to_table(columns=columns, filter="id > 1"), ds.scanner(columns=columns).projected_schema)
           for name, ds in twins.items()}
    assert got["lancet"][0].to_pydict() == got["pylance"][0].to_pydict()
    assert got["lancet"][0].schema.names == got["pylance"][0].schema.names
    assert [f.type for f in got["lancet"][0].schema] == [f.type for f in got["pylance"][0].schema]
    assert got["lancet"][1].names == got["pylance"][1].names


@pytest.mark.parametrize("columns", [["s.x"], ["id", "s.y", "s.x"], ["s.inner.z"], ["s", "s.x"]])
def test_a_take_of_a_nested_field_returns_its_struct_as_pylances(twins, columns):
    got = {name: ds.take([0, 2, 4], columns=columns).to_pydict() for name, ds in twins.items()}
    assert got["lancet"] == got["pylance"]


@pytest.mark.parametrize("bad", ["s.nope", "nope.x", "id.x"])
def test_a_path_to_no_field_is_refused(twins, bad):
    with pytest.raises(ValueError):
        twins["pylance"].to_table(filter=f"{bad} = 1")
    with pytest.raises(errors.InvalidInputError):
        twins["lancet"].to_table(filter=f"{bad} = 1")
    with pytest.raises(errors.InvalidInputError):
        twins["lancet"].to_table(columns=[bad])


def test_a_btree_on_a_nested_field_answers_either_engines_filters(tmp_path):
    table = pa.table({"id": range(100), "s": pa.array([{"x": i % 10, "y": str(i)} for i in range(100)])})
    for writer, reader in ((lance, lancet), (lancet, lance)):
        uri = str(tmp_path / writer.__name__)
        ds = writer.write_dataset(table, uri, max_rows_per_file=30)
        ds.create_scalar_index("s.x", "BTREE")
        ds = writer.dataset(uri)
        ds.insert(pa.table({"id": [1000], "s": [{"x": 3, "y": "new"}]}))
        ds = writer.dataset(uri)
        ds.optimize.optimize_indices()
        got = {lib.__name__: (lib.dataset(uri).to_table(filter="s.x = 3").column("id").to_pylist(),
                              [(d.name, d.field_names) for d in lib.dataset(uri).describe_indices()])
               for lib in (writer, reader)}
        assert got["lance"] == got["lancet"]
        assert got["lancet"] == ([3, 13, 23, 33, 43, 53, 63, 73, 83, 93, 1000], [("s.x_idx", ["s.x"])])
        plan = lancet.dataset(uri).scanner(filter="s.x = 3").analyze_plan()
        assert "indexes_answered={s.x_idx: 5 fragments}" in plan and "read_directly=0" in plan, plan
