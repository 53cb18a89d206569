"""pylance's transactions from Python (issue 42): ``read_transaction`` and ``get_transactions``
answer as pylance 14.0.2's do, each operation a ``LanceOperation`` object with pylance's
fields; ``LanceSchema`` and ``FragmentMetadata`` carry what pylance's carry. Compared against
the installed pylance on one table (both engines read the same transactions) and on twin
tables (each engine's own operations)."""

import dataclasses
import datetime

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
    with pytest.raises(NotImplementedError):
        lancet.FragmentMetadata(0, [], 10)
