"""lancet.ray on a real local Ray cluster (2 CPUs): a million rows written into a tree
table in one commit, a Python backfill committed 10 fragments at a time, a parallel
compaction in one commit, SQL over the result equal to pylance's on a flat twin, and a
killed write task leaving the table as it was."""

import datetime
import os
import pathlib
import signal

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import ray

import lancet
import lancet.ray as lr
from test_engines import duck, fusion, normal, polars

ROWS = 1_000_000


@pytest.fixture(scope="module", autouse=True)
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"RAY_DATA_DISABLE_PROGRESS_BARS": "1"}})
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def with_columns(batch: pa.Table) -> pa.Table:
    ids = batch.column("id")
    return batch.append_column("bucket", pc.cast(pc.bit_wise_and(ids, 15), pa.int32()))


def twice(batch: pa.RecordBatch) -> pa.Array:
    return pc.multiply(batch.column("id"), 2)


def files(uri):
    root = pathlib.Path(uri)
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_million_rows_backfilled_compacted_and_queried(tmp_path):
    uri = str(tmp_path / "tree")
    data = ray.data.range(ROWS, override_num_blocks=8).map_batches(with_columns, batch_format="pyarrow")
    ds = lr.write_dataset(data, uri, layout="tree", max_rows_per_file=50_000)
    # one commit: version 1 holds every row, in a fragment tree
    assert (ds.version, ds.count_rows(), ds.is_tree) == (1, ROWS, True)
    fragments = len(ds.get_fragments())
    assert fragments >= 20

    # a backfill by a Python function, 10 fragments per commit (the schema first)
    ds = lr.add_columns(uri, {"twice": twice}, fragments_per_commit=10)
    assert ds.version == 1 + 1 + -(-fragments // 10)
    assert ds._ds.unfilled_fragments(["twice"]) == []
    assert ds.to_table(filter="id = 777777", columns=["twice"]).to_pydict() == {"twice": [1555554]}

    # a parallel compaction, one commit
    before = ds.version
    done = lr.compact_files(uri, target_rows_per_fragment=250_000)
    assert done["tasks"] >= 2 and done["version"] == before + 1
    ds = lancet.dataset(uri)
    assert (ds.count_rows(), len(ds.get_fragments()), ds.is_tree) == (ROWS, 4, True)
    ds.verify(data=True)

    # a BTree trained as segments by parallel Ray tasks, one commit
    assert lr.create_scalar_index(uri, "id") == done["version"] + 1
    (index,) = lancet.dataset(uri).list_indices()
    assert (index["name"], index["segments"], len(index["fragment_ids"])) == ("id_idx", 2, 4)

    # DuckDB, DataFusion and Polars SQL over the tree equal pylance's answers on a flat twin
    # pylance wrote; an indexed equality reads index pages and one fragment
    twin = lance.write_dataset(ds.to_table(), str(tmp_path / "twin"), max_rows_per_file=250_000)
    for engine in (duck, fusion, polars):
        for sql in [
            "select bucket, count(*) as n, sum(twice) as s from t group by bucket order by bucket",
            "select id, twice from t where id in (5, 500000, 999999) order by id",
        ]:
            assert normal(engine(lancet.dataset(uri), sql)) == normal(engine(twin, sql)), sql
        t = lancet.dataset(uri)
        assert normal(engine(t, "select twice from t where id = 424242")) == [(848484,)]
        stats = t.scan_stats()
        assert (stats["filter_fragments_scanned"], stats["fragments_read"]) == (0, 1), stats

    # Ray reads it back by fragments
    read = lr.read_dataset(uri, columns=["id", "twice"], filter="bucket = 3")
    assert read.count() == ROWS // 16
    assert read.sum("twice") == sum(2 * i for i in range(3, ROWS, 16))


class DyingSink(lr.LancetDatasink):
    """The datasink whose first task's worker is killed after it wrote its fragments, before
    it could report them."""

    def write(self, blocks, ctx):
        written = super().write(blocks, ctx)
        if ctx.task_idx == 0:
            os.kill(os.getpid(), signal.SIGKILL)
        return written


def test_a_killed_write_task_leaves_the_table_at_its_version(tmp_path):
    uri = str(tmp_path / "t")
    base = lancet.write_dataset(pa.table({"id": pa.array(range(100), pa.int64())}), uri)
    before_files = files(uri)
    data = ray.data.range(8_000, override_num_blocks=4)
    with pytest.raises(Exception) as raised:
        data.write_datasink(DyingSink(uri, mode="append"), ray_remote_args={"max_retries": 0})
    assert "WorkerCrashedError" in repr(raised.value) or "died" in str(raised.value), raised.value
    assert len(files(uri)) > len(before_files)  # the killed task wrote a data file
    after = lancet.dataset(uri)
    assert after.version == base.version
    assert after.to_table() == base.to_table()
    # what the tasks wrote is named by no version: cleanup removes exactly that
    after.cleanup_old_versions(older_than=datetime.timedelta(0), delete_unverified=True)
    assert files(uri) == before_files


def test_a_failed_backfill_resumes_where_it_stopped(tmp_path):
    uri = str(tmp_path / "t")
    lancet.write_dataset(pa.table({"id": pa.array(range(1_000), pa.int64())}), uri, max_rows_per_file=100)
    last = 900

    def failing(batch):
        if pc.any(pc.equal(batch.column("id"), last)).as_py():
            raise RuntimeError("the function failed on the last fragment")
        return pc.add(batch.column("id"), 1)

    with pytest.raises(Exception):
        lr.add_columns(uri, {"next": failing}, fragments_per_commit=2, max_in_flight=2)
    ds = lancet.dataset(uri)
    left = ds._ds.unfilled_fragments(["next"])
    assert 0 < len(left) < 10  # some fragments committed, the failed one not
    assert "next" in ds.schema.names

    ds = lr.add_columns(uri, {"next": lambda b: pc.add(b.column("id"), 1)}, fragments_per_commit=2)
    assert ds._ds.unfilled_fragments(["next"]) == []
    t = ds.to_table().sort_by("id")
    assert t.column("next").to_pylist() == list(range(1, 1_001))
    assert lance.dataset(uri).to_table().sort_by("id") == t  # pylance reads the backfill
