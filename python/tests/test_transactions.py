"""pylance's transactions from Python (issue 42): ``read_transaction`` and ``get_transactions``
answer as pylance 14.0.2's do, each operation a ``LanceOperation`` object with pylance's
fields; ``LanceSchema`` and ``FragmentMetadata`` carry what pylance's carry. Compared against
the installed pylance on one table (both engines read the same transactions) and on twin
tables (each engine's own operations)."""

import dataclasses
import datetime
import shutil

import lance
import lance.schema
import pyarrow as pa
import pytest

import lancet
import lancet.schema
from lancet import errors

# lancet's own keyword-only fields of Overwrite (how a table it creates is laid out)
LANCET_ONLY = {"layout", "enable_stable_row_ids", "data_storage_version"}


def norm(x):
    """`x` (a pylance or a lancet object) as plain values both engines' objects compare by."""
    kind = type(x).__name__
    if kind == "FragmentMetadata":
        d = x.deletion_file
        return ("fragment", x.id, x.physical_rows,
                [(f.path, list(f.fields), list(f.column_indices), f.file_major_version,
                  f.file_minor_version, f.file_size_bytes, f.base_id) for f in x.files],
                None if d is None else (d.read_version, d.id, d.file_type, d.num_deleted_rows, d.base_id),
                x.num_deletions, x.num_rows, x.row_id_meta is not None,
                x.created_at_version_meta is not None, list(x.overlays))
    if kind == "LanceSchema":
        return ("schema", x.to_pyarrow(), [norm(f) for f in x.fields()],
                [f.id() for f in x.unenforced_primary_key()])
    if kind == "LanceField":
        return (x.name(), x.id(), x.unenforced_primary_key_position(),
                x.unenforced_clustering_key_position(), [norm(c) for c in x.children()])
    if kind == "Bitmap":
        return sorted(x)
    if dataclasses.is_dataclass(x):
        return (kind, {f.name: norm(getattr(x, f.name)) for f in dataclasses.fields(x)
                       if f.name not in LANCET_ONLY})
    if isinstance(x, datetime.datetime):
        return x.timestamp()
    if isinstance(x, (list, tuple)):
        return [norm(v) for v in x]
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    return x


def _rows(a, b):
    return pa.table({"id": pa.array(range(a, b), pa.int64()),
                     "s": pa.array([f"s{i}" for i in range(a, b)], pa.utf8()),
                     "st": pa.array([{"x": i} for i in range(a, b)])})


def _history(lib, uri):
    """A table through every operation pylance records in one process."""
    ds = lib.write_dataset(_rows(0, 30), uri, max_rows_per_file=10)
    ds = lib.write_dataset(_rows(30, 40), uri, mode="append")
    ds.delete("id = 3 OR id = 35")
    ds.update({"s": "'upd'"}, where="id >= 20 AND id < 25")
    ds.create_scalar_index("id", "BTREE")
    ds.update_config({"k": "v"})
    ds.update_metadata({"m": "1"})
    ds.update_field_metadata({"st.x": {"f": "2"}})
    ds.add_columns({"twice": "id * 2"})
    ds.drop_columns(["twice"])
    ds.drop_index("id_idx")
    ds = lib.dataset(uri, version=2)
    ds.restore()
    ds = lib.write_dataset(_rows(0, 5), uri, mode="overwrite")
    return lib.dataset(uri)


def test_lancet_reads_pylances_transactions_as_pylance_does(tmp_uri):
    _history(lance, tmp_uri)
    theirs = lance.dataset(tmp_uri)
    mine = lancet.dataset(tmp_uri)
    want = theirs.get_transactions(100)
    got = mine.get_transactions(100)
    assert len(got) == len(want) == theirs.version
    for g, w in zip(got, want):
        assert norm(g) == norm(w)
    for v in range(1, theirs.version + 1):
        assert norm(mine.read_transaction(v)) == norm(theirs.read_transaction(v))
    kinds = [type(t.operation).__name__ for t in got]
    assert {"Overwrite", "Append", "Delete", "Update", "CreateIndex", "UpdateConfig", "Merge",
            "Project", "Restore"} <= set(kinds)
    assert all(isinstance(t.operation, lancet.LanceOperation.BaseOperation) for t in got)
    # an older handle walks back from its own version
    older = lancet.dataset(tmp_uri, version=4)
    assert [t.read_version for t in older.get_transactions(2)] == [3, 2]
    assert len(older.get_transactions(0)) == 1


