"""pylance's ``lance.file``, ported: single Lance files written and read by each engine,
the other reading them back, with schema metadata, global buffers, ranges, takes and
projections; the refusals pylance makes."""

import lance.file
import pyarrow as pa
import pytest

import lancet
import lancet.file
from lancet import errors

FILES = {"pylance": lance.file, "lancet": lancet.file}


def _table():
    return pa.table({"a": pa.array(range(10), pa.int64()), "s": [f"s{i}" for i in range(10)],
                     "l": [[i, i + 1] for i in range(10)]})


@pytest.mark.parametrize("writer", list(FILES))
@pytest.mark.parametrize("version", [None, "2.0", "2.1"])
def test_a_file_written_by_either_engine_reads_alike_in_both(tmp_path, writer, version):
    path = str(tmp_path / "f.lance")
    kw = {} if version is None else {"version": version}
    with FILES[writer].LanceFileWriter(path, **kw) as w:
        for b in _table().to_batches(max_chunksize=4):
            w.write_batch(b)
        assert w.add_global_buffer(b"abc") == 1 and w.add_global_buffer(b"de") == 2
        w.add_schema_metadata("k", "v")
    assert w.size_bytes > 0 and w.close() is None
    got = {}
    for name, mod in FILES.items():
        r = mod.LanceFileReader(path)
        m = r.metadata()
        got[name] = (r.num_rows(), r.read_all(batch_size=3).to_table().to_pydict(),
                     [b.num_rows for b in r.read_all(batch_size=3).to_batches()],
                     r.read_range(2, 5).to_table().to_pydict(), r.take_rows([0, 3, 9]).to_table().to_pydict(),
                     mod.LanceFileReader(path, columns=["s"]).read_range(1, 2).to_table().to_pydict(),
                     r.read_global_buffer(1), r.read_global_buffer(2), m.schema.metadata,
                     (m.major_version, m.minor_version), m.num_rows,
                     [(b.position, b.size) for b in m.global_buffers], m.num_data_bytes)
    assert got["lancet"] == got["pylance"]
    assert got["lancet"][1] == _table().to_pydict()
    # the footer's version: 2.0 files record Lance's older spelling, 0.3
    assert got["lancet"][9] == {None: (2, 2), "2.0": (0, 3), "2.1": (2, 1)}[version]


def test_bad_calls_are_refused_as_pylance_refuses(tmp_path):
    path = str(tmp_path / "f.lance")
    lance.file.LanceFileWriter(path, _table().schema).write_batch(_table())
    with lancet.file.LanceFileWriter(path) as w:
        w.write_batch(_table())
    for name, mod in FILES.items():
        r = mod.LanceFileReader(path)
        with pytest.raises(ValueError):
            r.read_range(8, 5).to_table()
        with pytest.raises(ValueError, match="ascending"):
            r.take_rows([3, 1])
        with pytest.raises(Exception):
            mod.LanceFileWriter(str(tmp_path / f"empty-{name}.lance")).close()
    with pytest.raises(errors.NotFoundError):
        lancet.file.LanceFileReader(str(tmp_path / "nope.lance"))
    with pytest.raises(errors.InvalidInputError):  # a batch of another schema
        with lancet.file.LanceFileWriter(str(tmp_path / "g.lance"), _table().schema) as w:
            w.write_batch(pa.table({"a": [1]}))
    with pytest.raises(NotImplementedError):
        lancet.file.LanceFileWriter(str(tmp_path / "h.lance"), version="legacy")
    with pytest.raises(NotImplementedError):
        lancet.file.LanceFileReader(path).metadata().columns
    assert lancet.file.stable_version() == lance.file.stable_version()
