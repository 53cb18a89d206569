"""pylance's commit messages and transaction properties, ported: each step runs with
``import lance`` and with ``import lancet as lance`` on a table of its own, and the
transactions each records are compared."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet.dataset import LANCE_COMMIT_MESSAGE_KEY


def _steps(lib, uri):
    """Writes, appends, commits and overwrites with messages and properties; every version's
    recorded properties, oldest first."""
    lib.write_dataset(pa.table({"a": [1, 2], "b": ["a", "b"]}), uri, commit_message="initial")
    lib.write_dataset(pa.table({"a": [3], "b": ["c"]}), uri, mode="append",
                      transaction_properties={LANCE_COMMIT_MESSAGE_KEY: "Second commit", "k": "v"})
    # the message wins over a property of its key
    lib.write_dataset(pa.table({"a": [4], "b": ["d"]}), uri, mode="append", commit_message="third",
                      transaction_properties={LANCE_COMMIT_MESSAGE_KEY: "lost", "x": "y"})
    ds = lib.dataset(uri)
    written = lib.fragment.write_fragments(pa.table({"a": [5], "b": ["e"]}), uri)
    ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Append(written), read_version=ds.version,
                                 commit_message="staged")
    ds.delete("a = 1")
    ds = lib.dataset(uri)
    fragment = ds.get_fragment(0).metadata
    ds = lib.LanceDataset.commit(
        uri, lib.LanceOperation.Delete([], [fragment.id], "a <= 2"), read_version=ds.version,
        commit_message="dropped")
    lib.write_dataset(pa.table({"a": [9], "b": ["z"]}), uri, mode="overwrite",
                      transaction_properties={"why": "reset"})
    ds = lib.dataset(uri)
    return [ds.read_transaction(v).transaction_properties for v in range(1, ds.version + 1)]


def test_commit_messages_and_properties_are_recorded_as_pylance_records_them(tmp_path):
    theirs = _steps(lance, str(tmp_path / "theirs"))
    mine = _steps(lancet, str(tmp_path / "mine"))
    assert mine == theirs
    assert mine[0] == {LANCE_COMMIT_MESSAGE_KEY: "initial"}
    assert mine[2] == {LANCE_COMMIT_MESSAGE_KEY: "third", "x": "y"}
    assert mine[4] == {}
    # each reads what the other wrote
    assert [lance.dataset(str(tmp_path / "mine")).read_transaction(v).transaction_properties
            for v in range(1, len(mine) + 1)] == mine


def test_a_transaction_commits_with_its_read_version_and_properties(tmp_path):
    uri = str(tmp_path / "t")
    ds = lancet.write_dataset(pa.table({"a": [1]}), uri)
    written = lancet.fragment.write_fragments(pa.table({"a": [2]}), uri)
    txn = lancet.Transaction(read_version=ds.version, operation=lancet.LanceOperation.Append(written),
                             transaction_properties={"k": "v"})
    ds = lancet.LanceDataset.commit(uri, txn)
    assert ds.to_table().column("a").to_pylist() == [1, 2]
    assert ds.read_transaction(2).transaction_properties == {"k": "v"}
    assert lance.dataset(uri).read_transaction(2).transaction_properties == {"k": "v"}
    # as pylance: the message belongs on the transaction
    with pytest.raises(ValueError):
        lancet.LanceDataset.commit(uri, txn, commit_message="no")
    assert lancet.dataset(uri).version == 2


def test_properties_must_be_strings(tmp_path):
    uri = str(tmp_path / "t")
    with pytest.raises(TypeError):
        lancet.write_dataset(pa.table({"a": [1]}), uri, transaction_properties={"k": 1})
    with pytest.raises(lancet.errors.NotFoundError):
        lancet.dataset(uri)
