"""BTree: pylance 14.0.2 on the same 10M-row int64 column as lancet's `btree` criterion bench.

Usage (from the repo root): python benches/btree_compare.py [TABLE_DIR] [--pylance-only]

Writes v(i) = (i * 2654435761) mod 10,000,000 for i in 0..10M with pylance, times
create_scalar_index(btree, zone_size 4096), then hot index-only queries
(`to_table(filter, columns=[], with_row_id=True)`) for `v = 4242424` and
`v >= 5000000 AND v < 5010000` (0.1%), median of 50 runs after 5 warm-ups, then runs
`cargo bench -p lancet-btree --bench btree` for lancet's side.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import lance
import pyarrow as pa

N = 10_000_000


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    uri = args[0] if args else os.path.join(tempfile.mkdtemp(prefix="lancet-btree-"), "t")
    if not os.path.exists(os.path.join(uri, "_versions")):
        import numpy as np

        i = np.arange(N, dtype=np.uint64)
        v = ((i * np.uint64(2654435761)) % np.uint64(N)).astype(np.int64)
        lance.write_dataset(pa.table({"v": v}), uri)
    ds = lance.dataset(uri)
    if not ds.list_indices():
        t0 = time.perf_counter()
        ds.create_scalar_index("v", lance.indices.IndexConfig("btree", {"zone_size": 4096}))
        print(f"pylance build: {time.perf_counter() - t0:.2f} s")
        ds = lance.dataset(uri)
    for name, f, expect in [
        ("equality", "v = 4242424", 1),
        ("range_0.1pct", "v >= 5000000 AND v < 5010000", 10_000),
    ]:
        for _ in range(5):
            t = ds.to_table(filter=f, columns=[], with_row_id=True)
        assert t.num_rows == expect, (name, t.num_rows)
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            ds.to_table(filter=f, columns=[], with_row_id=True)
            times.append(time.perf_counter() - t0)
        print(f"pylance hot {name}: median {statistics.median(times) * 1e6:.0f} us")
    if "--pylance-only" not in sys.argv:
        subprocess.run(["cargo", "bench", "-p", "lancet-btree", "--bench", "btree"], check=True)


if __name__ == "__main__":
    main()
