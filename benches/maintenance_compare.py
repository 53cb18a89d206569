"""Maintenance, lancet against pylance 14.0.2 in the same run: compaction and index optimize.

Usage (from the repo root, after `cargo build --release -p lancet-cli`):
    python benches/maintenance_compare.py [WORK_DIR] [--rows N] [--fragments F] [--trials T]
        [--lancet PATH]

Makes WORK_DIR/base once with pylance: N rows (default 10,000,000) of (id int64, v int64,
s utf8) in F fragments (default 1,000), a BTree on `id`, 10% of the rows deleted
(`id % 10 = 3`); and WORK_DIR/appended: a copy with 100 more fragments of 1,000 rows appended
after the index. Then T times (default 3), each on fresh copies, alternating the two, each a
whole process timed from outside (wall seconds):
  - compact: `lancet compact` against pylance `optimize.compact_files()` (defaults: target
    1,048,576 rows per fragment, deletions materialized; the BTree remapped by both);
  - optimize: `lancet index optimize` against pylance `optimize.optimize_indices()` (the new
    fragments indexed);
and prints the medians and their ratio. The copy is not timed.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import lance
import pyarrow as pa

PYLANCE_COMPACT = """
import sys, lance
lance.dataset(sys.argv[1]).optimize.compact_files()
"""

PYLANCE_OPTIMIZE = """
import sys, lance
lance.dataset(sys.argv[1]).optimize.optimize_indices()
"""


def make_tables(work, n, fragments):
    base = os.path.join(work, "base")
    per = n // fragments

    def batches():
        for start in range(0, n, per):
            ids = pa.array(range(start, min(n, start + per)), pa.int64())
            yield pa.record_batch(
                [ids, ids, pa.array([f"row-{i:x}" for i in range(start, min(n, start + per))])],
                names=["id", "v", "s"],
            )

    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("s", pa.string())])
    lance.write_dataset(batches(), base, schema=schema, max_rows_per_file=per)
    ds = lance.dataset(base)
    ds.create_scalar_index("id", "BTREE")
    lance.dataset(base).delete("id % 10 = 3")
    appended = os.path.join(work, "appended")
    shutil.copytree(base, appended)
    for k in range(100):
        start = n + k * 1000
        ids = pa.array(range(start, start + 1000), pa.int64())
        t = pa.table({"id": ids, "v": ids, "s": pa.array([f"row-{i:x}" for i in range(start, start + 1000)])})
        lance.write_dataset(t, appended, mode="append")


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
    fragments = int(option("--fragments", "1000"))
    trials = int(option("--trials", "3"))
    lancet = option("--lancet", os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "lancet"))
    work = args[0] if args else tempfile.mkdtemp(prefix="lancet-maint-")
    os.makedirs(work, exist_ok=True)
    if not os.path.exists(os.path.join(work, "appended")):
        make_tables(work, rows, fragments)
    results = {"compact": ([], []), "optimize": ([], [])}

    def fresh(src, name):
        dst = os.path.join(work, name)
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(os.path.join(work, src), dst)
        return dst

    for _ in range(trials):
        results["compact"][0].append(timed([lancet, "compact", fresh("base", "lc")]))
        results["compact"][1].append(timed([sys.executable, "-c", PYLANCE_COMPACT, fresh("base", "pc")]))
        results["optimize"][0].append(timed([lancet, "index", "optimize", fresh("appended", "lo")]))
        results["optimize"][1].append(timed([sys.executable, "-c", PYLANCE_OPTIMIZE, fresh("appended", "po")]))
    print(f"{rows} rows in {fragments} fragments, 10% deleted, a BTree on id; {trials} trials, wall seconds")
    for what, (l, p) in results.items():
        lm, pm = statistics.median(l), statistics.median(p)
        print(f"{what:8} lancet {lm:7.2f}  pylance {pm:7.2f}  ratio {lm / pm:5.2f}   (lancet {l}, pylance {p})")
    for name in ("lc", "pc"):
        d = lance.dataset(os.path.join(work, name))
        print(f"{name}: {len(d.get_fragments())} fragments, {d.count_rows()} rows")


if __name__ == "__main__":
    main()
