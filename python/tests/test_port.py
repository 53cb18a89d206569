"""A pylance script runs against lancet by changing its import, with the same results on
twin tables; pylance reads every flat table lancet writes."""

import datetime

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pytest

import lancet


def rows(start, stop):
    ids = list(range(start, stop))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "name": pa.array([f"n{i % 37}" for i in ids]),
        "score": pa.array([None if i % 11 == 0 else i * 0.5 for i in ids], pa.float64()),
    })


def script(lib, uri):
    """A pylance script: every step's observable result."""
    out = {}
    ds = lib.write_dataset(rows(0, 3000), uri, max_rows_per_file=500)
    out["created"] = ds.count_rows()
    ds = lib.write_dataset(rows(3000, 3600), uri, mode="append", max_rows_per_file=500)
    out["appended"] = (ds.count_rows(), len(ds.get_fragments()))
    out["deleted"] = ds.delete("id % 7 = 0 OR name = 'n3'")["num_deleted_rows"]
    out["updated"] = ds.update({"score": "score * 2", "name": "upper(name)"}, where="id BETWEEN 100 AND 300")
    ds.create_scalar_index("id", "BTREE")
    merged = (ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
              .execute(rows(3500, 3700)))
    out["merged"] = {k: merged[k] for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}
    out["scan"] = ds.to_table(columns=["id", "name"], filter="score > 500 AND name LIKE 'N1%'").sort_by("id")
    out["scan_expr"] = ds.to_table(filter=(pds.field("id") < 50) & pds.field("score").is_valid()).sort_by("id")
    out["count"] = ds.count_rows("name = 'n5'")
    out["limit"] = ds.to_table(columns=["id"], limit=10, offset=5)
    out["take"] = ds.take([0, 5, 17], columns=["id", "score"])
    compacted = ds.optimize.compact_files(target_rows_per_fragment=2000)
    out["compacted"] = (ds.count_rows(), len(ds.get_fragments()))
    out["after_compaction"] = ds.to_table(filter="id = 1234").to_pydict()
    ds.optimize.optimize_indices()
    out["indexed"] = ds.to_table(filter="id IN (5, 6, 3650)").sort_by("id").to_pydict()
    stats = ds.cleanup_old_versions(older_than=datetime.timedelta(0), retain_versions=1)
    # pylance's compaction commits a ReserveFragments before its Rewrite when it remaps an
    # index; lancet numbers the new fragments in the Rewrite itself (decision 0001): pylance
    # has one version more to clean up
    out["cleanup"] = stats.old_versions > 0
    out["versions_left"] = len(ds.versions())
    out["final"] = ds.to_table().sort_by("id")
    out["schema"] = ds.schema
    return out


def test_a_pylance_script_gives_the_same_results(tmp_path):
    got = script(lancet, str(tmp_path / "lancet"))
    want = script(lance, str(tmp_path / "lance"))
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    # pylance reads the table lancet wrote, row for row
    assert lance.dataset(str(tmp_path / "lancet")).to_table().sort_by("id") == want["final"]


def test_pylance_reads_what_the_package_writes(tmp_uri):
    ds = lancet.write_dataset(rows(0, 1000), tmp_uri, enable_stable_row_ids=True, max_rows_per_file=300)
    ds.add_columns({"double": "id * 2"})
    ds.alter_columns({"path": "name", "name": "label"})
    ds.drop_columns(["score"])
    ds.tags.create("v-final", ds.version)
    peer = lance.dataset(tmp_uri)
    assert peer.schema == ds.schema
    assert peer.to_table() == ds.to_table()
    assert peer.tags.list()["v-final"]["version"] == ds.version
    assert peer.to_table(with_row_id=True).column("_rowid") == ds.to_table(with_row_id=True).column("_rowid")


def test_lancet_reads_what_pylance_writes(tmp_uri):
    peer = lance.write_dataset(rows(0, 2000), tmp_uri, max_rows_per_file=400, enable_stable_row_ids=True)
    peer.delete("id < 10")
    peer.create_scalar_index("id", "BTREE")
    ds = lancet.dataset(tmp_uri)
    found = ds.search("id = 1500")  # through pylance's BTree: its pages, no fragment read
    assert (found["pages_read"] > 0, found["scanned_fragments"]) == (True, 0)
    assert ds.version == peer.version
    assert ds.to_table() == peer.to_table()
    assert ds.to_table(filter="id = 1500", with_row_id=True) == peer.to_table(filter="id = 1500", with_row_id=True)
    assert ds.count_rows("id > 100") == peer.count_rows("id > 100")


