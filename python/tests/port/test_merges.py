"""pylance's joins, ported: ``LanceDataset.merge`` (new columns joined on a key, one Merge)
and ``merge_insert`` with a source of some of the table's columns, each step run with
``import lance`` and with ``import lancet as lance`` and the tables compared."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors

ENGINES = {"pylance": lance, "lancet": lancet}


def _sorted(table: pa.Table, key: str) -> dict:
    return table.sort_by([(key, "ascending")]).to_pydict()


def test_merge_joins_new_columns_as_pylance(tmp_path):
    got = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": [1, 2, 3, None, 5], "y": list("abcde")}), uri, max_rows_per_file=2)
        ds.delete("x = 5")
        ds = lib.dataset(uri)
        # repeated keys: the last wins; a NULL key matches a NULL key; 2 matches nothing
        ds.merge(pa.table({"k": [1, 1, 3, None, 9], "z": ["p", "q", "r", "n", "w"], "w": [1.0, 2.0, 3.0, 4.0, 5.0]}),
                 "x", "k")
        ds = lib.dataset(uri)
        got[name] = (ds.version, ds.to_table().to_pydict(), ds.schema.names,
                     type(ds.read_transaction(ds.version).operation).__name__)
        for data, on in ((pa.table({"x": [1]}), "nope"), (pa.table({"q": [1]}), "x"),
                         (pa.table({"x": [1], "y": ["q"]}), "x")):
            with pytest.raises(OSError):
                ds.merge(data, on)
        assert lib.dataset(uri).version == ds.version
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][1]["z"] == ["q", None, "r", "n"]
    # what lancet merged, pylance reads
    assert lance.dataset(str(tmp_path / "lancet")).to_table().to_pydict() == got["lancet"][1]
    with pytest.raises(errors.SchemaMismatchError):
        lancet.dataset(str(tmp_path / "lancet")).merge(pa.table({"x": [1], "y": ["q"]}), "x")


def test_merge_insert_of_some_columns_keeps_the_others_as_pylance(tmp_path):
    got = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        lib.write_dataset(pa.table({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0], "s": ["a", "b", "c"]}), uri)
        steps = []
        r = (lib.dataset(uri).merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.table({"id": [3, 4], "v": [30.0, 40.0]})))
        steps.append((r, _sorted(lib.dataset(uri).to_table(), "id")))
        r = lib.dataset(uri).merge_insert("id").when_matched_update_all().execute(
            pa.table({"id": [1, 2], "v": [10.0, None]}))
        steps.append((r, _sorted(lib.dataset(uri).to_table(), "id")))
        r = lib.dataset(uri).merge_insert("id").when_matched_delete().execute(pa.table({"id": [1]}))
        steps.append((r, _sorted(lib.dataset(uri).to_table(), "id")))
        got[name] = steps
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][0][1]["s"] == ["a", "b", "c", None]
