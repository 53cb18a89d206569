import lancet
import pyarrow as pa


def test_write_and_read(tmp_uri):
    ds = lancet.write_dataset(pa.table({"id": [1, 2, 3]}), tmp_uri)
    assert ds.to_table().to_pydict() == {"id": [1, 2, 3]}