def test_a_table_whose_manifest_leaves_row_counts_unknown_counts_every_row(tmp_uri):
    """A fragment record with `physical_rows` 0 (a manifest written before Lance recorded
    counts; pylance writes one when committed so) holds the rows of its data files: pylance
    reads them from the files, and so does lancet, for every count and scan."""
    from lance.fragment import FragmentMetadata

    table = rows(0, 1000)
    written = lance.fragment.write_fragments(table, tmp_uri, max_rows_per_file=300)
    legacy = [FragmentMetadata(f.id, f.files, 0, f.deletion_file, f.row_id_meta) for f in written]
    lance.LanceDataset.commit(tmp_uri, lance.LanceOperation.Overwrite(table.schema, legacy))
    peer = lance.dataset(tmp_uri)
    assert [f.metadata.physical_rows for f in peer.get_fragments()] == [None] * 4
    ds = lancet.dataset(tmp_uri)
    assert ds.count_rows() == peer.count_rows() == 1000
    assert [f.count_rows() for f in ds.get_fragments()] == [f.count_rows() for f in peer.get_fragments()]
    assert [f.physical_rows for f in ds.get_fragments()] == [f.physical_rows for f in peer.get_fragments()]
    assert [f.physical_rows for f in ds.get_fragments()] == [300, 300, 300, 100]
    assert ds.to_table() == peer.to_table()
    # pylance 14.0.2 refuses any filter here ("Fragments are missing row count stats");
    # lancet answers it
    assert ds.count_rows("id >= 950") == 50
    assert ds.to_table(filter="id >= 950") == table.filter(pc.field("id") >= 950)
    # a delete on such a table deletes what it matches, and pylance reads the result
    ds.delete("id % 10 = 0")
    assert lance.dataset(tmp_uri).count_rows() == lancet.dataset(tmp_uri).count_rows() == 900


def test_writes_accept_pandas_polars_readers_and_batches(tmp_path):
    import pandas as pd
    import polars as pl

    t = rows(0, 50)
    sources = {
        "pandas": t.to_pandas(),
        "polars": pl.from_arrow(t),
        "reader": pa.RecordBatchReader.from_batches(t.schema, t.to_batches(max_chunksize=7)),
        "batches": t.to_batches(max_chunksize=9),
        "batch": t.to_batches()[0],
    }
    for name, data in sources.items():
        ds = lancet.write_dataset(data, str(tmp_path / name))
        # pandas and Polars bring their own string types; the values are the same
        assert ds.to_table().to_pylist() == t.to_pylist(), name
    assert isinstance(lancet.dataset(str(tmp_path / "pandas")).to_table().to_pandas(), pd.DataFrame)


def test_a_pandas_index_survives_create_and_overwrite_as_pylance_keeps_it(tmp_path):
    """Issue 41, item 4: the schema's metadata (pandas' among it) is kept by create and
    overwrite, so ``to_pandas()`` restores the index, in pylance and in lancet."""
    import pandas as pd

    df = pd.DataFrame({"v": [1, 2, 3]}, index=pd.Index(["a", "b", "c"], name="key"))
    table = pa.Table.from_pandas(df)
    assert b"pandas" in table.schema.metadata
    mine, peer = str(tmp_path / "mine"), str(tmp_path / "peer")
    lancet.write_dataset(table, mine)
    lance.write_dataset(table, peer)
    for uri in (mine, peer):
        back = lance.dataset(uri).to_table().to_pandas()
        assert list(back.index) == ["a", "b", "c"] and back.index.name == "key", uri
        assert list(back.columns) == ["v"], uri
    assert lance.dataset(mine).schema.metadata == lance.dataset(peer).schema.metadata
    # an overwrite keeps the new data's metadata
    df2 = pd.DataFrame({"v": [9]}, index=pd.Index(["z"], name="other"))
    lancet.write_dataset(pa.Table.from_pandas(df2), mine, mode="overwrite")
    back = lance.dataset(mine).to_table().to_pandas()
    assert list(back.index) == ["z"] and back.index.name == "other"


def test_an_added_column_is_nullable_as_pylance_declares_it(tmp_path):
    """Issue 41, item 5: `v * 2` over a non-null `v` is a non-null column, in lancet as in
    pylance; `v + n` (n nullable) and a string function are nullable."""
    schema = pa.schema([pa.field("v", pa.int64(), nullable=False), pa.field("n", pa.int64()),
                        pa.field("s", pa.string(), nullable=False)])
    table = pa.table({"v": [1, 2, 3], "n": [1, None, 3], "s": ["a", "b", "c"]}, schema=schema)
    mine, peer = str(tmp_path / "mine"), str(tmp_path / "peer")
    lance.write_dataset(table, mine)
    lance.write_dataset(table, peer)
    exprs = {"w": "v * 2", "x": "v + n", "y": "upper(s)"}
    lancet.dataset(mine).add_columns(exprs)
    lance.dataset(peer).add_columns(exprs)
    for name in exprs:
        assert (lance.dataset(mine).schema.field(name).nullable
                == lance.dataset(peer).schema.field(name).nullable), name
    assert not lance.dataset(mine).schema.field("w").nullable
    assert lance.dataset(mine).to_table() == lance.dataset(peer).to_table()


