"""pylance's small modules, ported: ``debug``, ``util``, ``progress``, and ``memory://``
tables."""

import datetime

import lance
import lance.debug  # noqa: F401 - pylance does not import it with the package
import pyarrow as pa
import pytest

import lancet
from lancet import errors


def test_debug_prints_a_tables_internals(tmp_path):
    ds = lancet.write_dataset(pa.table({"a": [1, 2, 3]}), str(tmp_path / "t"), max_rows_per_file=2)
    ds.delete("a = 1")
    ds = lancet.dataset(ds.uri)
    schema = lancet.debug.format_schema(ds)
    assert '"a"' in schema and "int64" in schema
    manifest = lancet.debug.format_manifest(ds)
    assert "version: 2" in manifest and manifest.count("DataFragment {") == 2
    one = lancet.debug.format_fragment(ds.get_fragment(0).metadata, ds)
    assert "deletion_file: Some(" in one
    assert lancet.debug.format_fragment(ds.get_fragment(0), ds) == one
    history = lancet.debug.list_transactions(ds)
    assert len(history) == 2 and "Delete" in history[0] and "Overwrite" in history[1]
    assert lancet.debug.list_transactions(ds, max_transactions=1) == history[:1]
    with pytest.raises(TypeError):
        lancet.debug.format_fragment("fragment", ds)
    # pylance reads the same table's history as two transactions, newest first
    assert len(lance.debug.list_transactions(lance.dataset(ds.uri))) == 2


@pytest.mark.parametrize("value", ["2024-05-01 10:20:30", datetime.datetime(2024, 5, 1, 10, 20, 30)])
def test_util_reads_timestamps_as_pylance(value):
    assert lancet.util.sanitize_ts(value) == lance.util.sanitize_ts(value)
    assert lancet.util.td_to_micros(datetime.timedelta(seconds=1.5)) == 1_500_000
    with pytest.raises(TypeError):
        lancet.util.sanitize_ts(12)


def test_util_vector_tools_are_typed_not_implemented():
    for make in (lambda: lancet.util.KMeans(4), lambda: lancet.util.validate_vector_index(None, "v")):
        with pytest.raises(NotImplementedError):
            make()


def test_index_progress_reports_its_fraction():
    p = lancet.progress.IndexProgress("progress", "train", completed=3, total=4)
    assert p.fraction == lance.progress.IndexProgress("progress", "train", completed=3, total=4).fraction
    assert lancet.progress.IndexProgress("start", "train").fraction is None


def test_a_memory_table_lives_as_long_as_the_process():
    lancet.write_dataset(pa.table({"a": [1, 2]}), "memory://port-modules/t")
    assert lancet.dataset("memory://port-modules/t").count_rows() == 2
    lancet.write_dataset(pa.table({"a": [3]}), "memory://port-modules/t", mode="append")
    assert lancet.dataset("memory://port-modules/t").to_table().column("a").to_pylist() == [1, 2, 3]
    with pytest.raises(errors.NotFoundError):
        lancet.dataset("memory://port-modules/other")


def test_a_batch_udf_adds_columns_as_pylances(tmp_path):
    got = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        ds = lib.write_dataset(pa.table({"a": [1, 2, 3, 4]}), str(tmp_path / name), max_rows_per_file=3)

        @lib.batch_udf(output_schema=pa.schema([pa.field("double", pa.int64())]))
        def double(batch):
            return pa.record_batch([pa.compute.multiply(batch["a"], 2)], ["double"])

        assert double(pa.record_batch([pa.array([5])], ["a"]))["double"].to_pylist() == [10]
        ds.add_columns(double, read_columns=["a"])
        got[name] = lib.dataset(ds.uri).to_table().to_pydict()
    assert got["lancet"] == got["pylance"] == {"a": [1, 2, 3, 4], "double": [2, 4, 6, 8]}
    assert isinstance(double, lancet.udf.BatchUDF)
    with pytest.raises(NotImplementedError, match="checkpoint_file"):
        lancet.batch_udf(checkpoint_file=str(tmp_path / "cache.sqlite"))(lambda b: b)