def test_pylance_reads_lancets_operations_as_its_own(tmp_path):
    mine = _history(lancet, str(tmp_path / "mine"))
    theirs = _history(lance, str(tmp_path / "theirs"))
    assert mine.version == theirs.version
    got = [type(t.operation).__name__ for t in mine.get_transactions(100)]
    want = [type(t.operation).__name__ for t in theirs.get_transactions(100)]
    assert got == want
    # what lancet wrote, read by pylance, is what lancet reads
    seen = lance.dataset(mine.uri)
    for v in range(1, mine.version + 1):
        mine_t, seen_t = mine.read_transaction(v), seen.read_transaction(v)
        assert norm(mine_t) == norm(seen_t)


def test_transaction_properties_and_missing_versions(tmp_uri):
    lance.write_dataset(_rows(0, 5), tmp_uri, commit_message="first")
    lance.write_dataset(_rows(5, 9), tmp_uri, mode="append", transaction_properties={"k": "v"})
    ds = lancet.dataset(tmp_uri)
    assert ds.read_transaction(1).transaction_properties == {"__lance_commit_message": "first"}
    assert ds.read_transaction(2).transaction_properties == {"k": "v"}
    assert ds.read_transaction(2).read_version == 1
    with pytest.raises(OSError):
        ds.read_transaction(99)
    with pytest.raises(errors.NotFoundError):
        ds.read_transaction(99)
    # after cleanup removed version 1, the walk stops at version 2
    lance.dataset(tmp_uri).cleanup_old_versions(older_than=datetime.timedelta(0))
    assert [t.read_version for t in lancet.dataset(tmp_uri).get_transactions(10)] == [1]


def test_lance_schema_is_pylances():
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("st", pa.struct([pa.field("x", pa.int64()), pa.field("y", pa.utf8())])),
        pa.field("l", pa.list_(pa.float32())),
    ], metadata={"k": "v"})
    mine = lancet.schema.LanceSchema.from_pyarrow(schema)
    theirs = lance.schema.LanceSchema.from_pyarrow(schema)
    assert norm(mine) == norm(theirs)
    assert mine.to_pyarrow() == schema
    assert mine.field("st.y").id() == theirs.field("st").children()[1].id()
    assert mine.field("nope") is None
    assert [f.name() for f in mine.fields()] == ["id", "st", "l"]


def test_a_tables_lance_schema_is_pylances(tmp_uri):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("st", pa.struct([pa.field("x", pa.int64())]))], metadata={"k": "v"})
    lance.write_dataset(pa.table({"id": [1, 2], "st": [{"x": 1}, {"x": 2}]}, schema=schema), tmp_uri)
    lance.dataset(tmp_uri).update_field_metadata({"id": {"lance-schema:unenforced-primary-key": "true"}})
    mine, theirs = lancet.dataset(tmp_uri).lance_schema, lance.dataset(tmp_uri).lance_schema
    assert norm(mine) == norm(theirs)
    assert [f.name() for f in mine.unenforced_primary_key()] == ["id"]


def test_fragment_metadata_is_pylances(tmp_uri):
    lance.write_dataset(_rows(0, 20), tmp_uri, max_rows_per_file=8, enable_stable_row_ids=True)
    lance.dataset(tmp_uri).delete("id < 3")
    theirs = lance.dataset(tmp_uri).read_transaction(2).operation.updated_fragments
    mine = lancet.dataset(tmp_uri).read_transaction(2).operation.updated_fragments
    assert [norm(f) for f in mine] == [norm(f) for f in theirs]
    assert mine[0].deletion_file.path(mine[0].id) == theirs[0].deletion_file.path(theirs[0].id)
    assert mine[0].num_rows == 5 and mine[0].row_id_meta is not None
    # built from its fields, as pylance's dataclass is, it is the record read back
    m = mine[0]
    assert lancet.FragmentMetadata(m.id, m.files, m.physical_rows, m.deletion_file, m.row_id_meta,
                                   m.created_at_version_meta, m.last_updated_at_version_meta) == m
    with pytest.raises(errors.InvalidInputError):
        lancet.FragmentMetadata(0, [], 10, lancet.fragment.DeletionFile(1, 2, "neither", 1))


