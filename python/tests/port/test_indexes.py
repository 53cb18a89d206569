"""pylance's index statistics, ported: the same table and the same steps with ``import lance``
and with ``import lancet as lance``, and ``stats.index_stats`` compared (the timestamp aside:
each library stamps its own commits)."""

import lance
import pyarrow as pa
import pytest

import lancet


def _stats(lib, uri):
    table = pa.table({"a": list(range(100)), "s": [None if i % 7 == 0 else f"v{i:03}" for i in range(100)]})
    ds = lib.write_dataset(table, uri, max_rows_per_file=40)
    ds.create_scalar_index("a", "BTREE")
    ds.create_scalar_index("s", "BTREE")
    seen = []

    def look():
        d = lib.dataset(uri)
        for name in ("a_idx", "s_idx"):
            st = d.stats.index_stats(name)
            assert isinstance(st.pop("updated_at_timestamp_ms"), int)
            seen.append(st)

    look()
    ds = lib.dataset(uri)
    ds.insert(pa.table({"a": [200, 201], "s": ["x", None]}))
    lib.dataset(uri).delete("a < 10")
    look()
    lib.dataset(uri).optimize.optimize_indices()
    look()
    return seen


def test_index_stats_say_what_pylance_says(tmp_path):
    theirs = _stats(lance, str(tmp_path / "theirs"))
    mine = _stats(lancet, str(tmp_path / "mine"))
    assert mine == theirs
    # after the append: two fragments of the index's three are whole, one new unindexed
    assert mine[2]["num_unindexed_fragments"] == 1 and mine[2]["num_unindexed_rows"] == 2


def test_index_stats_of_a_missing_index_is_a_key_error(tmp_path):
    ds = lancet.write_dataset(pa.table({"a": [1, 2]}), str(tmp_path / "t"))
    with pytest.raises(KeyError):
        ds.stats.index_stats("a_idx")
    ds.create_scalar_index("a", "BTREE")
    assert lancet.dataset(ds.uri).stats.index_stats("a_idx")["indices"] == [{"min": "1", "max": "2", "num_pages": 1}]
