"""pylance's table API beyond reads and writes (issue 42), twin against pylance 14.0.2: each
test runs the same steps with ``import lance`` and with ``import lancet as lance`` on twin
tables and compares what both answer and what both tables hold afterwards."""

import os
import pathlib

import lance
import pyarrow as pa
import pyarrow.dataset  # noqa: F401 - pa.dataset
import pytest

import lancet
from lancet import errors


def _table():
    return pa.table({"x": pa.array(range(10), pa.int64()),
                     "s": pa.array([{"a": i} for i in range(10)])})


@pytest.fixture
def twins(tmp_path):
    """(lancet's handle, pylance's handle) on twin tables, each written by its engine."""
    mine = lancet.write_dataset(_table(), str(tmp_path / "mine"), max_rows_per_file=4)
    theirs = lance.write_dataset(_table(), str(tmp_path / "theirs"), max_rows_per_file=4)
    return mine, theirs


def _both(twins, step):
    """`step` on both handles: its answers, and the versions each moved to."""
    answers = [step(ds) for ds in twins]
    return answers, [ds.version for ds in twins]


def test_config_and_metadata_maps_change_as_pylances(twins):
    steps = [
        lambda ds: ds.update_config({"a": "1", "b": "2"}),
        lambda ds: ds.update_config({"a": None}),
        lambda ds: ds.delete_config_keys(["missing"]),
        lambda ds: ds.update_config({"only": "this"}, replace=True),
        lambda ds: ds.update_metadata({"k": "v", "j": "w"}),
        lambda ds: ds.update_metadata({"k": None}),
        lambda ds: ds.update_schema_metadata({"sk": "v"}),
        lambda ds: ds.update_field_metadata({"x": {"fk": "1"}, "s.a": {"g": "2"}}),
    ]
    for step in steps:
        (mine, theirs), (v_mine, v_theirs) = _both(twins, step)
        assert mine == theirs
        assert v_mine == v_theirs
    for ds in twins:
        ds.checkout_latest()
    mine, theirs = twins
    assert mine.config() == theirs.config()
    assert mine.metadata == theirs.metadata
    assert mine.schema_metadata == theirs.schema_metadata
    # what pylance wrote and what lancet wrote read the same through the other engine
    assert lance.dataset(mine.uri).config() == theirs.config()
    assert lancet.dataset(theirs.uri).metadata == mine.metadata
    assert lance.dataset(mine.uri).schema.field("x").metadata == {b"fk": b"1"}


def test_deprecated_replacements_warn_as_pylances(twins):
    for ds in twins:
        with pytest.warns(DeprecationWarning):
            ds.replace_schema_metadata({"only": "one"})
        with pytest.warns(DeprecationWarning):
            ds.replace_field_metadata("x", {"f": "v"})
    mine, theirs = twins
    assert mine.schema_metadata == theirs.schema_metadata == {"only": "one"}
    assert mine.version == theirs.version


def test_an_unknown_field_changes_nothing(twins):
    mine, _ = twins
    before = mine.version
    with pytest.raises(errors.InvalidInputError):
        mine.update_field_metadata({"x": {"a": "1"}, "nope": {"b": "2"}})
    assert lancet.dataset(mine.uri).version == before
    with pytest.raises(TypeError):
        mine.update_config(["not", "a", "dict"])


