"""Cold RowIdIndex cost: pylance 14.0.2's first take by row id after opening a table, against
lancet building the index for the same table from disk.

Usage (from the repo root):
    python benches/rowid_compare.py [TABLE_DIR] [--rows N]

Makes TABLE_DIR (default: a temp dir) with pylance if it is empty: N rows (default 1,000,000;
docs/performance.md also uses 10,000,000) in 1,000 fragments with stable row ids, then `update`
of 5% of the rows (id % 20 = 7), so every fragment has a deletion file and the moved rows live
in a new fragment. Then, seven times each in a fresh process: pylance `lance.dataset(uri)._take_rows(ids)` for 100 ids; and lancet's criterion
`cold_open/pylance_table` (manifest, sequences, deletion files, index build).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

import lance
import pyarrow as pa

PYLANCE_TRIAL = """
import json, sys, time
import lance
t0 = time.perf_counter()
ds = lance.dataset(sys.argv[1])
t = ds._take_rows(json.loads(sys.argv[2]), columns=["id"])
t1 = time.perf_counter()
assert t.num_rows == len(json.loads(sys.argv[2])), t.num_rows
print(t1 - t0)
"""


TRIALS = 7


def make_table(uri, n):
    t = pa.table({"id": pa.array(range(n), pa.int64()), "v": pa.array(range(n), pa.int64())})
    lance.write_dataset(t, uri, max_rows_per_file=n // 1000, enable_stable_row_ids=True)
    lance.dataset(uri).update({"v": "v + 1"}, where="id % 20 = 7")


def main():
    args = sys.argv[1:]
    rows = 1_000_000
    if "--rows" in args:
        at = args.index("--rows")
        rows = int(args[at + 1])
        del args[at : at + 2]
    uri = args[0] if args else tempfile.mkdtemp(prefix="lancet-rowid-")
    if not os.path.exists(os.path.join(uri, "_versions")):
        make_table(uri, rows)
    ds = lance.dataset(uri)
    print(f"table {uri}: {len(ds.get_fragments())} fragments, {ds.count_rows()} rows")
    n = ds.count_rows()
    # the ids lancet's cold_first_take bench takes
    ids = list(range(7, n, 100_007 if n > 2_000_000 else 10_007))[:100]
    times = []
    for _ in range(TRIALS):
        out = subprocess.run(
            [sys.executable, "-c", PYLANCE_TRIAL, uri, json.dumps(ids)],
            check=True, capture_output=True, text=True,
        )
        times.append(float(out.stdout.strip()))
    print(f"pylance open + first _take_rows: median {statistics.median(times)*1000:.1f} ms, all {[round(t*1000,1) for t in times]}")
    env = dict(os.environ, LANCET_ROWID_TABLE=uri)
    subprocess.run(
        ["cargo", "bench", "-p", "lancet-rowid", "--bench", "rowid", "--", "cold_"],
        check=True, env=env,
    )


if __name__ == "__main__":
    main()
