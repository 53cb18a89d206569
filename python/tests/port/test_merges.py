"""pylance's joins, ported: ``LanceDataset.merge`` (new columns joined on a key, one Merge)
and ``merge_insert`` with a source of some of the table's columns, each step run with
``import lance`` and with ``import lancet as lance`` and the tables compared."""

import dataclasses
import json

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


def _reason(e: Exception) -> str:
    """An error's message without pylance's prefix, source location and Rust type names."""
    return str(e).removeprefix("Invalid user input: ").split(", /")[0].split(": expected")[0]


def _files(meta) -> list:
    """A fragment record's data files as what they hold (paths differ between engines)."""
    return [(f.fields, f.column_indices) for f in meta.files]


def test_fragment_merge_joins_one_fragment_as_pylance(tmp_path):
    got = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": [1, 2, 3, None], "y": list("abcd")}), uri, max_rows_per_file=2)
        ds.delete("x = 2")
        ds = lib.dataset(uri)
        new = pa.table({"x": [3, 1, 3, None], "z": ["q", "r", "s", "t"]})
        merged, schema = [], None
        for f in ds.get_fragments():
            f, schema = f.merge(new, "x")
            merged.append(f)
        records = [(_files(f), f.physical_rows, f.num_deletions) for f in merged]
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Merge(merged, schema), read_version=ds.version)
        errors_seen = []
        frag = ds.get_fragment(0)
        for data, on, right_on in ((new, "w", None), (new, "x", "k"), (pa.table({"x": [1], "y": ["q"]}), "x", None),
                                   (pa.table({"x": pa.array([1], pa.int32()), "v": [1]}), "x", None)):
            with pytest.raises(ValueError) as e:
                frag.merge(data, on, right_on)
            errors_seen.append(_reason(e.value))
        got[name] = (records, ds.version, ds.to_table().to_pydict(), errors_seen)
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][2]["z"] == ["r", "s", "t"]
    assert lance.dataset(str(tmp_path / "lancet")).to_table().to_pydict() == got["lancet"][2]


def test_update_columns_replaces_values_in_one_fragment_as_pylance(tmp_path):
    got = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"id": pa.array([1, 2, 3, 3], pa.int32()), "name": list("abcd"),
                                         "value": [10, 20, 30, 40]}), uri)
        steps = []
        # repeated keys: the last wins; rows no key matches keep their values
        f, modified = ds.get_fragment(0).update_columns(
            pa.table({"id": pa.array([1, 3, 3], pa.int32()), "value": [100, 300, 301]}), left_on="id")
        steps.append((_files(f), modified))
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Update(updated_fragments=[f], fields_modified=modified),
                                     read_version=ds.version)
        ds.delete("id = 2")
        ds = lib.dataset(uri)
        # by row address, then two columns at once: a file left with only tombstones goes
        f, modified = ds.get_fragment(0).update_columns(
            pa.table({"_rowaddr": pa.array([0, 2], pa.uint64()), "name": ["Z", "Y"]}), left_on="_rowaddr")
        steps.append((_files(f), modified))
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Update(updated_fragments=[f], fields_modified=modified),
                                     read_version=ds.version)
        f, modified = ds.get_fragment(0).update_columns(
            pa.table({"id": pa.array([1], pa.int32()), "name": ["Q"], "value": [5]}), left_on="id")
        steps.append((_files(f), modified))
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Update(updated_fragments=[f], fields_modified=modified),
                                     read_version=ds.version)
        steps.append(ds.to_table().to_pydict())
        refused = []
        frag = ds.get_fragment(0)
        for data, kw in ((pa.table({"id": pa.array([1], pa.int32()), "value": [1]}), {"left_on": "nope"}),
                         (pa.table({"id": pa.array([1], pa.int32()), "value": [1]}), {"left_on": "id", "right_on": "x"}),
                         (pa.table({"id": pa.array([1], pa.int32()), "zz": [1]}), {"left_on": "id"}),
                         (pa.table({"id": [1], "value": [1]}), {"left_on": "id"}),
                         (pa.table({"id": pa.array([1], pa.int32()), "_rowid": pa.array([1], pa.uint64())}),
                          {"left_on": "id"})):
            with pytest.raises(ValueError) as e:
                frag.update_columns(data, **kw)
            refused.append(_reason(e.value))
        with pytest.raises(RuntimeError):  # a value of another type: pylance's schema error
            frag.update_columns(pa.table({"id": pa.array([1], pa.int32()), "value": pa.array([1], pa.int32())}),
                                left_on="id")
        steps.append(refused)
        got[name] = (steps, ds.version)
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][0][3] == {"id": [1, 3, 3], "name": ["Q", "Y", "d"], "value": [5, 301, 301]}
    assert lance.dataset(str(tmp_path / "lancet")).to_table().to_pydict() == got["lancet"][0][3]


