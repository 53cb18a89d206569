"""Index descriptions, as pylance's ``lance.indices`` names them: what
:meth:`LanceDataset.describe_indices` returns."""

from __future__ import annotations

import datetime as _dt
from typing import List, Optional

from .bitmap import Bitmap

__all__ = ["IndexDescription", "IndexSegmentDescription"]


class IndexSegmentDescription:
    """One segment of an index (pylance's ``IndexSegmentDescription``)."""

    def __init__(self, d: dict):
        self.uuid: str = d["uuid"]
        self.dataset_version_at_last_update: int = d["dataset_version"]
        self.fragment_ids = Bitmap(d["fragment_ids"])
        self.index_version: int = d["index_version"]
        created = d["created_at"]
        self.created_at: Optional[_dt.datetime] = (
            None if created is None else _dt.datetime.fromtimestamp(created / 1000, tz=_dt.timezone.utc))
        files = d["files"]
        self.size_bytes: Optional[int] = None if files is None else sum(n for _, n in files)
        self.base_id: Optional[int] = d["base_id"]
        self.covering_fields: List[int] = list(d["covering_fields"])

    def __repr__(self) -> str:
        return (f"IndexSegmentDescription(uuid={self.uuid!r}, "
                f"dataset_version_at_last_update={self.dataset_version_at_last_update}, "
                f"fragment_ids={sorted(self.fragment_ids)}, index_version={self.index_version})")


class IndexDescription:
    """One index, every segment of its name (pylance's ``IndexDescription``)."""

    def __init__(self, d: dict, field_names: List[str]):
        self.name: str = d["name"]
        self.type_url: str = d["type_url"]
        self.index_type: str = d["index_type"]
        self.num_rows_indexed: int = d["num_rows_indexed"]
        self.fields: List[int] = list(d["fields"])
        self.field_names: List[str] = field_names
        self.segments: List[IndexSegmentDescription] = [IndexSegmentDescription(s) for s in d["segments"]]
        # lancet describes no index type's details (pylance's BTree details are empty too)
        self.details: dict = {}
        self.total_size_bytes: Optional[int] = d["total_size_bytes"]

    def __repr__(self) -> str:
        names = ", ".join(f'"{n}"' for n in self.field_names)
        return (f"IndexDescription(name={self.name!r}, type_url={self.type_url!r}, "
                f"num_rows_indexed={self.num_rows_indexed}, fields={self.fields}, "
                f"field_names=[{names}], num_segments={len(self.segments)}, "
                f"total_size_bytes={self.total_size_bytes})")