def test_version_facts_are_pylances(twins):
    for ds in twins:
        ds.delete("x < 2")
        ds.add_columns({"y": "x * 2"})
    mine, theirs = twins
    assert mine.max_field_id == theirs.max_field_id
    assert mine.data_storage_version == theirs.data_storage_version
    assert list(mine.fragment_ids()) == list(theirs.fragment_ids())
    assert 1 in mine.fragment_ids() and len(mine.fragment_ids()) == len(theirs.fragment_ids())
    summary, peer = mine.get_version()["metadata"], theirs.get_version()["metadata"]
    # every count as pylance's; bytes are each writer's own files' (as recorded in the manifest)
    assert {k: v for k, v in summary.items() if k != "total_files_size"} == \
        {k: v for k, v in peer.items() if k != "total_files_size"}
    on_disk = sum(p.stat().st_size for p in pathlib.Path(mine.uri, "data").iterdir())
    assert int(summary["total_files_size"]) == on_disk
    assert mine.get_version()["version"] == theirs.get_version()["version"]
    assert mine.has_index is theirs.has_index is False
    mine.create_scalar_index("x", "BTREE")
    assert mine.has_index


def test_truncate_insert_slice_and_latest_as_pylances(twins):
    mine, theirs = twins
    assert mine.slice(2, 5) == theirs.slice(2, 5)
    assert mine.slice(3, 3).num_rows == 0
    for ds in twins:
        with pytest.raises(ValueError):
            ds.slice(5, 2)
        ds.truncate_table()
    assert mine.count_rows() == theirs.count_rows() == 0
    assert mine.version == theirs.version
    for ds in twins:
        ds.insert(pa.table({"x": pa.array([7], pa.int64()), "s": pa.array([{"a": 7}])}))
    assert mine.to_table() == theirs.to_table()
    old = lancet.dataset(mine.uri, version=1)
    old.checkout_latest()
    assert old.version == mine.version
    assert mine.to_pandas().equals(theirs.to_pandas())
    assert mine.validate() is None


def test_sample_draws_distinct_rows(twins):
    mine, _ = twins
    sample = mine.sample(4)
    assert sample.num_rows == 4
    assert len(set(sample.column("x").to_pylist())) == 4
    assert mine.sample(100).num_rows == 10
    assert mine.sample(3, columns=["x"], randomize_order=False).schema.names == ["x"]


def test_a_shallow_clone_reads_as_the_source_through_pylance(twins, tmp_path):
    mine, _ = twins
    mine.delete("x = 3")
    clone = mine.shallow_clone(str(tmp_path / "clone"), 1)
    assert clone.count_rows() == 10
    assert lance.dataset(str(tmp_path / "clone")).to_table() == lance.dataset(mine.uri, version=1).to_table()
    with pytest.raises(NotImplementedError):
        mine.shallow_clone(str(tmp_path / "c2"), 1, storage_options={"a": "b"})


def test_drop_removes_a_table_and_nothing_else(tmp_path):
    uri = str(tmp_path / "t")
    lancet.write_dataset(_table(), uri)
    lancet.LanceDataset.drop(uri)
    assert not (tmp_path / "t").exists()
    lancet.LanceDataset.drop(uri, ignore_not_found=True)
    with pytest.raises(FileNotFoundError):
        lancet.LanceDataset.drop(uri)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError):
        lancet.LanceDataset.drop(str(tmp_path / "plain"))
    assert (tmp_path / "plain" / "keep.txt").exists()


def test_every_name_of_pylances_dataset_exists(twins):
    mine, _ = twins
    missing = [n for n in dir(lance.LanceDataset) if not n.startswith("_") and not hasattr(lancet.LanceDataset, n)]
    assert missing == []
    for name in ["create_index", "read_blobs", "take_blobs"]:
        with pytest.raises(NotImplementedError, match=name):
            getattr(mine, name)("anything")
    with pytest.raises(KeyError):
        mine.stats.index_stats("no_such_idx")


@pytest.mark.parametrize("shape", ["dict", "rows", "scanner", "batches"])
def test_writes_take_what_pylances_take(tmp_path, shape):
    table = pa.table({"x": pa.array([1, 2, 3], pa.int64()), "y": ["a", "b", None]})
    data = {
        "dict": lambda: table.to_pydict(),
        "rows": lambda: table.to_pylist(),
        "scanner": lambda: pa.dataset.dataset(table).scanner(),
        "batches": lambda: iter(table.to_batches()),
    }[shape]
    schema = table.schema if shape == "batches" else None
    mine = lancet.write_dataset(data(), str(tmp_path / "mine"), schema=schema)
    theirs = lance.write_dataset(data(), str(tmp_path / "theirs"), schema=schema)
    assert mine.to_table() == theirs.to_table()