def test_versions_tags_restore_delta_and_tree(tmp_uri):
    ds = lancet.write_dataset(rows(0, 100), tmp_uri, enable_stable_row_ids=True)
    ds.tags.create("first", 1)
    ds.update({"score": "0"}, where="id < 5")
    ds.delete("id >= 95")
    lancet.write_dataset(rows(100, 110), tmp_uri, mode="append")
    ds = lancet.dataset(tmp_uri)
    delta = ds.delta(begin_version=1, end_version=ds.version)
    assert sorted(delta.get_inserted_rows().read_all().column("id").to_pylist()) == list(range(100, 110))
    assert sorted(delta.get_updated_rows().read_all().column("id").to_pylist()) == [0, 1, 2, 3, 4]
    assert len(delta.get_deleted_row_ids().read_all()) == 5
    assert lancet.dataset(tmp_uri, "first").count_rows() == 100
    old = ds.checkout_version(1)
    old.restore()
    assert lancet.dataset(tmp_uri).count_rows() == 100
    assert [v["version"] for v in ds.versions()] == list(range(1, old.version + 1))
    before = old.to_table()
    old.convert_to_tree()
    assert old.is_tree and old.to_table() == before
    assert old.verify(data=True)["fragments"] == 1
    old.flatten()
    assert not old.is_tree
    assert lance.dataset(tmp_uri).to_table() == before


def test_delta_answers_from_the_handles_rows_as_pylance(tmp_path):
    """Issue 41, item 6: ``delta`` asked of a handle at a later version reads that handle's
    rows (pylance's answer), and ``compared_against`` a newer version orders the range."""
    mine, peer = str(tmp_path / "mine"), str(tmp_path / "peer")
    answers = {}
    for lib, uri in ((lancet, mine), (lance, peer)):
        lib.write_dataset(rows(0, 20), uri, enable_stable_row_ids=True)
        ds = lib.dataset(uri)
        ds.update({"score": "1"}, where="id < 5")
        lib.write_dataset(rows(20, 25), uri, mode="append")
        ds = lib.dataset(uri)
        ds.update({"score": "2"}, where="id < 2 OR id = 21")
        ds.delete("id = 3 OR id = 22")
        latest = lib.dataset(uri)
        first = lib.dataset(uri, version=1)

        def ids(reader):
            t = reader.read_all()
            return sorted(zip(t.column("id").to_pylist(), t.column("score").to_pylist()))

        d = latest.delta(begin_version=1, end_version=3)
        back = first.delta(compared_against=latest.version)
        answers[lib] = {
            "inserted": ids(d.get_inserted_rows()),
            "updated": ids(d.get_updated_rows()),
            "deleted": sorted(d.get_deleted_row_ids().read_all().column(0).to_pylist()),
            "back_inserted": ids(back.get_inserted_rows()),
            "back_updated": ids(back.get_updated_rows()),
        }
    assert answers[lancet] == answers[lance]
    assert answers[lancet]["inserted"], "rows were inserted in the range"


def test_the_distributed_write_pickles_fragments_and_commits_once(tmp_uri):
    import pickle

    base = lancet.write_dataset(rows(0, 10), tmp_uri)
    written = []
    for start in (10, 20, 30):
        frags = lancet.write_fragments(rows(start, start + 10), tmp_uri)
        written.extend(pickle.loads(pickle.dumps(frags)))
    assert [f.physical_rows for f in written] == [10, 10, 10]
    ds = lancet.LanceDataset.commit(tmp_uri, lancet.LanceOperation.Append(written), read_version=base.version)
    assert ds.version == base.version + 1
    assert ds.to_table().sort_by("id") == rows(0, 40)
    assert lance.dataset(tmp_uri).count_rows() == 40

    # and a new table, written before it exists, created by one commit
    new_uri = tmp_uri + "-new"
    frags = lancet.write_fragments(rows(0, 5), new_uri) + lancet.write_fragments(rows(5, 9), new_uri)
    op = lancet.LanceOperation.Overwrite(rows(0, 1).schema, frags, layout="tree")
    created = lancet.LanceDataset.commit(new_uri, op)
    assert created.version == 1 and created.is_tree
    assert created.to_table().sort_by("id") == rows(0, 9)


