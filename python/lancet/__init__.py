"""lancet: Lance tables from Python, over lancet's Rust crates.

Names follow pylance's (``lancet.dataset``, ``lancet.write_dataset``, ``LanceDataset``'s
methods), so a pylance script ports by changing its import. lancet adds the fragment
metadata tree (``layout="tree"``, ``convert_to_tree``, ``flatten``), which pylance 14.0.2
cannot open, ``verify``, and typed exceptions (``lancet.errors``).
"""

from __future__ import annotations

from typing import Optional, Union

from . import commit, errors, optimize
from ._data import to_reader
from ._lancet import __version__
from .dataset import LanceDataset, LanceFragment, LanceScanner
from .fragment import FragmentMetadata, LanceOperation, write_fragments

__all__ = [
    "dataset",
    "write_dataset",
    "LanceDataset",
    "LanceFragment",
    "LanceScanner",
    "LanceOperation",
    "FragmentMetadata",
    "write_fragments",
    "errors",
    "optimize",
    "__version__",
]


def dataset(uri, version: Optional[Union[int, str]] = None, *, tag: Optional[str] = None,
            branch: Optional[str] = None, **kwargs) -> LanceDataset:
    """Opens the table at `uri`: its latest version, `version` (a number, or a tag's name)
    or the version `tag` names."""
    return LanceDataset(uri, version, tag=tag, branch=branch)


def write_dataset(data, uri, schema=None, mode: str = "create", *, max_rows_per_file: int = 1024 * 1024,
                  max_rows_per_group: int = 1024, data_storage_version: Optional[str] = None,
                  enable_stable_row_ids: bool = False, layout: str = "flat", **kwargs) -> LanceDataset:
    """Writes `data` (pyarrow, pandas, Polars or any Arrow stream) to `uri`: a new table
    (``mode="create"``), rows appended (``"append"``) or every row replaced
    (``"overwrite"``), in one commit. ``layout="tree"`` keeps the fragments in a fragment
    metadata tree."""
    native = _lancet_write(to_reader(data, schema), str(uri), mode, layout, enable_stable_row_ids,
                           max_rows_per_file, max_rows_per_group, data_storage_version)
    return LanceDataset(str(uri), _native=native)


def _lancet_write(*args):
    from . import _lancet

    return _lancet.write(*args)
