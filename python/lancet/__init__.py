"""lancet: Lance tables from Python, over lancet's Rust crates.

Names follow pylance's (``lancet.dataset``, ``lancet.write_dataset``, ``LanceDataset``'s
methods), so a pylance script ports by changing its import. lancet adds the fragment
metadata tree (``layout="tree"``, ``convert_to_tree``, ``flatten``), which pylance 14.0.2
cannot open, ``verify``, and typed exceptions (``lancet.errors``).
"""

from __future__ import annotations

from typing import Optional, Union

from . import _absent, _args, _lancet, commit, debug, errors, file, fragment, optimize, progress, schema, udf, util
from ._data import to_reader
from ._lancet import __version__
from .dataset import (CleanupStats, LanceDataset, LanceFragment, LanceScanner, MergeInsertBuilder,
                      _merge_message_to_properties)
from .fragment import FragmentMetadata, write_fragments
from .progress import IndexProgress
from .scan_stats import ScanStatistics
from .session import Session
from .schema import json_to_schema, schema_to_json
from .transaction import Index, IndexFile, LanceOperation, Transaction
from .udf import BatchUDF, batch_udf
from .util import sanitize_ts

# pylance's names for features lancet does not implement: using one raises UnsupportedError
globals().update(_absent.NAMES)

__all__ = [
    "dataset",
    "write_dataset",
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "ScanStatistics",
    "Session",
    "LanceOperation",
    "Transaction",
    "schema",
    "FragmentMetadata",
    "write_fragments",
    "errors",
    "file",
    "optimize",
    "debug",
    "progress",
    "util",
    "udf",
    "batch_udf",
    "BatchUDF",
    "CleanupStats",
    "Index",
    "IndexFile",
    "IndexProgress",
    "MergeInsertBuilder",
    "json_to_schema",
    "schema_to_json",
    "sanitize_ts",
    "iops_counter",
    "bytes_read_counter",
    "__version__",
    *_absent.NAMES,
]


def iops_counter() -> int:
    """Read requests made through Lance's I/O scheduler in this process so far (the data
    files lancet reads with lance-file), as pylance's."""
    return _lancet.io_counters()[0]


def bytes_read_counter() -> int:
    """Bytes read through Lance's I/O scheduler in this process so far, as pylance's."""
    return _lancet.io_counters()[1]


def dataset(uri=None, version: Optional[Union[int, str]] = None, asof=None, block_size=None,
            commit_lock=None, index_cache_size=None, storage_options=None,
            default_scan_options=None, metadata_cache_size_bytes=None, index_cache_size_bytes=None,
            read_params=None, session=None, namespace_client=None, table_id=None,
            base_store_params=None, *, tag: Optional[str] = None,
            branch: Optional[str] = None) -> LanceDataset:
    """Opens the table at `uri`: its latest version, `version` (a number, or a tag's name), the
    version `tag` names, or the latest version committed at or before `asof` (a datetime, or
    an ISO 8601 string), as pylance's. Cache sizes and `block_size` change no answer and are
    accepted; pylance's other arguments are refused unless left at their default
    (:mod:`lancet._args`)."""
    where = "lancet.dataset"
    if uri is None:
        raise errors.InvalidInputError(f"{where}: give the table's uri (lancet has no namespaces)")
    _args.refuse(where, commit_lock=commit_lock, default_scan_options=default_scan_options,
                 read_params=read_params, namespace_client=namespace_client,
                 table_id=table_id, base_store_params=base_store_params)
    if storage_options:
        _args.refuse(where, storage_options=storage_options)
    if session is not None and not isinstance(session, Session):
        raise TypeError(f"{where}: session must be a lancet.Session, not {type(session).__name__}")
    if session is None and (index_cache_size_bytes is not None or metadata_cache_size_bytes is not None):
        session = Session(index_cache_size_bytes, metadata_cache_size_bytes)
    ds = LanceDataset(uri, version, tag=tag, branch=branch, session=session)
    if asof is not None:
        if version is not None or tag is not None:
            raise errors.InvalidInputError("give a version or asof, not both")
        ds = ds.checkout_version(_version_at(ds, asof))
    return ds