def test_an_overwrite_takes_the_storage_version_and_commits_on_an_existing_table(tmp_path):
    """Issue 41, item 6: ``write_dataset(mode="overwrite", data_storage_version=...)`` makes
    the version the table's (kept when not given), and ``LanceOperation.Overwrite`` commits
    fragments ``write_fragments(mode="overwrite")`` wrote on an existing table, in lancet as
    in pylance."""
    mine, peer = str(tmp_path / "mine"), str(tmp_path / "peer")
    for lib, uri in ((lancet, mine), (lance, peer)):
        lib.write_dataset(rows(0, 10), uri, data_storage_version="2.1")
        lib.write_dataset(rows(0, 5), uri, mode="overwrite")
    assert lance.dataset(mine).data_storage_version == lance.dataset(peer).data_storage_version == "2.1"
    for lib, uri in ((lancet, mine), (lance, peer)):
        lib.write_dataset(rows(0, 7), uri, mode="overwrite", data_storage_version="2.0")
    assert lance.dataset(mine).data_storage_version == lance.dataset(peer).data_storage_version == "2.0"
    files = [f.data_files()[0] for f in lance.dataset(mine).get_fragments()]
    assert [(d.file_major_version, d.file_minor_version) for d in files] == [(2, 0)]
    # staged on an old version, committed as every row of the table
    schema = pa.schema([pa.field("k", pa.string())])
    new = pa.table({"k": ["x", "y"]}, schema=schema)
    from lance.fragment import write_fragments as pylance_write_fragments

    staging = {lancet: lancet.write_fragments, lance: pylance_write_fragments}
    for lib, uri in ((lancet, mine), (lance, peer)):
        base = lib.dataset(uri).version
        frags = staging[lib](new, uri, mode="overwrite")
        lib.write_dataset(rows(50, 52), uri, mode="append")
        ds = lib.LanceDataset.commit(uri, lib.LanceOperation.Overwrite(schema, frags), read_version=base)
        assert ds.version == base + 2, uri
    for uri in (mine, peer):
        assert lance.dataset(uri).to_table() == new, uri
    assert lance.dataset(mine).data_storage_version == lance.dataset(peer).data_storage_version


def test_a_lancet_table_is_the_source_of_another_write(tmp_path):
    """A scan lancet exports feeds a write lancet runs (its stream is read from inside
    lancet's runtime: it once aborted the process), a merge's source, and pylance's write."""
    a = lancet.write_dataset(rows(0, 3000), str(tmp_path / "a"), max_rows_per_file=700)
    b = lancet.write_dataset(a, str(tmp_path / "b"))
    assert b.to_table() == a.to_table()
    c = lancet.write_dataset(a.scanner(filter="id < 100").to_reader(), str(tmp_path / "c"))
    assert c.count_rows() == 100
    merged = b.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        lancet.dataset(str(tmp_path / "c")))
    assert (merged["num_updated_rows"], merged["num_inserted_rows"]) == (100, 0)
    # pylance takes a reader of it (pyarrow's own C++ dataset functions cannot scan a Python
    # dataset, lancet's or pylance's: pass `scanner().to_reader()`)
    peer = lance.write_dataset(a.scanner().to_reader(), str(tmp_path / "p"))
    assert peer.to_table() == a.to_table()


def test_compaction_in_pieces_pickles_its_tasks_and_commits_once(tmp_uri):
    import pickle

    from lancet.optimize import Compaction, CompactionOptions

    ds = lancet.write_dataset(rows(0, 4000), tmp_uri, max_rows_per_file=250)
    ds.delete("id % 3 = 0")
    ds.create_scalar_index("id")
    plan = Compaction.plan(ds, CompactionOptions(target_rows_per_fragment=1000))
    assert plan.num_tasks >= 2
    tasks = pickle.loads(pickle.dumps(plan.tasks))
    results = pickle.loads(pickle.dumps([t.execute(lancet.dataset(tmp_uri)) for t in tasks]))
    before = ds.version
    done = Compaction.commit(ds, results)
    assert (done["version"], ds.version) == (before + 1, before + 1)
    assert ds.to_table().sort_by("id") == lance.dataset(tmp_uri).to_table().sort_by("id")
    assert ds.count_rows() == 4000 - 1334
    assert ds.search("id = 2000")["scanned_fragments"] == 0  # the BTree was remapped
    with pytest.raises(lancet.errors.InvalidInputError):
        Compaction.commit(ds, [])
