"""A table's internals printed for people (pylance's ``lance.debug``): the schema with field
ids, the manifest, one fragment, the recent transactions. The text is lancet's own (the Lance
protobuf messages as lancet decodes them), not pylance's layout: read it, do not parse it."""

from __future__ import annotations

from typing import List

from . import _lancet

__all__ = ["format_fragment", "format_manifest", "format_schema", "list_transactions"]


def format_schema(dataset) -> str:
    """The table's schema as its manifest records it: each field with its id, parent and
    logical type, and the schema's metadata."""
    return _lancet.format_schema(dataset._ds)


def format_manifest(dataset) -> str:
    """The whole manifest of the dataset's version, its fragments included."""
    return _lancet.format_manifest(dataset._ds)


def format_fragment(fragment, dataset) -> str:
    """One fragment's record: a ``FragmentMetadata`` (``LanceFragment.metadata``) or a
    ``LanceFragment``, of `dataset`."""
    from .fragment import FragmentMetadata

    metadata = getattr(fragment, "metadata", fragment)
    if not isinstance(metadata, FragmentMetadata):
        raise TypeError(f"format_fragment takes a FragmentMetadata, not {type(fragment).__name__}")
    return _lancet.format_fragment(metadata.to_bytes())


def list_transactions(dataset, /, max_transactions: int = 10) -> List[str]:
    """The transactions of the dataset's version and the ones before it, newest first, at
    most `max_transactions` of them (a version that records none is skipped)."""
    if max_transactions < 1:
        return []
    return [t for t in _lancet.list_transactions(dataset._ds, max_transactions) if t is not None]
