"""Errors arrive as typed exceptions, and bad input from Python leaves the table unchanged."""

import os
import pathlib

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors


def table(n=100):
    return pa.table({"id": pa.array(range(n), pa.int64()), "s": [str(i) for i in range(n)]})


def files(uri):
    root = pathlib.Path(uri)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.fixture
def ds(tmp_uri):
    return lancet.write_dataset(table(), tmp_uri, max_rows_per_file=40)


BAD = [
    ("delete", lambda d: d.delete("nope = 1")),
    ("delete syntax", lambda d: d.delete("id = = 1")),
    ("update unknown column", lambda d: d.update({"nope": "1"})),
    ("update bad value", lambda d: d.update({"id": "concat(s, 'x')"}, where="id = 3")),
    ("scan filter", lambda d: d.to_table(filter="id >")),
    ("scan column", lambda d: d.to_table(columns=["nope"])),
    ("append other schema", lambda d: lancet.write_dataset(pa.table({"x": [1]}), d.uri, mode="append")),
    ("create over a table", lambda d: lancet.write_dataset(table(), d.uri)),
    ("merge unknown key", lambda d: d.merge_insert("nope").when_matched_update_all().execute(table(3))),
    ("merge ambiguous", lambda d: d.merge_insert("id").when_matched_update_all().execute(
        pa.table({"id": pa.array([1, 1], pa.int64()), "s": ["a", "b"]}))),
    ("merge fail on match", lambda d: d.merge_insert("id").when_matched_fail().execute(table(3))),
    ("drop every column", lambda d: d.drop_columns(["id", "s"])),
    ("add existing column", lambda d: d.add_columns({"id": "1"})),
    ("alter unknown", lambda d: d.alter_columns({"path": "nope", "name": "x"})),
    ("lossy cast", lambda d: d.alter_columns({"path": "id", "data_type": pa.string()})),
    ("index type", lambda d: d.create_scalar_index("id", "NO_SUCH_TYPE")),
    ("index column", lambda d: d.create_scalar_index("nope")),
    ("take out of range", lambda d: d.take([1000])),
    ("bad layout", lambda d: lancet.write_dataset(table(), d.uri + "-x", layout="heap")),
    ("compaction task", lambda d: d._ds.compaction_execute("{}")),
]


@pytest.mark.parametrize("name,call", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_invalid_input_and_leaves_the_table_unchanged(ds, name, call):
    before_version, before_files, before_rows = ds.version, files(ds.uri), ds.to_table()
    with pytest.raises(errors.InvalidInputError) as raised:
        call(ds)
    assert isinstance(raised.value, ValueError)  # what a pylance script catches
    after = lancet.dataset(ds.uri)
    assert after.version == before_version, name
    assert files(ds.uri) == before_files, name
    assert after.to_table() == before_rows, name


def test_a_missing_table_is_not_found(tmp_path):
    with pytest.raises(errors.NotFoundError) as raised:
        lancet.dataset(str(tmp_path / "nothing"))
    assert isinstance(raised.value, FileNotFoundError)
    ds = lancet.write_dataset(table(), str(tmp_path / "t"))
    with pytest.raises(errors.NotFoundError):
        lancet.dataset(str(tmp_path / "t"), version=7)
    with pytest.raises(errors.NotFoundError):
        lancet.dataset(str(tmp_path / "t"), tag="nope")
    assert ds.version == 1


def test_a_corrupt_manifest_is_a_corrupt_table(ds):
    manifest = sorted(pathlib.Path(ds.uri, "_versions").glob("*.manifest"))[0]
    data = bytearray(manifest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    data[len(data) // 3] ^= 0xFF
    manifest.write_bytes(bytes(data))
    with pytest.raises(errors.CorruptTableError):
        lancet.dataset(ds.uri).to_table()


def test_a_missing_data_file_is_a_corrupt_table(ds):
    data_file = sorted(pathlib.Path(ds.uri, "data").glob("*.lance"))[0]
    os.remove(data_file)
    with pytest.raises(errors.CorruptTableError):
        lancet.dataset(ds.uri).verify(data=True)


def test_a_commit_losing_to_an_incompatible_one_is_an_incompatible_conflict(ds):
    stale = lancet.dataset(ds.uri)
    lancet.write_dataset(table(10), ds.uri, mode="overwrite")  # every fragment replaced
    with pytest.raises(errors.CommitConflict) as raised:
        stale.delete("id = 3")
    assert isinstance(raised.value, errors.IncompatibleCommitConflict), type(raised.value)
    assert lancet.dataset(ds.uri).count_rows() == 10


def test_a_retryable_conflict_is_typed(ds):
    # a stale compaction's fragments were rewritten by a newer one: the Rewrite cannot
    # land, and a retry from the new version can
    stale = lancet.dataset(ds.uri)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    with pytest.raises(errors.CommitConflict) as raised:
        stale.optimize.compact_files(target_rows_per_fragment=1000)
    assert isinstance(raised.value, errors.RetryableCommitConflict), type(raised.value)


def test_a_conflict_is_pylances_commit_conflict_error_with_its_retryable_flag(ds):
    # pylance scripts catch `lance.commit.CommitConflictError` (an OSError) and read
    # `retryable`: lancet's conflicts are that class, under the same name
    from lancet.commit import CommitConflictError
    stale = lancet.dataset(ds.uri)
    ds.optimize.compact_files(target_rows_per_fragment=1000)
    with pytest.raises(CommitConflictError) as raised:
        stale.optimize.compact_files(target_rows_per_fragment=1000)
    assert isinstance(raised.value, OSError)
    assert raised.value.retryable is True
    stale = lancet.dataset(ds.uri)
    lancet.write_dataset(table(10), ds.uri, mode="overwrite")
    with pytest.raises(CommitConflictError) as raised:
        stale.delete("id = 3")
    assert raised.value.retryable is False
    assert "another writer" in str(raised.value)


def test_a_stale_handles_delete_is_planned_again_after_a_concurrent_delete(ds):
    # pylance retries a delete whose fragments another writer changed (on the latest
    # version); so does lancet: the rows deleted are those the filter matches there
    stale = lancet.dataset(ds.uri)
    before = lancet.dataset(ds.uri).count_rows()
    lancet.dataset(ds.uri).delete("id % 2 = 0")
    stale.delete("id % 3 = 0")
    ids = lancet.dataset(ds.uri).to_table(columns=["id"]).column("id").to_pylist()
    assert ids and all(i % 2 != 0 and i % 3 != 0 for i in ids)
    assert len(ids) == sum(1 for i in range(before) if i % 2 and i % 3)


def test_an_error_ending_a_scan_is_raised_as_its_own_class(tmp_path):
    """A data file damaged under a table: the scan's stream fails part way, and the error
    reaches Python as lancet's (``CorruptTableError``), not as pyarrow's ``ArrowInvalid``."""
    uri = str(tmp_path / "t")
    lancet.write_dataset(table(1000), uri, max_rows_per_file=250)
    victim = sorted(pathlib.Path(uri, "data").iterdir())[2]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    ds = lancet.dataset(uri)
    with pytest.raises(errors.CorruptTableError):
        ds.to_table()
    with pytest.raises(errors.CorruptTableError):
        for _ in ds.to_batches():
            pass
    with pytest.raises(errors.CorruptTableError):
        ds.scanner(columns=["id"]).to_reader().read_all()
