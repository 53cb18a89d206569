"""pylance's signatures, argument by argument (issue 42): each function a pylance script
calls takes pylance 14.0.2's parameters under the same names, kinds, order and defaults, read
from the installed pylance; no argument is silently dropped: one lancet does not honour is a
``NotImplementedError`` unless left at its default, and a name pylance lacks a ``TypeError``."""

import datetime
import importlib
import inspect

import lance
import lance.fragment
import pyarrow as pa
import pytest

import lancet
import lancet.dataset as lancet_dataset_module  # noqa: F401 - the module beside the function
from lancet import errors

lance_ds = importlib.import_module("lance.dataset")
lance_debug = importlib.import_module("lance.debug")
lancet_ds = importlib.import_module("lancet.dataset")

# (lancet's, pylance's, lancet's own keyword-only extras)
PAIRS = [
    (lancet.dataset, lance.dataset, {"tag", "branch"}),
    (lancet.write_dataset, lance.write_dataset, {"layout"}),
    (lancet.LanceDataset.scanner, lance.LanceDataset.scanner, set()),
    (lancet.LanceDataset.to_table, lance.LanceDataset.to_table, set()),
    (lancet.LanceDataset.to_batches, lance.LanceDataset.to_batches, set()),
    (lancet.LanceDataset.head, lance.LanceDataset.head, set()),
    (lancet.LanceDataset.count_rows, lance.LanceDataset.count_rows, set()),
    (lancet.LanceDataset.take, lance.LanceDataset.take, set()),
    (lancet.LanceDataset.delete, lance.LanceDataset.delete, set()),
    (lancet.LanceDataset.update, lance.LanceDataset.update, set()),
    (lancet.LanceDataset.add_columns, lance.LanceDataset.add_columns, set()),
    (lancet.LanceDataset.create_scalar_index, lance.LanceDataset.create_scalar_index, set()),
    (lancet.LanceDataset.cleanup_old_versions, lance.LanceDataset.cleanup_old_versions, {"dry_run"}),
    (lancet.LanceDataset.commit, lance.LanceDataset.commit, set()),
    (lancet.LanceFragment.count_rows, lance.fragment.LanceFragment.count_rows, set()),
    (lancet.LanceFragment.scanner, lance.fragment.LanceFragment.scanner, {"schema"}),
    (lancet.LanceFragment.to_table, lance.fragment.LanceFragment.to_table, set()),
    (lancet.LanceFragment.to_batches, lance.fragment.LanceFragment.to_batches, set()),
    (lancet.LanceFragment.head, lance.fragment.LanceFragment.head, set()),
    (lancet_ds.DatasetOptimizer.compact_files, lance_ds.DatasetOptimizer.compact_files, set()),
    (lancet_ds.DatasetOptimizer.optimize_indices, lance_ds.DatasetOptimizer.optimize_indices, set()),
    (lancet.fragment.write_fragments, lance.fragment.write_fragments, set()),
    (lancet.LanceDataset.config, lance.LanceDataset.config, set()),
    (lancet.LanceDataset.update_config, lance.LanceDataset.update_config, set()),
    (lancet.LanceDataset.delete_config_keys, lance.LanceDataset.delete_config_keys, set()),
    (lancet.LanceDataset.update_metadata, lance.LanceDataset.update_metadata, set()),
    (lancet.LanceDataset.update_schema_metadata, lance.LanceDataset.update_schema_metadata, set()),
    (lancet.LanceDataset.replace_schema_metadata, lance.LanceDataset.replace_schema_metadata, set()),
    (lancet.LanceDataset.update_field_metadata, lance.LanceDataset.update_field_metadata, set()),
    (lancet.LanceDataset.replace_field_metadata, lance.LanceDataset.replace_field_metadata, set()),
    (lancet.LanceDataset.fragment_ids, lance.LanceDataset.fragment_ids, set()),
    (lancet.LanceDataset.get_version, lance.LanceDataset.get_version, set()),
    (lancet.LanceDataset.validate, lance.LanceDataset.validate, set()),
    (lancet.LanceDataset.checkout_latest, lance.LanceDataset.checkout_latest, set()),
    (lancet.LanceDataset.insert, lance.LanceDataset.insert, set()),
    (lancet.LanceDataset.to_pandas, lance.LanceDataset.to_pandas, set()),
    (lancet.LanceDataset.slice, lance.LanceDataset.slice, set()),
    (lancet.LanceDataset.sample, lance.LanceDataset.sample, set()),
    (lancet.LanceDataset.truncate_table, lance.LanceDataset.truncate_table, set()),
    (lancet.LanceDataset.shallow_clone, lance.LanceDataset.shallow_clone, set()),
    (lancet.LanceDataset.drop, lance.LanceDataset.drop, set()),
    (lancet.LanceDataset.drop_index, lance.LanceDataset.drop_index, set()),
    (lancet.LanceDataset.read_transaction, lance.LanceDataset.read_transaction, set()),
    (lancet.LanceDataset.describe_indices, lance.LanceDataset.describe_indices, set()),
    (lancet.LanceDataset.create_branch, lance.LanceDataset.create_branch, set()),
    (lancet_ds.Branches.list_ordered, lance_ds.Branches.list_ordered, set()),
    (lancet_ds.Branches.delete, lance_ds.Branches.delete, set()),
    (lancet_ds.LanceStats.dataset_stats, lance_ds.LanceStats.dataset_stats, set()),
    (lancet.LanceDataset.get_transactions, lance.LanceDataset.get_transactions, set()),
    (lancet.LanceFragment.take, lance.fragment.LanceFragment.take, set()),
    (lancet.LanceFragment.delete, lance.fragment.LanceFragment.delete, set()),
    (lancet.LanceFragment.delete_rows, lance.fragment.LanceFragment.delete_rows, set()),
    (lancet.LanceFragment.to_pandas, lance.fragment.LanceFragment.to_pandas, set()),
    (lancet.LanceFragment.validate, lance.fragment.LanceFragment.validate, set()),
    (lancet.LanceFragment.data_files, lance.fragment.LanceFragment.data_files, set()),
    (lancet.LanceFragment.deletion_file, lance.fragment.LanceFragment.deletion_file, set()),
    (lancet.FragmentMetadata.__init__, lance.fragment.FragmentMetadata.__init__, set()),
    (lancet.FragmentMetadata.to_json, lance.fragment.FragmentMetadata.to_json, set()),
    (lancet.FragmentMetadata.from_json, lance.fragment.FragmentMetadata.from_json, set()),
    (lancet.debug.format_schema, lance_debug.format_schema, set()),
    (lancet.debug.format_manifest, lance_debug.format_manifest, set()),
    (lancet.debug.format_fragment, lance_debug.format_fragment, set()),
    (lancet.debug.list_transactions, lance_debug.list_transactions, set()),
    (lancet.util.sanitize_ts, lance.util.sanitize_ts, set()),
    (lancet.util.td_to_micros, lance.util.td_to_micros, set()),
    (lancet.progress.FileSystemFragmentWriteProgress.__init__,
     lance.progress.FileSystemFragmentWriteProgress.__init__, set()),
]

