"""pylance's scanner, ported: projections as SQL expressions and ``_rowoffset``, each step
run with ``import lance`` and with ``import lancet as lance`` on twin tables."""

import lance
import pyarrow as pa
import pytest

import lancet
from lancet import errors

ENGINES = {"pylance": lance, "lancet": lancet}


def _rows():
    return pa.table({"a": pa.array(range(1, 11), pa.int64()),
                     "b": pa.array([f"s{i}" for i in range(10)]),
                     "c": pa.array([None if i % 4 == 0 else i * 1.5 for i in range(10)])})


@pytest.fixture
def twins(tmp_path):
    """The same table written and edited by each engine: three fragments, deletions in two."""
    out = {}
    for name, lib in ENGINES.items():
        ds = lib.write_dataset(_rows(), str(tmp_path / name), max_rows_per_file=4)
        ds.delete("a = 1 OR a = 6")
        out[name] = lib.dataset(str(tmp_path / name))
    return out


def _same(twins, **scan):
    got = {name: ds.to_table(**scan) for name, ds in twins.items()}
    assert got["lancet"].schema == got["pylance"].schema, scan
    assert got["lancet"].to_pylist() == got["pylance"].to_pylist(), scan
    return got["lancet"]


@pytest.mark.parametrize("scan", [
    {"columns": {"a2": "a * 2", "b": "b", "u": "upper(b)", "cc": "c + 1"}},
    {"columns": {"a2": "a * 2"}, "filter": "a > 5", "with_row_id": True},
    {"columns": {"a2": "a * 2", "a": "a"}, "limit": 3, "offset": 2},
    {"columns": {"s": "concat(b, '!')"}, "filter": "c IS NULL"},
    {"columns": ["a", "_rowoffset"]},
    {"columns": ["a", "_rowoffset"], "filter": "a > 4"},
    {"columns": ["_rowoffset", "a", "_rowid"]},
    {"columns": ["_rowoffset"], "filter": "b = 's9'"},
    {"columns": ["a", "_rowoffset"], "limit": 2, "offset": 3},
])
def test_projections_answer_as_pylances(twins, scan):
    _same(twins, **scan)


def test_a_row_offset_is_the_position_take_reads(twins):
    mine = twins["lancet"]
    t = mine.to_table(columns=["a", "_rowoffset"], filter="a % 2 = 0")
    assert mine.take(t.column("_rowoffset").to_pylist(), columns=["a"]).column("a") == t.column("a")


def test_the_projected_schema_is_known_before_reading(twins):
    for ds in twins.values():
        s = ds.scanner(columns={"a2": "a * 2", "u": "upper(b)"}).projected_schema
        assert s.names == ["a2", "u"]
        assert s.field("a2").type == pa.int64() and s.field("u").type == pa.string()


def test_an_expression_over_a_missing_column_is_refused_as_pylance_refuses(twins):
    for name, ds in twins.items():
        with pytest.raises(ValueError):
            ds.to_table(columns={"g": "nope + 1"})
    with pytest.raises(errors.InvalidInputError):
        twins["lancet"].to_table(columns={"g": "a +"})


def _output_rows(plan: str) -> int:
    """The rows a plan's top operator output, as both engines print it."""
    import re

    return int(re.search(r"output_rows=(\d+)", plan).group(1))


@pytest.mark.parametrize("scan", [
    {"filter": "a = 3"},
    {"filter": "a > 2 AND b <> 's5'", "columns": ["b"]},
    {"filter": "a >= 2", "limit": 3},
    {"columns": ["a"], "limit": 2, "offset": 1},
    {"filter": "c IS NULL"},
])
def test_a_plan_names_the_index_and_analyze_counts_the_rows_as_pylance(twins, scan):
    for ds in twins.values():
        ds.create_scalar_index("a", "BTREE")
    for name, lib in ENGINES.items():  # a fragment the index does not cover
        lib.dataset(twins[name].uri).insert(pa.table({"a": [50], "b": ["new"], "c": [1.0]}))
    plans = {name: lib.dataset(twins[name].uri).scanner(**scan) for name, lib in ENGINES.items()}
    lancet_scan = plans["lancet"]
    before = lancet.dataset(twins["lancet"].uri).scan_stats()
    text = lancet_scan.explain_plan()
    assert text == lancet_scan.explain_plan() and text.startswith("LancetScan: ")
    assert lancet_scan._dataset.scan_stats() == before, "explaining reads no rows"
    if "a" in scan.get("filter", ""):
        assert "IndexQuery: a through a_idx (BTree) on 3 of 4 fragments, read directly on 1" in text
        assert "ScalarIndexQuery: query=" in plans["pylance"].explain_plan()
    assert "Output: " in lancet_scan.explain_plan(verbose=True)
    analyzed = lancet_scan.analyze_plan()
    assert _output_rows(analyzed) == _output_rows(plans["pylance"].analyze_plan()) \
        == plans["lancet"].to_table().num_rows
    if "a" in scan.get("filter", ""):
        assert "indexes_answered={a_idx: 3 fragments}" in analyzed