def _before(src, dst, version):
    """A copy of the table at `src` as it was before `version` was committed (the later
    manifests and the latest-version hint gone, every other file kept)."""
    shutil.copytree(src, dst)
    for m in (dst / "_versions").iterdir():
        if not m.name.endswith(".manifest") or (2 ** 64 - 1) - int(m.name.split(".")[0]) >= version:
            m.unlink()


def test_lancet_commits_every_operation_pylance_recorded_as_pylance_did(tmp_path):
    src = tmp_path / "src"
    _history(lance, str(src))
    latest = lance.dataset(str(src)).version
    replayed = set()
    for v in range(2, latest + 1):
        t = lancet.dataset(str(src)).read_transaction(v)
        copy = tmp_path / f"replay{v}"
        _before(src, copy, v)
        assert lance.dataset(str(copy)).version == v - 1
        committed = lancet.LanceDataset.commit(str(copy), t.operation, read_version=t.read_version)
        assert committed.version == v
        mine, theirs = lance.dataset(str(copy), version=v), lance.dataset(str(src), version=v)
        assert mine.to_table() == theirs.to_table()
        assert norm(mine.lance_schema) == norm(theirs.lance_schema)
        assert sorted(i["name"] for i in mine.list_indices()) == sorted(i["name"] for i in theirs.list_indices())
        assert (mine.config(), mine.metadata) == (theirs.config(), theirs.metadata)
        got = [(f.fragment_id, f.count_rows(), [d.path for d in f.metadata.files]) for f in mine.get_fragments()]
        want = [(f.fragment_id, f.count_rows(), [d.path for d in f.metadata.files]) for f in theirs.get_fragments()]
        assert got == want
        assert type(mine.read_transaction(v).operation) is type(theirs.read_transaction(v).operation)
        replayed.add(type(t.operation).__name__)
    assert {"Append", "Delete", "Update", "CreateIndex", "UpdateConfig", "Merge", "Project", "Restore",
            "Overwrite"} <= replayed


def test_a_commit_lancet_cannot_make_is_refused_with_nothing_published(tmp_uri):
    ds = lancet.write_dataset(_rows(0, 10), tmp_uri)
    frags = [lance.dataset(tmp_uri).get_fragments()[0].metadata]
    with pytest.raises(NotImplementedError):  # another library's fragments
        lancet.LanceDataset.commit(tmp_uri, lancet.LanceOperation.Delete(frags, [], "x"), read_version=1)
    with pytest.raises(NotImplementedError):
        lancet.LanceDataset.commit(tmp_uri, lancet.LanceOperation.Rewrite([], []), read_version=1)
    with pytest.raises(NotImplementedError):  # a Merge's schema as pyarrow: its field ids unknown
        lancet.LanceDataset.commit(tmp_uri, lancet.LanceOperation.Merge([], ds.schema), read_version=1)
    # a Restore of a version that does not exist: pylance's OSError, nothing published
    with pytest.raises(OSError):
        lancet.LanceDataset.commit(tmp_uri, lancet.LanceOperation.Restore(7), read_version=1)
    # an UpdateConfig of a field that does not exist: refused by the write path
    bad = lancet.LanceOperation.UpdateConfig(
        field_metadata_updates={99: lancet.LanceOperation.UpdateMap({"k": "v"})})
    with pytest.raises(ValueError):
        lancet.LanceDataset.commit(tmp_uri, bad, read_version=1)
    assert lance.dataset(tmp_uri).version == 1
    # one that is fine lands, read back as committed
    ok = lancet.LanceOperation.UpdateConfig(config_updates=lancet.LanceOperation.UpdateMap({"k": "v"}))
    assert lancet.LanceDataset.commit(tmp_uri, ok, read_version=1).config() == {"k": "v"}
    assert norm(lance.dataset(tmp_uri).read_transaction(2).operation) == norm(
        lance.LanceOperation.UpdateConfig(config_updates=lance.LanceOperation.UpdateMap({"k": "v"})))