# where lancet's default differs from pylance's on purpose, and why
DEFAULTS_DIFFER = {
    # pylance requires the index type; lancet builds one type, so it may be left out
    ("create_scalar_index", "index_type"): "BTREE",
    # FragmentMetadata's: pylance's dataclass makes a new empty list; lancet's None is the same
    # (no overlays)
    ("__init__", "overlays"): None,
}


def _default(value):
    value = getattr(value, "value", value)  # an enum's value ("row" for DocumentGranularity.ROW)
    return value


def _params(fn, extras=()):
    # `self` is positional-only in a method with a positional-only extra (the `/` after
    # Fragment.scanner's `schema`); no caller passes `self` by keyword, so both kinds match
    def kind(p):
        return p.POSITIONAL_OR_KEYWORD if p.name == "self" else p.kind

    return [(p.name, kind(p), _default(p.default)) for p in inspect.signature(fn).parameters.values()
            if p.name not in extras]


@pytest.mark.parametrize("mine,theirs,extras", PAIRS, ids=[p[1].__qualname__ for p in PAIRS])
def test_the_signature_is_pylances(mine, theirs, extras):
    got = _params(mine, extras)
    want = _params(theirs)
    name = theirs.__name__
    want = [(n, k, DEFAULTS_DIFFER.get((name, n), d)) for n, k, d in want]
    assert [(n, k) for n, k, _ in got] == [(n, k) for n, k, _ in want]
    assert got == want
    # lancet's own extras are keyword-only with a default, or (pyarrow's `schema` of
    # Fragment.scanner, which engines pass) positional-only before pylance's keyword-only
    # ones: no pylance call binds to them
    for p in inspect.signature(mine).parameters.values():
        if p.name in extras:
            assert p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_ONLY) and p.default is not p.empty, p.name


@pytest.fixture
def ds(tmp_uri):
    t = pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array(range(100), pa.int64())})
    return lancet.write_dataset(t, tmp_uri, max_rows_per_file=40)