def test_analyze_counts_rows_and_refuses_a_limit_with_a_count_as_pylance(twins):
    for name, ds in twins.items():
        counted = ds.scanner(filter="a > 3").analyze_plan(count_rows=True)
        assert _output_rows(counted) in (6, 1), name  # lancet: the rows; pylance: one count row
        with pytest.raises(ValueError, match="Cannot use limit/offset with aggregate"):
            ds.scanner(filter="a > 3", limit=2).analyze_plan(count_rows=True)
    assert _output_rows(twins["lancet"].scanner(filter="a > 3").analyze_plan(count_rows=True)) == \
        twins["pylance"].count_rows("a > 3")


@pytest.mark.parametrize("scan", [
    {"filter": "_rowid = 5", "with_row_id": True},
    {"filter": "_rowaddr >= 4294967297 AND _rowaddr < 8589934592", "columns": ["a"]},
    {"filter": "_rowid IN (2, 3, 9) OR a = 10", "columns": ["a", "_rowid"]},
    {"filter": "_rowid IS NULL"},
    {"include_deleted_rows": True, "with_row_id": True},
    {"include_deleted_rows": True, "with_row_id": True, "with_row_address": True, "columns": ["a"]},
    {"include_deleted_rows": True, "with_row_id": True, "limit": 3, "offset": 4},
    {"include_deleted_rows": True, "with_row_id": True, "filter": "b >= 's5'"},
])
def test_row_columns_in_filters_and_deleted_rows_answer_as_pylances(twins, scan):
    _same(twins, **scan)


def test_a_scan_of_deleted_rows_counts_and_reads_fragments_as_pylances(twins):
    counts = {n: ds.scanner(include_deleted_rows=True, with_row_id=True).count_rows()
              for n, ds in twins.items()}
    assert counts["lancet"] == counts["pylance"] == 10
    got = {n: ds.get_fragments()[1].to_table(include_deleted_rows=True, with_row_id=True).to_pylist()
           for n, ds in twins.items()}
    assert got["lancet"] == got["pylance"]


def test_deleted_rows_are_the_ones_without_a_row_id(twins):
    # pylance refuses this filter on this table ("with_deleted_rows ... not supported when
    # taking rows from an input plan"); on a single-fragment table it answers the same
    t = twins["lancet"].to_table(include_deleted_rows=True, with_row_id=True, filter="_rowid IS NULL")
    assert t.column("a").to_pylist() == [1, 6]


def test_deleted_rows_need_row_ids_as_in_pylance(twins):
    for ds in twins.values():
        with pytest.raises(ValueError, match="with_row_id"):
            ds.to_table(include_deleted_rows=True)


def test_deleted_rows_match_on_their_stored_values_even_under_an_index(tmp_path):
    # pylance answers an indexed filter through its index, which leaves deleted rows out;
    # lancet evaluates the stored values (docs/decisions/0046-deleted-rows-match-on-stored-values.md)
    ds = lancet.write_dataset(_rows(), str(tmp_path / "t"), max_rows_per_file=4)
    ds.delete("a = 2")
    ds.create_scalar_index("a", "BTREE")
    ds = lancet.dataset(str(tmp_path / "t"))
    t = ds.to_table(include_deleted_rows=True, with_row_id=True, filter="a < 4")
    assert t.column("a").to_pylist() == [1, 2, 3]
    assert t.column("_rowid").to_pylist() == [0, None, 2]


def test_take_by_position_answers_as_pylances(twins):
    picks = [0, 7, 3, 7, 5]
    got = {n: ds.take(picks, columns=["a", "b"]).to_pylist() for n, ds in twins.items()}
    assert got["lancet"] == got["pylance"]
    with pytest.raises(ValueError):
        twins["lancet"].take([8])


def test_a_scan_stats_callback_gets_what_the_scan_read(twins):
    got = {n: [] for n in twins}
    for n, ds in twins.items():
        ds.create_scalar_index("a", "BTREE")
        ds = type(ds)(ds.uri) if n == "lancet" else lance.dataset(ds.uri)
        t = ds.scanner(filter="a = 3", scan_stats_callback=got[n].append).to_table()
        assert t.num_rows == 1
        assert len(got[n]) == 1
    mine, theirs = got["lancet"][0], got["pylance"][0]
    assert isinstance(mine, lancet.ScanStatistics)
    assert mine.indices_loaded == theirs.indices_loaded == 1
    assert mine.iops > 0 and mine.bytes_read > 0 and mine.requests == mine.iops
    assert mine.all_counts["fragments_scanned"] == theirs.all_counts["fragments_scanned"] == 1
    assert mine.all_times["scan_time"] > 0


