"""pylance's ``LanceDataset.sql``, ported: each query run with ``import lance`` and with
``import lancet as lance`` on the same table (a BTree on ``id``, rows deleted) and the
results compared."""

import lance
import pyarrow as pa
import pytest

import lancet

ENGINES = {"pylance": lance, "lancet": lancet}


@pytest.fixture
def twins(tmp_path):
    data = pa.table({"id": pa.array(range(200), pa.int64()),
                     "g": pa.array([f"g{i % 4}" for i in range(200)]),
                     "v": pa.array([None if i % 9 == 0 else i * 0.5 for i in range(200)])})
    out = {}
    for name, lib in ENGINES.items():
        uri = str(tmp_path / name)
        ds = lib.write_dataset(data, uri, max_rows_per_file=50)
        ds.create_scalar_index("id", "BTREE")
        ds = lib.dataset(uri)
        ds.delete("id % 10 = 3")
        out[name] = lib.dataset(uri)
    return out


QUERIES = [
    "SELECT count(*) AS n FROM dataset",
    "SELECT id, g, v FROM dataset WHERE id = 42",
    "SELECT id FROM dataset WHERE id BETWEEN 20 AND 40 AND v IS NOT NULL ORDER BY id",
    "SELECT g, count(*) AS n, sum(v) AS s FROM dataset GROUP BY g ORDER BY g",
    "SELECT id, v * 2 AS w FROM dataset WHERE g = 'g1' AND id < 30 ORDER BY id",
    "SELECT max(id) AS m FROM dataset WHERE id IN (3, 13, 14, 150, 999)",
    "SELECT id FROM dataset WHERE id % 7 = 0 ORDER BY id DESC LIMIT 5",
    "SELECT 1 AS one",
]


@pytest.mark.parametrize("query", QUERIES)
def test_queries_answer_as_pylances(twins, query):
    got = {n: pa.Table.from_batches(ds.sql(query).build().to_batch_records()) for n, ds in twins.items()}
    assert got["lancet"].to_pylist() == got["pylance"].to_pylist(), query
    assert got["lancet"].schema.names == got["pylance"].schema.names


def test_row_columns_and_the_table_name_as_pylance(twins):
    q = "SELECT id, _rowid, _rowaddr FROM t WHERE id > 195 ORDER BY id"
    got = {n: ds.sql(q).table_name("t").with_row_id().with_row_addr().build().to_stream_reader().read_all()
           for n, ds in twins.items()}
    assert got["lancet"] == got["pylance"]


def test_batch_sizes_bound_the_batches(twins):
    mine = twins["lancet"]
    batches = mine.sql("SELECT id FROM dataset").batch_size(16).build().to_batch_records()
    assert max(b.num_rows for b in batches) <= 16
    assert sum(b.num_rows for b in batches) == mine.count_rows()
    by_bytes = mine.sql("SELECT id FROM dataset").batch_size_bytes(80).build().to_batch_records()
    assert max(b.num_rows for b in by_bytes) <= 10
    with pytest.raises(ValueError):
        mine.sql("SELECT id FROM dataset").batch_size(0)
    with pytest.raises(NotImplementedError, match="blob"):
        mine.sql("SELECT id FROM dataset").blob_handling("all_binary")


def test_a_query_naming_no_column_of_the_table_is_pylances_value_error(twins):
    for ds in twins.values():
        with pytest.raises(ValueError, match="nope"):
            ds.sql("SELECT nope FROM dataset").build().to_batch_records()


def test_an_indexed_filter_is_answered_through_the_btree(twins):
    # the provider's plan, through lancet's Rust API: the filter pushed, the BTree named
    t = twins["lancet"].sql("EXPLAIN SELECT g FROM dataset WHERE id = 42").build().to_stream_reader().read_all()
    plan = "\n".join(t.column("plan").to_pylist())
    assert "LancetScanExec" in plan and "index=[id_idx(id)]" in plan, plan
