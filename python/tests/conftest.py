import pathlib

import pytest


@pytest.fixture
def tmp_uri(tmp_path: pathlib.Path):
    """A location for a new table."""
    return str(tmp_path / "table")
