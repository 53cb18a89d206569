"""Data in and out, lancet against pylance 14.0.2 in the same run: writing a table from a
Parquet file, and scanning every row of it.

Usage (from the repo root, after `cargo build --release -p lancet-cli`):
    python benches/data_compare.py [WORK_DIR] [--rows N] [--trials T] [--lancet PATH]

Makes WORK_DIR/input.parquet if it is missing: N rows (default 10,000,000) of
(id int64, x float64, s utf8 of 8-14 characters, NULL every 17th), in row groups of 1M rows.
Then, T times each (default 3), alternating the two in fresh processes, each timed as a whole
process from outside (wall seconds):
  - create: `lancet create WORK_DIR/l --from input.parquet` against pylance
    `lance.write_dataset(pq.ParquetFile(...).iter_batches(), uri, schema=...)` (a stream of
    batches, as lancet reads it), both writing Lance 2.2 data files of 1,048,576 rows;
  - scan: `lancet scan WORK_DIR/l --format arrow -o /dev/null` (every row decoded and written
    as Arrow IPC to /dev/null) against pylance `ds.to_table()` of the same table;
and prints the medians and their ratio.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

PYLANCE_CREATE = """
import sys
import lance, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
lance.write_dataset(f.iter_batches(batch_size=8192), sys.argv[2], schema=f.schema_arrow)
"""

PYLANCE_SCAN = """
import sys
import lance
t = lance.dataset(sys.argv[1]).to_table()
assert t.num_rows > 0
"""


def make_input(path, n):
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    with pq.ParquetWriter(path, schema) as w:
        step = 1_000_000
        for start in range(0, n, step):
            ids = range(start, min(n, start + step))
            w.write_table(
                pa.table(
                    {
                        "id": pa.array(ids, pa.int64()),
                        "x": pa.array([i * 0.5 for i in ids], pa.float64()),
                        "s": pa.array(
                            [None if i % 17 == 0 else f"row-{i:x}" for i in ids], pa.string()
                        ),
                    },
                    schema=schema,
                )
            )


def timed(cmd):
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    args = sys.argv[1:]

    def option(name, default):
        if name in args:
            at = args.index(name)
            value = args[at + 1]
            del args[at : at + 2]
            return value
        return default

    rows = int(option("--rows", "10000000"))
    trials = int(option("--trials", "3"))
    lancet = option("--lancet", os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "lancet"))
    work = args[0] if args else tempfile.mkdtemp(prefix="lancet-data-")
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, "input.parquet")
    if not os.path.exists(source):
        make_input(source, rows)
    mine, theirs = os.path.join(work, "l"), os.path.join(work, "p")
    results = {"create": ([], []), "scan": ([], [])}
    for _ in range(trials):
        for uri in (mine, theirs):
            shutil.rmtree(uri, ignore_errors=True)
        results["create"][0].append(timed([lancet, "create", mine, "--from", source]))
        results["create"][1].append(timed([sys.executable, "-c", PYLANCE_CREATE, source, theirs]))
        results["scan"][0].append(timed([lancet, "scan", mine, "--format", "arrow", "-o", "/dev/null"]))
        results["scan"][1].append(timed([sys.executable, "-c", PYLANCE_SCAN, theirs]))
    print(f"{rows} rows, {trials} trials, wall seconds (median of each)")
    for what, (l, p) in results.items():
        lm, pm = statistics.median(l), statistics.median(p)
        print(f"{what:6} lancet {lm:7.2f}  pylance {pm:7.2f}  ratio {lm / pm:5.2f}   (lancet {l}, pylance {p})")


if __name__ == "__main__":
    main()
