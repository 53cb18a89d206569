"""pylance's ``Session``, ported: the caches handles share, twin against pylance 14.0.2."""

import lance
import pyarrow as pa
import pytest

import lancet

ENGINES = {"pylance": lance, "lancet": lancet}


@pytest.fixture
def twins(tmp_path):
    out = {}
    for name, lib in ENGINES.items():
        t = pa.table({"id": pa.array(range(5000), pa.int64()),
                      "v": pa.array([i * 0.5 for i in range(5000)])})
        ds = lib.write_dataset(t, str(tmp_path / name), max_rows_per_file=1000)
        ds.create_scalar_index("id", "BTREE")
        out[name] = str(tmp_path / name)
    return out


def test_a_session_is_shared_as_in_pylance(twins):
    for name, lib in ENGINES.items():
        uri = twins[name]
        s = lib.Session(index_cache_size_bytes=1 << 20, metadata_cache_size_bytes=1 << 20)
        assert repr(s).startswith("Session(index_cache_size_bytes=")
        ds = lib.dataset(uri, session=s)
        assert ds.session().is_same_as(s), name
        assert ds.session().is_same_as(ds.session()), name
        assert not lib.dataset(uri).session().is_same_as(s), name
        before = s.size_bytes()
        assert ds.to_table(filter="id = 4321").num_rows == 1
        assert s.size_bytes() > before >= 0, name
        assert s.index_cache_size_bytes() > 0, name


def test_a_second_handle_reads_through_the_sessions_caches(twins):
    uri = twins["lancet"]
    s = lancet.Session()
    stats = []
    lancet.dataset(uri, session=s).scanner(filter="id = 4321", scan_stats_callback=stats.append).to_table()
    lancet.dataset(uri, session=s).scanner(filter="id = 4322", scan_stats_callback=stats.append).to_table()
    lancet.dataset(uri).scanner(filter="id = 4323", scan_stats_callback=stats.append).to_table()
    first, shared, fresh = (x.bytes_read for x in stats)
    # the shared handle reads the index from the session, the fresh one from storage
    assert shared < first and shared < fresh


def test_cache_sizes_make_a_session_and_bad_ones_are_refused(twins):
    ds = lancet.dataset(twins["lancet"], index_cache_size_bytes=1 << 20)
    assert isinstance(ds.session(), lancet.Session)
    with pytest.raises(ValueError):
        lancet.Session(index_cache_size_bytes=-1)
    with pytest.raises(NotImplementedError):
        lancet.Session(index_cache_backend="moka://?capacity=10")
    with pytest.raises(TypeError):
        lancet.dataset(twins["lancet"], session="not a session")