def _version_at(ds: LanceDataset, asof) -> int:
    """The latest version of `ds`'s table committed at or before `asof`."""
    asof = util.sanitize_ts(asof)
    if asof.tzinfo is None:  # naive: the local time, as pylance reads it
        asof = asof.astimezone()
    at = [v["version"] for v in ds.versions() if v["timestamp"].astimezone() <= asof]
    if not at:
        raise errors.NotFoundError(f"no version of {ds.uri} was committed at or before {asof}")
    return max(at)


def write_dataset(data_obj, uri=None, schema=None, mode: str = "create", *, max_rows_per_file: int = 1024 * 1024,
                  max_rows_per_group: int = 1024, max_bytes_per_file: int = 90 * 1024 ** 3,
                  data_cache_bytes=None, max_page_bytes=None, commit_lock=None, progress=None,
                  storage_options=None, data_storage_version: Optional[str] = None,
                  use_legacy_format=None, enable_v2_manifest_paths: bool = True,
                  enable_stable_row_ids: bool = False, auto_cleanup_options=None,
                  commit_message=None, transaction_properties=None, initial_bases=None,
                  target_bases=None, target_all_bases=None, base_store_params=None,
                  external_blob_mode: str = "reference", allow_external_blob_outside_bases: bool = False,
                  blob_pack_file_size_threshold=None, namespace_client=None, table_id=None,
                  session=None, layout: str = "flat") -> LanceDataset:
    """Writes `data_obj` (pyarrow, pandas, Polars or any Arrow stream) to `uri`: a new table
    (``mode="create"``), rows appended (``"append"``) or every row replaced
    (``"overwrite"``), in one commit. ``layout="tree"`` keeps the fragments in a fragment
    metadata tree. `commit_message` and `transaction_properties` are recorded in the
    commit's transaction, as pylance's. Cache and page sizes change no answer and are accepted; pylance's other
    arguments are refused unless left at their default (:mod:`lancet._args`)."""
    where = "lancet.write_dataset"
    if uri is None:
        raise errors.InvalidInputError(f"{where}: give the table's uri (lancet has no namespaces)")
    fragment._check_progress(where, progress)
    _args.refuse(where, commit_lock=commit_lock, auto_cleanup_options=auto_cleanup_options,
                 initial_bases=initial_bases, target_bases=target_bases, target_all_bases=target_all_bases,
                 base_store_params=base_store_params, blob_pack_file_size_threshold=blob_pack_file_size_threshold,
                 namespace_client=namespace_client, table_id=table_id, session=session)
    if storage_options:
        _args.refuse(where, storage_options=storage_options)
    _args.refuse_unless(where, "max_bytes_per_file", max_bytes_per_file, 90 * 1024 ** 3)
    _args.refuse_unless(where, "enable_v2_manifest_paths", enable_v2_manifest_paths, True)
    _args.refuse_unless(where, "external_blob_mode", external_blob_mode, "reference")
    _args.refuse_unless(where, "allow_external_blob_outside_bases", allow_external_blob_outside_bases, False)
    if use_legacy_format is not None:
        if data_storage_version is not None:
            raise errors.InvalidInputError("give data_storage_version or use_legacy_format, not both")
        data_storage_version = "legacy" if use_legacy_format else "stable"
    if data_storage_version in ("legacy", "0.1"):
        raise errors.UnsupportedError("lancet.write_dataset: lancet writes Lance 2.x data files, "
                                      "not legacy (0.1) ones")
    native = _lancet_write(to_reader(data_obj, schema), str(uri), mode, layout, enable_stable_row_ids,
                           max_rows_per_file, max_rows_per_group, data_storage_version, progress,
                           _merge_message_to_properties(commit_message, transaction_properties))
    return LanceDataset(str(uri), _native=native)


def _lancet_write(*args):
    from . import _lancet

    return _lancet.write(*args)
