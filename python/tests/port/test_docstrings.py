"""pylance 14.0.2's own docstring examples, run against lancet: each example's code with its
imports of ``lance`` turned into ``lancet`` (``import lancet as lance``), in a directory of
its own, must print what pylance's documentation says it prints. An example of a feature
lancet does not implement must fail with the typed ``NotImplementedError`` naming it, never
with an ``AttributeError`` or a wrong answer."""

import doctest
import importlib
import re
import types

import lance  # noqa: F401 - the documentation's source
import pytest

MODULES = ["lance.dataset", "lance.fragment", "lance.util"]

# docstring -> the feature lancet does not implement (the example must stop at it, typed)
NOT_IMPLEMENTED = {
    "lance.dataset.LanceDataset.io_stats_incremental": "I/O statistics",
    "lance.dataset.LanceDataset.io_stats_snapshot": "I/O statistics",
    "lance.dataset.LanceDataset.mem_wal_writer": "the MemWAL",
    "lance.dataset.LanceDataset.base_paths": "tables with several base paths",
    "lance.dataset.MergeInsertBuilder.analyze_plan": "merge plans",
    "lance.dataset.MergeInsertBuilder.explain_plan": "merge plans",
    "lance.fragment.write_fragments": "tables with several base paths",
    "lance.util.KMeans": "vector tools",
}


def _examples():
    finder = doctest.DocTestFinder()
    found = []
    for name in MODULES:
        for test in finder.find(importlib.import_module(name)):
            if test.examples:
                found.append(test)
    return sorted(found, key=lambda t: t.name)


EXAMPLES = _examples()


def _as_lancet(source: str, namespace: str) -> str:
    """An example's code with pylance's imports turned into lancet's, and ``memory://``
    tables kept apart from other examples' (lancet's memory stores live with the process)."""
    source = re.sub(r"^(\s*)import lance\s*$", r"\1import lancet as lance", source, flags=re.M)
    source = re.sub(r"^(\s*)import lance\.(\w+)(\s*)$", r"\1import lancet as lance\3", source, flags=re.M)
    source = re.sub(r"\bfrom lance\.(\w+) import\b", r"from lancet.\1 import", source)
    source = re.sub(r"\bfrom lance import\b", "from lancet import", source)
    return source.replace("memory://", f"memory://{namespace}/")


class _Recorder(doctest.DocTestRunner):
    """Keeps each example that failed: its exception, or what it printed instead."""

    def __init__(self):
        super().__init__(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
        self.failed = []

    def report_failure(self, out, test, example, got):
        self.failed.append((example.source.strip(), f"printed {got!r}, documented {example.want!r}"))

    def report_unexpected_exception(self, out, test, example, exc_info):
        self.failed.append((example.source.strip(), exc_info[1]))


@pytest.mark.parametrize("test", EXAMPLES, ids=[t.name.removeprefix("lance.") for t in EXAMPLES])
def test_pylances_documented_example_runs_on_lancet(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = test.name.replace(".", "-")
    for example in test.examples:
        example.source = _as_lancet(example.source, namespace)
    # the documenting module's third-party imports (``pd``, ``pa``), none of pylance's own names
    globs = {k: v for k, v in test.globs.items()
             if isinstance(v, types.ModuleType) and not v.__name__.split(".")[0] == "lance"}
    ported = doctest.DocTest(test.examples, globs, test.name, test.filename, test.lineno, test.docstring)
    runner = _Recorder()
    runner.run(ported, clear_globs=True)
    if test.name in NOT_IMPLEMENTED:
        assert runner.failed, f"{test.name} runs on lancet: take it out of NOT_IMPLEMENTED"
        source, first = runner.failed[0]
        assert isinstance(first, NotImplementedError), (source, first)
        assert not isinstance(first, AttributeError)
        return
    assert runner.failed == [], runner.failed