def test_every_name_pylance_exports_exists_and_what_lancet_lacks_is_typed():
    missing = [n for n in lance.__all__ if n not in ("io",) and not hasattr(lancet, n)]
    assert missing == []
    for name in ("DatasetBasePath", "BlobColumn", "ShardWriter", "tokenize"):
        with pytest.raises(NotImplementedError, match=name):
            getattr(lancet, name)()
    # the names lancet implements are its own, not stand-ins
    assert lancet.MergeInsertBuilder.__module__ == "lancet.dataset"


def test_io_counters_grow_with_the_data_files_read_as_pylances(tmp_path):
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        ds = lib.write_dataset(pa.table({"a": range(1000)}), str(tmp_path / name), max_rows_per_file=100)
        ds = lib.dataset(ds.uri)
        iops, read = lib.iops_counter(), lib.bytes_read_counter()
        assert ds.to_table().num_rows == 1000
        grown = lib.iops_counter() - iops, lib.bytes_read_counter() - read
        # ten data files: at least one request each, and at least their 8,000 value bytes
        assert grown[0] >= 10 and grown[1] >= 8000, (name, grown)
        again = lib.iops_counter(), lib.bytes_read_counter()
        ds.count_rows()  # the manifest's counts: no data file is read
        assert (lib.iops_counter(), lib.bytes_read_counter()) == again, name


def test_schemas_as_json_as_pylances():
    s = pa.schema([
        pa.field("a", pa.int32(), False, metadata={"k": "v"}), ("b", pa.list_(pa.string())),
        ("c", pa.struct([("x", pa.float64()), ("t", pa.timestamp("us", "UTC"))])),
        ("d", pa.dictionary(pa.int32(), pa.string())), ("e", pa.list_(pa.float32(), 3)),
        ("f", pa.decimal128(10, 2)), ("g", pa.large_string()), ("h", pa.date32()), ("i", pa.binary(4)),
        ("j", pa.bool_()), ("k", pa.float16()), ("l", pa.timestamp("ns", "+08:00")), ("m", pa.time64("ns")),
        ("n", pa.duration("ms")), ("o", pa.large_list(pa.int8())), ("p", pa.decimal256(40, 3)),
    ], metadata={"m": "n"})
    mine = lancet.schema_to_json(s)
    assert mine == lance.schema.schema_to_json(s)
    assert lancet.json_to_schema(mine).equals(s, check_metadata=True)
    assert lancet.json_to_schema(mine).equals(lance.schema.json_to_schema(mine), check_metadata=True)
    with pytest.raises(ValueError):
        lancet.json_to_schema({"fields": [{"name": "a", "type": {"type": "nope"}, "nullable": True}]})
    with pytest.raises(ValueError):
        lancet.schema_to_json(pa.schema([("a", pa.map_(pa.string(), pa.int32()))]))


def test_tracked_files_list_what_each_version_references_as_pylance(tmp_path):
    import lance

    got = {}
    for name, lib in (("pylance", lance), ("lancet", lancet)):
        uri = str(tmp_path / name)
        t = pa.table({"id": pa.array(range(10), pa.int64())})
        ds = lib.write_dataset(t, uri, max_rows_per_file=5)
        ds.delete("id = 3")
        ds.create_scalar_index("id", "BTREE")
        lib.write_dataset(t, uri, mode="append")
        seen = []
        table = lib.dataset(uri).tracked_files(min_version=2, progress=lambda d, n: seen.append((d, n)))
        table = table.read_all()
        rows = sorted((r["version"], r["type"], r["path"].split("/")[0]) for r in table.to_pylist())
        got[name] = (table.schema, rows, set(table.column("base_uri").to_pylist()),
                     len(seen), seen[-1][0] if seen else None)
        assert set(table.column("base_uri").to_pylist()) == {uri}
    assert got["lancet"][0] == got["pylance"][0]
    assert got["lancet"][1] == got["pylance"][1]
    assert got["lancet"][3:] == got["pylance"][3:]
