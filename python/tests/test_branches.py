"""pylance's branches from Python (issue 42): ``create_branch`` from a version, a branch's
version, a tag or a ``(branch, version)`` pair, ``branches.list()`` / ``delete``, twin against
pylance 14.0.2 and read across: each engine lists the other's branches as its own."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors


def _steps(lib, uri):
    """Branches made through `lib` on a table of two versions; the handles and rows seen."""
    lib.write_dataset(pa.table({"a": [1, 2]}), uri)
    lib.write_dataset(pa.table({"a": [3]}), uri, mode="append")
    seen = {}
    old = lib.dataset(uri, version=1)
    x = old.create_branch("x")
    seen["x"] = (x.version, x.count_rows())
    x.insert(pa.table({"a": [7, 8, 9]}))
    y = lib.dataset(x.uri).create_branch("y")  # from the branch's own latest version
    seen["y"] = (y.version, y.count_rows())
    ds = lib.dataset(uri)
    ds.tags.create("t1", 1)
    z = ds.create_branch("z", "t1")
    seen["z"] = (z.version, z.count_rows())
    w = ds.create_branch("w", ("x", None))
    seen["w"] = (w.version, w.count_rows())
    v = ds.create_branch("v", (None, 2))
    seen["v"] = (v.version, v.count_rows())
    return seen


def _listed(ds):
    return {name: (b["parent_branch"], b["parent_version"], len(b["branch_identifier"]), b["metadata"])
            for name, b in ds.branches.list().items()}


def test_branches_are_made_and_listed_as_pylances(tmp_path):
    mine_uri, theirs_uri = str(tmp_path / "mine"), str(tmp_path / "theirs")
    assert _steps(lancet, mine_uri) == _steps(lance, theirs_uri)
    mine, theirs = lancet.dataset(mine_uri), lance.dataset(theirs_uri)
    assert _listed(mine) == _listed(theirs)
    assert _listed(mine)["y"][:2] == ("x", 2)
    # each engine reads the other's references whole
    assert lance.dataset(mine_uri).branches.list() == mine.branches.list()
    assert lancet.dataset(theirs_uri).branches.list() == theirs.branches.list()
    # a branch opened at its own root is a table, as pylance opens it
    assert lancet.dataset(f"{mine_uri}/tree/x").count_rows() == lance.dataset(f"{theirs_uri}/tree/x").count_rows()
    assert [n for n, _ in mine.branches.list_ordered()] == sorted(
        mine.branches.list(), key=lambda n: (mine.branches.list()[n]["create_at"], n))


def test_branch_refusals_are_pylances_and_change_nothing(tmp_path):
    mine_uri, theirs_uri = str(tmp_path / "mine"), str(tmp_path / "theirs")
    _steps(lancet, mine_uri)
    _steps(lance, theirs_uri)
    for lib, uri in ((lancet, mine_uri), (lance, theirs_uri)):
        ds = lib.dataset(uri)
        before = ds.branches.list()
        with pytest.raises(ValueError):
            ds.branches.delete("nope")
        with pytest.raises(OSError):
            ds.create_branch("x")
        assert lib.dataset(uri).branches.list() == before
    with pytest.raises(errors.RefNotFoundError):
        lancet.dataset(mine_uri).branches.delete("nope")
    # deleting a branch another forks from is refused; its leaf goes
    ds = lancet.dataset(mine_uri)
    with pytest.raises(OSError):
        ds.branches.delete("x")
    ds.branches.delete("y")
    assert sorted(lance.dataset(mine_uri).branches.list()) == ["v", "w", "x", "z"]


def test_a_pickled_branch_handle_reopens_on_its_branch(tmp_path):
    import pickle
    uri = str(tmp_path / "t")
    _steps(lancet, uri)
    for handle in (lancet.dataset(uri, branch="x"), lancet.dataset(f"{uri}/tree/x"),
                   lancet.dataset(uri, version=2)):
        back = pickle.loads(pickle.dumps(handle))
        assert (back.version, back.to_table()) == (handle.version, handle.to_table())
    # version 2 of branch x (its insert) is not version 2 of the main line
    assert lancet.dataset(uri, branch="x").count_rows() != lancet.dataset(uri, version=2).count_rows()
