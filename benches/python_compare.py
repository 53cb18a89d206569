"""The Python package against pylance 14.0.2 in the same run (issue 33): writing 10M rows,
scanning them to pandas and compacting them, each in-process from Python with the same
data; and lancet.ray's distributed write and compaction of the same rows with 1 and 2
Ray workers.

Usage (from the repo root, with the interop virtualenv's python after installing a release
wheel: `maturin build --release -m python/Cargo.toml -o W && pip install W/lancet-*.whl`):
    python benches/python_compare.py [WORK_DIR] [--rows N] [--trials T] [--only engine|queries|ray]

Each measurement is the median of T runs (default 3), the engines alternating: write
(`write_dataset(table, uri)` of an in-memory table of N rows — `id` int64, `v` float64,
`s` utf8 — into a new table, 1,048,576 rows per file), scan (`dataset(uri).to_table()
.to_pandas()`), compaction (a table of N rows in 100 fragments with every tenth row
deleted, `optimize.compact_files()`); queries (`query_runs`: indexed equality, take, filtered
count, 1% delete and update, the scan after them, on a table with a BTree on `id`). Ray: a fresh cluster per worker count
(`ray.init(num_cpus=W)`), `lancet.ray.write_dataset` of `ray.data.range(N)` in 16 blocks
with the same columns, then `lancet.ray.compact_files` of that table after deleting every
tenth row (100k rows per fragment written, so compaction has 10 groups).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc


def table(rows):
    ids = pa.array(range(rows), pa.int64())
    return pa.table({
        "id": ids,
        "v": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
        "s": pc.binary_join_element_wise("k", pc.cast(pc.bit_wise_and(ids, 1023), pa.string()), ""),
    })


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def engine_runs(work, rows, trials):
    import lance
    import lancet

    data = table(rows)
    out = {}
    for name, lib in (("lancet", lancet), ("pylance", lance)):
        out[name] = {"write": [], "scan_to_pandas": [], "compact": []}
    for trial in range(trials):
        for name, lib in (("lancet", lancet), ("pylance", lance)) if trial % 2 == 0 else (("pylance", lance), ("lancet", lancet)):
            uri = os.path.join(work, f"{name}-{trial}")
            out[name]["write"].append(timed(lambda: lib.write_dataset(data, uri)))
            out[name]["scan_to_pandas"].append(timed(lambda: lib.dataset(uri).to_table().to_pandas()))
            shutil.rmtree(uri)
            lib.write_dataset(data, uri, max_rows_per_file=max(rows // 100, 1))
            ds = lib.dataset(uri)
            ds.delete("id % 10 = 0")
            out[name]["compact"].append(timed(lambda: ds.optimize.compact_files()))
            assert lib.dataset(uri).count_rows() == rows - (rows + 9) // 10
            shutil.rmtree(uri)
    return {name: {k: statistics.median(v) for k, v in runs.items()} for name, runs in out.items()}


QUERIES = ("indexed_eq", "take_100", "count_filtered", "delete_1pct", "update_1pct", "scan_after_dml")


def query_runs(work, rows, trials):
    """Calls on one table per engine with a BTree on `id`: an indexed equality on a new handle
    (open + index lookup + the row's read; the median of 20 keys), a take of 100 scattered rows,
    a filtered count, a 1% delete, a 1% update, and a whole scan after both."""
    import lance
    import lancet

    data = table(rows)
    out = {name: {k: [] for k in QUERIES} for name in ("lancet", "pylance")}
    keys = [(i * 7_919_117) % rows for i in range(20)]
    picks = sorted((i * 104_729) % rows for i in range(100))
    for trial in range(trials):
        for name, lib in (("lancet", lancet), ("pylance", lance)) if trial % 2 == 0 else (("pylance", lance), ("lancet", lancet)):
            uri = os.path.join(work, f"q-{name}-{trial}")
            lib.write_dataset(data, uri)
            lib.dataset(uri).create_scalar_index("id", "BTREE")
            runs = out[name]
            eq = []
            for k in keys:
                t = timed(lambda: lib.dataset(uri).to_table(filter=f"id = {k}"))
                eq.append(t)
            runs["indexed_eq"].append(statistics.median(eq))
            ds = lib.dataset(uri)
            runs["take_100"].append(timed(lambda: ds.take(picks)))
            runs["count_filtered"].append(timed(lambda: lib.dataset(uri).count_rows("v < 1000.0")))
            runs["delete_1pct"].append(timed(lambda: lib.dataset(uri).delete("id % 100 = 1")))
            runs["update_1pct"].append(timed(lambda: lib.dataset(uri).update({"v": "v + 1.0"}, "id % 100 = 2")))
            runs["scan_after_dml"].append(timed(lambda: lib.dataset(uri).to_table()))
            assert lib.dataset(uri).count_rows() == rows - len(range(1, rows, 100))
            shutil.rmtree(uri)
    return {name: {k: statistics.median(v) for k, v in r.items()} for name, r in out.items()}


RAY = """
import json, sys, time, shutil
import pyarrow as pa, pyarrow.compute as pc, ray
import lancet, lancet.ray as lr
workers, rows, uri = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
ray.data.DataContext.get_current().enable_progress_bars = False
def cols(b):
    ids = b.column("id")
    return pa.table({"id": ids, "v": pc.multiply(pc.cast(ids, pa.float64()), 0.5),
                     "s": pc.binary_join_element_wise("k", pc.cast(pc.bit_wise_and(ids, 1023), pa.string()), "")})
data = ray.data.range(rows, override_num_blocks=16).map_batches(cols, batch_format="pyarrow").materialize()
t0 = time.perf_counter()
lr.write_dataset(data, uri, max_rows_per_file=max(rows // 100, 1))
write = time.perf_counter() - t0
lancet.dataset(uri).delete("id % 10 = 0")
t0 = time.perf_counter()
lr.compact_files(uri)
compact = time.perf_counter() - t0
assert lancet.dataset(uri).count_rows() == rows - (rows + 9) // 10
shutil.rmtree(uri)
print(json.dumps({"write": write, "compact": compact}))
"""


def ray_runs(work, rows, trials):
    out = {}
    for workers in (1, 2):
        runs = []
        for trial in range(trials):
            uri = os.path.join(work, f"ray-{workers}-{trial}")
            p = subprocess.run([sys.executable, "-c", RAY, str(workers), str(rows), uri],
                               capture_output=True, text=True, check=True)
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        out[workers] = {k: statistics.median(r[k] for r in runs) for k in ("write", "compact")}
    return out


def main():
    args = sys.argv[1:]
    rows, trials = 10_000_000, 3
    if "--rows" in args:
        i = args.index("--rows")
        rows = int(args[i + 1])
        del args[i:i + 2]
    if "--trials" in args:
        i = args.index("--trials")
        trials = int(args[i + 1])
        del args[i:i + 2]
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    work = args[0] if args else tempfile.mkdtemp(prefix="lancet-py-bench-")
    os.makedirs(work, exist_ok=True)
    print(f"{rows:,} rows, medians of {trials} (seconds)")
    print(f"{'':16}{'lancet':>10}{'pylance':>10}{'ratio':>8}")
    parts = (("engine", engine_runs, ("write", "scan_to_pandas", "compact")),
             ("queries", query_runs, QUERIES))
    for part, run, names in parts:
        if only not in (None, part):
            continue
        engines = run(work, rows, trials)
        for k in names:
            a, b = engines["lancet"][k], engines["pylance"][k]
            print(f"{k:16}{a:10.4f}{b:10.4f}{a / b:8.2f}", flush=True)
    if only not in (None, "ray"):
        return
    ray = ray_runs(work, rows, trials)
    print(f"lancet.ray      {'1 worker':>10}{'2 workers':>11}")
    for k in ("write", "compact"):
        print(f"{k:16}{ray[1][k]:10.2f}{ray[2][k]:11.2f}")


if __name__ == "__main__":
    main()