def test_writes_refuse_what_pylance_refuses(tmp_path):
    batches = pa.table({"x": [1]}).to_batches()
    for engine in (lancet, lance):
        with pytest.raises(ValueError):
            engine.write_dataset(iter(batches), str(tmp_path / engine.__name__))
        with pytest.raises(TypeError):
            engine.write_dataset(42, str(tmp_path / engine.__name__))
    # an append of an unknown type leaves the table as it was
    uri = str(tmp_path / "kept")
    lancet.write_dataset(pa.table({"x": [1]}), uri)
    with pytest.raises(TypeError):
        lancet.write_dataset(object(), uri, mode="append")
    assert lancet.dataset(uri).version == 1


def test_a_leading_tilde_is_the_home_directory_as_pylance_reads_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    lancet.write_dataset(pa.table({"x": [1]}), "~/t")
    assert (tmp_path / "t" / "_versions").is_dir()
    assert not (tmp_path / "~").exists()
    assert lance.dataset(str(tmp_path / "t")).count_rows() == 1
    assert lancet.dataset("~/t").count_rows() == 1
    lancet.LanceDataset.drop("~/t")
    assert not (tmp_path / "t").exists()


def test_an_append_of_another_schema_is_pylances_oserror(twins):
    for ds in twins:
        before = ds.version
        for other in (pa.table({"y": ["a"]}), pa.table({"x": ["a"], "s": pa.array([{"a": 1}])})):
            with pytest.raises(OSError):
                ds.insert(other)
        assert type(ds).__module__.startswith("lance") and ds.version == before
    with pytest.raises(errors.SchemaMismatchError) as raised:
        twins[0].insert(pa.table({"y": ["a"]}))
    assert isinstance(raised.value, ValueError)
    assert lancet.dataset(twins[0].uri).version == 1


def test_the_table_api_on_a_tree_table_reads_as_its_flat_twin(twins, tmp_path):
    tree = lancet.write_dataset(_table(), str(tmp_path / "tree"), max_rows_per_file=4, layout="tree")
    flat, _ = twins
    for ds in (tree, flat):
        ds.update_config({"k": "v"})
        ds.update_field_metadata({"s.a": {"g": "1"}})
        ds.insert(_table())
        ds.delete("x < 3")
    assert tree.is_tree
    assert tree.config() == flat.config()
    assert tree.get_version()["metadata"] == flat.get_version()["metadata"]
    assert list(tree.fragment_ids()) == list(flat.fragment_ids())
    assert tree.max_field_id == flat.max_field_id
    assert tree.to_table() == flat.to_table()
    tree.truncate_table()
    assert tree.count_rows() == 0
    tree.flatten()
    assert lance.dataset(tree.uri).config() == flat.config()


def test_drop_index_as_pylances(twins):
    for ds in twins:
        ds.create_scalar_index("x", "BTREE")
    (mine, theirs), versions = _both(twins, lambda ds: ds.drop_index("x_idx"))
    assert mine is None and theirs is None
    assert versions[0] == versions[1]
    for ds in twins:
        assert ds.list_indices() == []
    # what lancet published reads in pylance as its own drop
    seen = lance.dataset(twins[0].uri)
    assert seen.list_indices() == []
    assert type(seen.read_transaction(seen.version).operation).__name__ == "CreateIndex"
    # a name no index has: pylance's RuntimeError, nothing published
    for ds in twins:
        before = ds.version
        with pytest.raises(RuntimeError):
            ds.drop_index("x_idx")
        assert lance.dataset(ds.uri).version == before
    with pytest.raises(errors.IndexNotFoundError):
        twins[0].drop_index("nope")