def test_update_columns_with_offsets_as_pylance(tmp_path):
    data = pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int32()), "value": list(range(6))})
    got = {}
    for name, lib in ENGINES.items():
        for stable in (False, True):
            uri = str(tmp_path / f"{name}{stable}")
            ds = lib.write_dataset(data, uri, enable_stable_row_ids=stable)
            ds.delete("id = 4")
            ds = lib.dataset(uri)
            # the matched physical offsets (a deleted row matches nothing)
            f, modified, offsets = ds.get_fragment(0).update_columns(
                pa.table({"id": pa.array([2, 4, 6, 9], pa.int32()), "value": [20, 40, 60, 90]}),
                left_on="id", with_offsets=True)
            assert isinstance(offsets, bytes)
            count, matched = lancet._lancet.bitmap_offsets(offsets, 100)  # pylance's bytes too
            assert count == len(matched)
            # an offset key naming a fragment the Update does not rewrite is refused
            with pytest.raises(OSError, match="not in updated_fragments"):
                lib.LanceDataset.commit(uri, lib.LanceOperation.Update(
                    updated_fragments=[f], fields_modified=modified, update_mode="rewrite_columns",
                    updated_fragment_offsets={7: offsets}), read_version=ds.version)
            # an empty bitmap under a stray key too: the offsets are judged as given
            with pytest.raises(OSError, match="not in updated_fragments"):
                lib.LanceDataset.commit(uri, lib.LanceOperation.Update(
                    updated_fragments=[f], fields_modified=modified, update_mode="rewrite_columns",
                    updated_fragment_offsets={7: lancet._lancet.offsets_bitmap([])}),
                    read_version=ds.version)
            op = lib.LanceOperation.Update(updated_fragments=[f], fields_modified=modified,
                                           update_mode="rewrite_columns",
                                           updated_fragment_offsets={0: offsets})
            ds = lib.LanceDataset.commit(uri, op, read_version=ds.version)
            updated_at = ds.get_fragment(0).metadata.last_updated_at_version_meta
            got[(name, stable)] = (matched, modified, ds.to_table().to_pydict(),
                                   None if updated_at is None else json.loads(updated_at.json()),
                                   ds.read_transaction(ds.version).operation.updated_fragment_offsets)
            # an offset past the fragment's rows is refused on a stable-row-id table, nothing published
            if stable:
                before = ds.version
                bad = {0: lancet._lancet.offsets_bitmap([1, 7])}
                with pytest.raises(OSError, match="max offset 7 exceeds fragment 0"):
                    lib.LanceDataset.commit(uri, dataclasses.replace(op, updated_fragment_offsets=bad),
                                            read_version=before)
                assert lib.dataset(uri).version == before
    assert got[("lancet", False)] == got[("pylance", False)]
    assert got[("lancet", False)][0] == [1, 5]
    # rows 1 and 5 last updated at the Update's version (3), the others where they were
    assert got[("lancet", True)] == got[("pylance", True)]
    assert got[("lancet", True)][3] is not None
    # pylance reads the offsets lancet recorded
    theirs = lance.dataset(str(tmp_path / "lancetTrue"))
    assert theirs.read_transaction(theirs.version).operation.updated_fragment_offsets == got[("lancet", True)][4]


def test_add_columns_of_sql_expressions_is_one_merge_as_pylances(tmp_path):
    schema = pa.schema([pa.field("x", pa.int64(), False), pa.field("s", pa.string())])
    table = pa.table({"x": [1, 2, 3, 4, 5], "s": ["a", "b", None, "d", "e"]}, schema=schema)
    got = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(table, uri, max_rows_per_file=2)
        ds.delete("x = 4")
        ds = lib.dataset(uri)
        ds.add_columns({"d": "x * 2", "e": "s || 'z'", "f": "x > 1 AND s IS NOT NULL", "g": "NOT (x = 2)"})
        ds = lib.dataset(uri)
        refused = []
        for bad in ({"x": "x + 1"}, {"h": "nope + 1"}):
            with pytest.raises(OSError) as e:
                ds.add_columns(bad)
            refused.append(str(e.value).split(",")[0].removeprefix("Invalid user input: ")[:30])
        got[name] = (ds.version, ds.schema, ds.to_table().to_pydict(),
                     type(ds.read_transaction(ds.version).operation).__name__,
                     lib.dataset(uri).version, refused[0],
                     ds.to_table(columns={"big": "x > 2", "both": "x > 2 OR s = 'a'"}).to_pydict())
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][2]["f"] == [False, True, False, True]
    assert lance.dataset(str(tmp_path / "lancet")).to_table().to_pydict() == got["lancet"][2]
