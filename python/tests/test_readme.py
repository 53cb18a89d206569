"""The README's pylance script, unchanged: run with pylance as written and with its import
made ``import lancet as lance``, each in a directory of its own, it prints the same lines."""

import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _script() -> str:
    text = README.read_text()
    section = text.split("## A pylance script, unchanged", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _run(source: str, where: pathlib.Path) -> str:
    where.mkdir()
    done = subprocess.run([sys.executable, "-c", source], cwd=where, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_readme_script_prints_the_same_on_pylance_and_lancet(tmp_path):
    script = _script()
    assert script.startswith("import lance\n")
    theirs = _run(script, tmp_path / "pylance")
    mine = _run(script.replace("import lance\n", "import lancet as lance\n", 1), tmp_path / "lancet")
    assert mine == theirs
    assert len(mine.splitlines()) == 8