def _describe(ds):
    return [(d.name, d.type_url, d.index_type, d.num_rows_indexed, d.fields, d.field_names, d.details,
             d.total_size_bytes,
             [(s.uuid, s.dataset_version_at_last_update, sorted(s.fragment_ids), s.index_version,
               s.created_at, s.size_bytes, s.base_id, s.covering_fields) for s in d.segments])
            for d in ds.describe_indices()]


def test_describe_indices_as_pylances(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(_table(), uri, max_rows_per_file=4)
    lance.dataset(uri).create_scalar_index("x", "BTREE")
    # rows appended after the index, and rows deleted from a covered fragment
    lance.write_dataset(_table(), uri, mode="append")
    lance.dataset(uri).delete("x = 1")
    theirs = _describe(lance.dataset(uri))
    assert theirs[0][3] == 9  # 10 rows indexed, one deleted, the appended ones not covered
    assert _describe(lancet.dataset(uri)) == theirs
    # after lancet's optimize: the newest segment merged with the appended fragments, as
    # pylance's default; with num_indices_to_merge=0 a second segment over the next append
    ds = lancet.dataset(uri)
    ds.optimize.optimize_indices()
    assert _describe(lancet.dataset(uri)) == _describe(lance.dataset(uri))
    described = lancet.dataset(uri).describe_indices()[0]
    assert (described.num_rows_indexed, len(described.segments), described.index_type) == (18, 1, "BTree")
    lancet.write_dataset(_table(), uri, mode="append")
    lancet.dataset(uri).optimize.optimize_indices(num_indices_to_merge=0)
    assert _describe(lancet.dataset(uri)) == _describe(lance.dataset(uri))
    described = lancet.dataset(uri).describe_indices()[0]
    assert (described.num_rows_indexed, len(described.segments)) == (28, 2)


def test_dataset_stats_as_pylances(tmp_path):
    uri = str(tmp_path / "t")
    lance.write_dataset(_table(), uri, max_rows_per_file=4)
    lance.write_dataset(pa.table({"x": list(range(2000)), "s": [{"a": i} for i in range(2000)]}),
                        uri, mode="append")
    lance.dataset(uri).delete("x < 3 OR x = 1500")
    for rows_per_group in (1024, 4, 3000):
        theirs = lance.dataset(uri).stats.dataset_stats(rows_per_group)
        assert lancet.dataset(uri).stats.dataset_stats(rows_per_group) == theirs
    assert lancet.dataset(uri).stats.dataset_stats()["num_deleted_rows"] == 7  # x 0, 1, 2 twice, and 1500


def test_version_refs_list_every_version_as_pylances(tmp_path):
    got = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": range(10)}), uri)
        ds.insert(pa.table({"x": [1]}))
        lib.dataset(uri).delete("x = 3")
        got[name] = (lib.dataset(uri).version_refs(), lib.dataset(uri, version=1).version_refs())
    assert got["lancet"] == got["pylance"] == ([{"version": v} for v in (1, 2, 3)],) * 2


def test_all_files_and_the_deprecated_index_statistics_as_pylances(tmp_path):
    import warnings

    got = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": range(10)}), uri, max_rows_per_file=5)
        ds.create_scalar_index("x", "BTREE")
        ds = lib.dataset(uri)
        files = ds.all_files().read_all()
        kinds = sorted({p.split("/")[0] for p in files.column("path").to_pylist()})
        sizes = {p: s for p, s in zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist())}
        for p, size in sizes.items():
            assert os.path.getsize(os.path.join(uri, p)) == size, p
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            st = ds.index_statistics("x_idx")
        st.pop("updated_at_timestamp_ms")
        got[name] = (files.schema, kinds, len(files), files.column("base_uri")[0].as_py() == uri,
                     [x.category for x in w], st)
    assert got["lancet"] == got["pylance"]
