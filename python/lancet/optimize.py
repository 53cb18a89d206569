"""Compaction in pieces, as pylance's ``lance.optimize``: a plan of picklable tasks run in
any process or machine, and one commit of every result.

>>> plan = Compaction.plan(ds, CompactionOptions(target_rows_per_fragment=1_000_000))
>>> results = [task.execute(ds) for task in plan.tasks]     # anywhere: tasks pickle
>>> Compaction.commit(ds, results)                          # one Rewrite
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import List, Optional

from . import _lancet
from .errors import InvalidInputError

__all__ = ["Compaction", "CompactionOptions", "CompactionPlan", "CompactionTask", "RewriteResult"]


@dataclass
class CompactionOptions:
    """pylance's compaction options (lancet's defaults are Lance 14.0.2's)."""

    target_rows_per_fragment: int = 1024 * 1024
    max_rows_per_group: int = 1024
    materialize_deletions: bool = True
    materialize_deletions_threshold: float = 0.1
    defer_index_remap: bool = False


@dataclass
class CompactionTask:
    """One group of fragments to rewrite, planned on `read_version` (JSON inside: it
    pickles, and `execute` runs it on any machine that reaches the table)."""

    read_version: int
    fragments: List[int]
    _task: str = field(repr=False, default="")

    def execute(self, dataset) -> "RewriteResult":
        """Writes the group's new fragments (nothing is published)."""
        native = _lancet.open(dataset.uri, version=self.read_version)
        return RewriteResult(self.read_version, self.fragments, native.compaction_execute(self._task))


@dataclass
class RewriteResult:
    """What a task wrote (its new fragments), for :meth:`Compaction.commit`."""

    read_version: int
    original_fragments: List[int]
    _result: str = field(repr=False, default="")


@dataclass
class CompactionPlan:
    read_version: int
    tasks: List[CompactionTask]

    @property
    def num_tasks(self) -> int:
        return len(self.tasks)


class Compaction:
    """pylance's ``lance.optimize.Compaction``: plan, execute anywhere, commit once."""

    @staticmethod
    def plan(dataset, options: Optional[CompactionOptions] = None) -> CompactionPlan:
        o = options or CompactionOptions()
        native = dataset._ds
        tasks = []
        for text in native.compaction_plan(o.target_rows_per_fragment, o.max_rows_per_group,
                                           o.materialize_deletions, o.materialize_deletions_threshold,
                                           o.defer_index_remap):
            t = json.loads(text)
            tasks.append(CompactionTask(t["read_version"], list(t["fragments"]), text))
        return CompactionPlan(native.version, tasks)

    @staticmethod
    def commit(dataset, results: List[RewriteResult]) -> dict:
        """Publishes every result in one Rewrite (BTrees remapped in the same commit) and
        moves `dataset` to the new version."""
        if not results:
            raise InvalidInputError("no compaction results to commit")
        versions = {r.read_version for r in results}
        if len(versions) != 1:
            raise InvalidInputError(f"results of plans on several versions: {sorted(versions)}")
        native = _lancet.open(dataset.uri, version=versions.pop())
        native, c = native.compaction_commit([r._result for r in results])
        dataset._moved(native)
        return {"fragments_removed": c["fragments_removed"], "fragments_added": c["fragments_added"],
                "version": c["version"]}