def test_a_failing_scan_stats_callback_is_logged_not_raised(twins, caplog):
    def fails(stats):
        raise RuntimeError("callback")
    for ds in twins.values():
        assert ds.scanner(scan_stats_callback=fails).to_table().num_rows == 8
    assert "Error in scan stats callback" in caplog.text


@pytest.fixture
def versioned(tmp_path):
    """A stable-row-id table and a plain one, each written by each engine over four
    versions: created, appended, updated (rows move), a row deleted."""
    out = {}
    for name, lib in ENGINES.items():
        for stable in (True, False):
            uri = str(tmp_path / f"{name}{stable}")
            lib.write_dataset(_rows(), uri, max_rows_per_file=4, enable_stable_row_ids=stable)
            more = pa.table({"a": pa.array([11, 12], pa.int64()), "b": ["s10", "s11"], "c": [1.0, 2.0]})
            ds = lib.write_dataset(more, uri, mode="append")
            ds.update({"b": "'u'"}, where="a = 3 OR a = 11")
            lib.dataset(uri).delete("a = 5")
            out[(name, stable)] = lib.dataset(uri)
    return out


@pytest.mark.parametrize("scan", [
    {"columns": ["a", "_row_created_at_version", "_row_last_updated_at_version"]},
    {"columns": ["_row_last_updated_at_version", "a"], "with_row_id": True, "with_row_address": True},
    {"columns": ["a", "_row_last_updated_at_version", "_row_created_at_version"], "with_row_id": True},
    {"columns": ["_row_created_at_version", "_rowid", "a"]},
    {"columns": ["a"], "filter": "_row_created_at_version >= 2"},
    {"columns": ["a", "_row_last_updated_at_version"], "filter": "_row_last_updated_at_version > 2"},
    {"columns": ["a", "_row_last_updated_at_version"], "filter": "_row_last_updated_at_version = 1 AND a > 6"},
    {"columns": ["a", "_row_created_at_version"], "limit": 3, "offset": 2},
])
def test_row_version_columns_answer_as_pylances(versioned, scan):
    for stable in (True, False):
        got = {name: versioned[(name, stable)].to_table(**scan) for name in ENGINES}
        assert got["lancet"].schema == got["pylance"].schema, scan
        rows = {n: sorted(t.to_pylist(), key=lambda r: (r.get("a"), str(r))) for n, t in got.items()}
        assert rows["lancet"] == rows["pylance"], (stable, scan)


def test_row_versions_count_fragment_reads_and_deleted_rows_as_pylances(versioned):
    for stable in (True, False):
        ds = {name: versioned[(name, stable)] for name in ENGINES}
        counts = {n: d.count_rows("_row_last_updated_at_version = 1") for n, d in ds.items()}
        assert counts["lancet"] == counts["pylance"]
        frag = {n: d.get_fragments()[1].to_table(columns=["a", "_row_created_at_version"]).to_pylist()
                for n, d in ds.items()}
        assert frag["lancet"] == frag["pylance"]
        # a deleted row keeps its versions; only its row id is NULL
        shown = {n: d.scanner(columns=["a", "_row_last_updated_at_version"], with_row_id=True,
                              include_deleted_rows=True).to_table().to_pylist() for n, d in ds.items()}
        key = lambda r: (r["a"], str(r))  # noqa: E731
        assert sorted(shown["lancet"], key=key) == sorted(shown["pylance"], key=key)
    # the stable table's updated rows were last updated at the update's version (3)
    t = versioned[("lancet", True)].to_table(columns=["a", "_row_last_updated_at_version"],
                                             filter="_row_last_updated_at_version = 3")
    assert sorted(t.column("a").to_pylist()) == [3, 11]


def test_takes_read_row_columns_where_asked_as_pylance(versioned):
    for stable in (True, False):
        ds = {name: versioned[(name, stable)] for name in ENGINES}
        for columns in (["a", "_row_last_updated_at_version"], ["_rowid", "a", "_rowaddr"],
                        ["_row_created_at_version", "a", "_row_last_updated_at_version"]):
            got = {n: d.take([0, 3, 7], columns=columns) for n, d in ds.items()}
            assert got["lancet"] == got["pylance"], (stable, columns)
            ids = got["lancet"].column("a").to_pylist()
            rows = {n: d.to_table(columns=["_rowid"], filter=f"a IN {tuple(ids)}").column("_rowid").to_pylist()
                    for n, d in ds.items()}
            by_id = {n: d._take_rows(sorted(rows[n]), columns=columns).sort_by("a") for n, d in ds.items()}
            assert by_id["lancet"] == by_id["pylance"], (stable, columns)