UNHONOURED = [
    ("dataset asof+version", lambda d: lancet.dataset(d.uri, version=1, asof=datetime.datetime.now()),
     errors.InvalidInputError),
    ("dataset storage_options", lambda d: lancet.dataset(d.uri, storage_options={"region": "x"}),
     NotImplementedError),
    ("dataset commit_lock", lambda d: lancet.dataset(d.uri, commit_lock=lambda v: None), NotImplementedError),
    ("scanner nearest", lambda d: d.scanner(nearest={"column": "v", "q": [1.0]}), NotImplementedError),
    ("scanner order_by", lambda d: d.to_table(order_by=["v"]), NotImplementedError),
    ("scanner include_deleted_rows without row ids", lambda d: d.to_table(include_deleted_rows=True), ValueError),
    ("scanner unknown keyword", lambda d: d.to_table(no_such_argument=1), TypeError),
    ("to_batches unknown keyword", lambda d: list(d.to_batches(no_such_argument=1)), TypeError),
    ("delete retries", lambda d: d.delete("id = 1", conflict_retries=3), NotImplementedError),
    ("update storage version", lambda d: d.update({"v": "v + 1"}, data_storage_version="2.1"),
     NotImplementedError),
    ("index bitmap", lambda d: d.create_scalar_index("v", "BITMAP"), NotImplementedError),
    ("index params", lambda d: d.create_scalar_index("v", "BTREE", zone_size=8), NotImplementedError),
    ("write_dataset progress", lambda d: lancet.write_dataset(
        d.to_table(), d.uri, mode="append", progress=object()), TypeError),
    ("write_dataset legacy files", lambda d: lancet.write_dataset(
        d.to_table(), d.uri, mode="overwrite", data_storage_version="legacy"), NotImplementedError),
    ("compact selection", lambda d: d.optimize.compact_files(max_source_fragments=2), NotImplementedError),
    ("optimize index names", lambda d: d.optimize.optimize_indices(index_names=["v_idx"]), NotImplementedError),
    ("optimize unknown", lambda d: d.optimize.optimize_indices(no_such_argument=1), TypeError),
    ("commit operation", lambda d: lancet.LanceDataset.commit(d.uri, object()), TypeError),
    ("merge retries", lambda d: d.merge_insert("id").conflict_retries(3), NotImplementedError),
    ("write_fragments progress", lambda d: lancet.fragment.write_fragments(
        d.to_table(), d.uri, progress=object()), TypeError),
    ("cleanup versions", lambda d: d.cleanup_old_versions(versions=[1]), NotImplementedError),
]


@pytest.mark.parametrize("name,call,raised", UNHONOURED, ids=[u[0] for u in UNHONOURED])
def test_an_argument_lancet_does_not_honour_is_refused_and_nothing_changes(ds, name, call, raised):
    before = (ds.version, ds.to_table())
    with pytest.raises(raised):
        call(ds)
    after = lancet.dataset(ds.uri)
    assert (after.version, after.to_table()) == before, name


def test_arguments_that_change_no_answer_are_accepted_whatever_their_value(ds):
    plain = ds.to_table(filter="v < 50")
    tuned = ds.to_table(filter="v < 50", batch_readahead=1, fragment_readahead=1, io_buffer_size=1 << 20,
                        late_materialization=True, use_stats=False, use_scalar_index=False,
                        scan_in_order=True, prefilter=True)
    assert tuned == plain
    assert lancet.dataset(ds.uri, index_cache_size=10, block_size=4096,
                          metadata_cache_size_bytes=1 << 20).count_rows() == 100


def test_batch_size_is_honoured(ds, tmp_uri):
    sizes = [b.num_rows for b in ds.to_batches(batch_size=7)]
    assert max(sizes) <= 7 and sum(sizes) == 100
    peer = lance.write_dataset(ds.to_table(), tmp_uri + "-peer", max_rows_per_file=40)
    assert max(b.num_rows for b in peer.to_batches(batch_size=7)) <= 7


def test_asof_opens_the_version_committed_by_then_as_pylance(ds, tmp_uri):
    import time

    time.sleep(0.05)
    mid = datetime.datetime.now()
    time.sleep(0.05)
    ds.delete("id < 10")
    assert lancet.dataset(ds.uri, asof=mid).version == 1
    assert lancet.dataset(ds.uri, asof=mid).count_rows() == 100
    assert lancet.dataset(ds.uri).count_rows() == 90
    # pylance's answer on the same table
    assert lance.dataset(ds.uri, asof=mid).version == 1
    with pytest.raises(errors.NotFoundError):
        lancet.dataset(ds.uri, asof=datetime.datetime(2000, 1, 1))
