"""Progress of a write, fragment by fragment (pylance's ``lance.progress``): give a
:class:`FragmentWriteProgress` as ``progress=`` to ``write_dataset`` or ``write_fragments``
and its ``begin`` is called with each new fragment's ``FragmentMetadata`` before the
fragment's rows are written (id 0, no files yet), its ``complete`` once the fragment's data
file is finished. An exception either raises stops the write, which publishes nothing, and
comes out of the call unchanged."""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, Literal, Optional

if TYPE_CHECKING:
    from .fragment import FragmentMetadata

__all__ = ["FragmentWriteProgress", "NoopFragmentWriteProgress", "FileSystemFragmentWriteProgress",
           "IndexProgress"]


@dataclass
class IndexProgress:
    """A progress event of an index build (pylance's): the type accepted for its shape;
    lancet's BTree builds do not emit events."""

    event: Literal["start", "progress", "complete"]
    stage: str
    completed: Optional[int] = None
    total: Optional[int] = None
    unit: str = ""

    @property
    def fraction(self) -> Optional[float]:
        """The share done when both counts are known (``None`` when ``total`` is 0)."""
        if self.completed is None or self.total in (None, 0):
            return None
        return min(self.completed / self.total, 1.0)


class FragmentWriteProgress(ABC):
    """Told of each fragment a write starts and finishes. (``_do_begin`` and
    ``_do_complete`` take the fragment as JSON, as pylance's writer calls them, so an
    observer written for lancet also serves pylance.)"""

    def _do_begin(self, fragment_json: str, **kwargs):
        from .fragment import FragmentMetadata

        return self.begin(FragmentMetadata.from_json(fragment_json), **kwargs)

    def _do_complete(self, fragment_json: str, **kwargs):
        from .fragment import FragmentMetadata

        return self.complete(FragmentMetadata.from_json(fragment_json), **kwargs)

    @abstractmethod
    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        """A new fragment is about to be written (its id is not assigned yet)."""

    @abstractmethod
    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        """The fragment's data file is finished."""


class NoopFragmentWriteProgress(FragmentWriteProgress):
    """Does nothing (the default)."""

    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        pass

    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        pass


class FileSystemFragmentWriteProgress(FragmentWriteProgress):
    """Records each fragment in progress as files under `base_uri` (pylance's layout):
    ``fragment_{id}.in_progress`` (the id and `metadata`) from ``begin`` until ``complete``,
    and ``fragment_{id}.json``, the fragment as it began."""

    PROGRESS_EXT: str = ".in_progress"

    def __init__(self, base_uri: str, metadata: Optional[Dict[str, str]] = None):
        from pyarrow.fs import FileSystem

        self._fs, self._base_path = FileSystem.from_uri(base_uri)
        self._metadata = metadata if metadata else {}

    def _in_progress_path(self, fragment: "FragmentMetadata") -> str:
        return os.path.join(self._base_path, f"fragment_{fragment.id}{self.PROGRESS_EXT}")

    def _fragment_file(self, fragment: "FragmentMetadata") -> str:
        return os.path.join(self._base_path, f"fragment_{fragment.id}.json")

    def begin(self, fragment: "FragmentMetadata", **kwargs) -> None:
        self._fs.create_dir(self._base_path, recursive=True)
        with self._fs.open_output_stream(self._in_progress_path(fragment)) as out:
            out.write(json.dumps({"fragment_id": fragment.id, "metadata": self._metadata}).encode())
        with self._fs.open_output_stream(self._fragment_file(fragment)) as out:
            out.write(json.dumps(fragment.to_json()).encode())

    def complete(self, fragment: "FragmentMetadata", **kwargs) -> None:
        self._fs.delete_file(self._in_progress_path(fragment))
