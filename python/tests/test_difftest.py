"""The differential tester with the package taking turns (`--py`): random sequences in which
pylance, lancet's CLI and this package share one table, every step checked against a model
of the live rows (tests/interop/difftest.py). A short fixed run; long runs are in
docs/performance.md."""

import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def lancet_bin() -> str:
    """The CLI the Rust test built (LANCET_BIN), or the workspace's debug build."""
    path = os.environ.get("LANCET_BIN")
    if not path:
        target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
        path = os.path.join(target, "debug", "lancet")
    assert os.path.exists(path), f"no lancet binary at {path}: build it (cargo build -p lancet-cli)"
    return path


def test_random_sequences_shared_with_pylance_and_the_cli(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "tests/interop/difftest.py"), "--lancet", lancet_bin(),
         "--seed", "3300", "--runs", "4", "--steps", "15", "--py", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    assert summary["failed_seed"] is None, summary
    assert summary["runs"] == 4
