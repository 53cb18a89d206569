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


def test_a_btree_over_every_type_lance_indexes_answers_in_both_engines(tmp_path):
    """Times, durations, half floats and fixed-size binary: each engine's BTree answers the
    other's filters (``arrow_cast`` names a time or a duration, as Lance filters do)."""
    import datetime

    n = 50
    columns = {
        "t32": (pa.array([datetime.time(i % 24, 0) for i in range(n)], pa.time32("s")),
                "t32 = arrow_cast('03:00:00', 'Time32(Second)')", [i for i in range(n) if i % 24 == 3]),
        "t64": (pa.array([datetime.time(0, i % 60, 1) for i in range(n)], pa.time64("us")),
                "t64 > arrow_cast('00:40:00', 'Time64(Microsecond)')", list(range(40, n))),
        "dur": (pa.array(range(n), pa.duration("ms")), "dur < arrow_cast(5, 'Duration(Millisecond)')",
                list(range(5))),
        "f16": (pa.array([float(i) for i in range(n)], pa.float16()), "f16 >= 45", list(range(45, n))),
        "fsb": (pa.array([bytes([i % 7, 1]) for i in range(n)], pa.binary(2)), "fsb = X'0301'",
                [i for i in range(n) if i % 7 == 3]),
    }
    engines = {"pylance": lance, "lancet": lancet}
    table = pa.table({"id": range(n), **{k: v for k, (v, _, _) in columns.items()}})
    for name, lib in engines.items():
        ds = lib.write_dataset(table, str(tmp_path / name), max_rows_per_file=20)
        for c in columns:
            ds.create_scalar_index(c, "BTREE")
    for c, (_, f, want) in columns.items():
        for reader in engines:
            for writer in engines:
                got = engines[reader].dataset(str(tmp_path / writer)).to_table(filter=f)
                assert sorted(got.column("id").to_pylist()) == want, (c, reader, writer)
        for writer in engines:
            plan = lancet.dataset(str(tmp_path / writer)).scanner(filter=f).analyze_plan()
            assert f"indexes_answered={{{c}_idx: 3 fragments}}" in plan, plan


def test_an_untrained_index_covers_nothing_until_optimized_as_pylances(tmp_path):
    def stats(ds):
        st = ds.stats.index_stats("x_idx")
        st.pop("updated_at_timestamp_ms")
        return st

    got = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": range(100)}), uri, max_rows_per_file=30)
        ds.create_scalar_index("x", "BTREE", train=False)
        ds = lib.dataset(uri)
        steps = [(ds.describe_indices()[0].num_rows_indexed, stats(ds), ds.to_table(filter="x = 5").num_rows)]
        other = lancet if lib is lance else lance
        steps.append(other.dataset(uri).to_table(filter="x = 5").num_rows)
        ds.optimize.optimize_indices()
        ds = lib.dataset(uri)
        steps.append((ds.describe_indices()[0].num_rows_indexed, stats(ds),
                      other.dataset(uri).describe_indices()[0].num_rows_indexed))
        got[name] = steps
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][0][1]["index_type"] == "N/A" and got["lancet"][2][0] == 100


def test_a_prewarmed_index_answers_without_reading_a_page(tmp_path):
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        uri = str(tmp_path / name)
        ds = lib.write_dataset(pa.table({"x": range(10_000)}), uri, max_rows_per_file=3000)
        ds.create_scalar_index("x", "BTREE")
        ds = lib.dataset(uri)
        assert ds.prewarm_index("x_idx") is None
        with pytest.raises(RuntimeError):
            ds.prewarm_index("nope")
    cold = lancet.dataset(str(tmp_path / "lancet"))
    assert cold.search("x = 5")["pages_read"] > 0
    warm = lancet.dataset(str(tmp_path / "lancet"))
    warm.prewarm_index("x_idx")
    for f in ("x = 5", "x > 9990", "x IS NULL", "x IN (1, 7000)"):
        found = warm.search(f)
        assert found["pages_read"] == 0 and found["scanned_fragments"] == 0, (f, found)
