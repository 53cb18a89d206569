"""merge_insert (upsert keyed on `id`) into a large table, lancet against pylance 14.0.2 in
the same run (issue 32): sources of 1% and 10% of the table's rows, half of them updates of
existing keys and half new keys, with and without a BTree on the key.

Usage (from the repo root, after `cargo build --release -p lancet-cli`, with the interop
virtualenv's python, `bash tests/interop/venv.sh` prints it):
    python benches/merge_compare.py [WORK_DIR] [--rows N] [--trials T] [--lancet PATH]

Makes WORK_DIR/base (N rows, default 10,000,000: `id` int64, `v` int64, `s` utf8, fragments of
1,048,576 rows, written by pylance) and WORK_DIR/base-idx (the same with pylance's BTree on
`id`), and the sources as Parquet. Then T times each (default 3), alternating the two: a fresh
copy of the base (not timed), then the whole merge process timed from outside —
`lancet merge-insert COPY --from SRC --on id` against a pylance process reading the same
Parquet file and running `merge_insert("id").when_matched_update_all()
.when_not_matched_insert_all().execute(table)` — and pylance's merge alone (timed inside,
after import and the Parquet read). Prints the medians and their ratios, and checks both
engines report the same counts.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

PYLANCE_MERGE = """
import sys, time, json
import lance, pyarrow.parquet as pq
t = pq.read_table(sys.argv[2])
ds = lance.dataset(sys.argv[1])
t0 = time.perf_counter()
r = ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(t)
print(json.dumps({"inside": time.perf_counter() - t0, "inserted": r["num_inserted_rows"],
                  "updated": r["num_updated_rows"]}))
"""


def arg(flag, default):
    if flag in sys.argv:
        return sys.argv[sys.argv.index(flag) + 1]
    return default


def table(ids):
    ids = pa.array(ids, pa.int64())
    s = pa.array([f"s{i}" for i in ids.to_pylist()], pa.utf8())
    return pa.table({"id": ids, "v": ids, "s": s})


def base(work, rows):
    import lance
    path = os.path.join(work, "base")
    if not os.path.exists(path):
        step = 1_000_000

        def batches():
            for start in range(0, rows, step):
                yield from table(range(start, min(rows, start + step))).to_batches()
        schema = table([0]).schema
        lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path)
    idx = os.path.join(work, "base-idx")
    if not os.path.exists(idx):
        shutil.copytree(path, idx)
        lance.dataset(idx).create_scalar_index("id", "BTREE")
    return path, idx


def source(work, rows, fraction):
    path = os.path.join(work, f"src-{fraction}.parquet")
    if not os.path.exists(path):
        n = int(rows * fraction)
        rng = np.random.default_rng(7)
        old = rng.choice(rows, n // 2, replace=False)
        new = np.arange(rows, rows + n - n // 2)
        keys = np.concatenate([old, new])
        rng.shuffle(keys)
        t = table(keys.tolist())
        t = t.set_column(1, "v", pa.array(keys + 10**12, pa.int64()))
        pq.write_table(t, path)
    return path


def timed(cmd):
    """Seconds the process took and what it printed; None when it failed (its last line)."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        return None, out.stderr.strip().splitlines()[-1][:200]
    return took, out.stdout


def main():
    pos = [a for i, a in enumerate(sys.argv[1:], 1)
           if not a.startswith("--") and not sys.argv[i - 1].startswith("--")]
    work = pos[0] if pos else tempfile.mkdtemp(prefix="merge-compare-")
    os.makedirs(work, exist_ok=True)
    rows = int(arg("--rows", 10_000_000))
    trials = int(arg("--trials", 3))
    lancet = arg("--lancet", "target/release/lancet")
    plain, indexed = base(work, rows)
    results = {}
    for fraction in [0.01, 0.10]:
        src = source(work, rows, fraction)
        for name, b in [("no index", plain), ("BTree on id", indexed)]:
            key = (fraction, name)
            results[key] = {"lancet": [], "pylance": [], "pylance inside": []}
            for trial in range(trials):
                for engine in ["lancet", "pylance"]:
                    copy = os.path.join(work, "copy")
                    shutil.rmtree(copy, ignore_errors=True)
                    shutil.copytree(b, copy)
                    if engine == "lancet":
                        took, out = timed([lancet, "merge-insert", copy, "--from", src,
                                           "--on", "id", "--json"])
                        if took is None:
                            raise SystemExit(f"lancet failed: {out}")
                        o = json.loads(out)
                        counts = (o["inserted_rows"], o["updated_rows"])
                    else:
                        took, out = timed([sys.executable, "-c", PYLANCE_MERGE, copy, src])
                        if took is None:
                            results[key]["pylance failed"] = out
                            continue
                        o = json.loads(out)
                        counts = (o["inserted"], o["updated"])
                        results[key]["pylance inside"].append(o["inside"])
                    results[key][engine].append(took)
                    results[key].setdefault("counts", {})[engine] = counts
            c = results[key]["counts"]
            if "pylance" in c:
                assert c["lancet"] == c["pylance"], (key, c)
            med = {k: statistics.median(v) for k, v in results[key].items()
                   if isinstance(v, list) and v}
            line = (f"{int(fraction * 100)}% of {rows:,} ({c['lancet'][0]:,} inserted, "
                    f"{c['lancet'][1]:,} updated), {name}: lancet {med['lancet']:.2f} s")
            if "pylance" in med:
                line += (f", pylance {med['pylance']:.2f} s (in-process "
                         f"{med['pylance inside']:.2f} s); ratio "
                         f"{med['lancet'] / med['pylance']:.2f}")
            if "pylance failed" in results[key]:
                line += f"; pylance failed: {results[key]['pylance failed']}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
