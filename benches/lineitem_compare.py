"""Scan and create on a wide, real-shaped table, lancet against pylance 14.0.2 in the same run
(issue 31): a 16-column table shaped like a decision-support benchmark's line items
(int64 keys, decimal(15,2) quantities and prices, date32 dates, short and long strings).

Usage (from the repo root, after `cargo build --release -p lancet-cli`, with the interop
virtualenv's python, `bash tests/interop/venv.sh` prints it):
    python benches/lineitem_compare.py [WORK_DIR] [--rows N] [--trials T] [--lancet PATH]

Makes WORK_DIR/lineitem.parquet if it is missing (N rows, default 6,000,000, row groups of
1M rows, deterministic). Then T times each (default 5), alternating the two:
  - create: `lancet create WORK_DIR/l --from lineitem.parquet` against a pylance process
    writing the same file's batches (`lance.write_dataset`), both Lance 2.2 data files of
    1,048,576 rows; whole processes timed from outside;
  - scan of two columns of lancet's table (`l_extendedprice`, `l_shipdate`): the whole
    `lancet scan --columns ... --format arrow -o /dev/null` process against a pylance process
    running `to_table(columns=...)` on the same files (timed from outside), and pylance's
    in-process `to_table` alone (timed inside, after import and open);
and prints the medians and their ratios.
"""
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

COLUMNS = ["l_extendedprice", "l_shipdate"]

PYLANCE_CREATE = """
import sys
import lance, pyarrow.parquet as pq
f = pq.ParquetFile(sys.argv[1])
lance.write_dataset(f.iter_batches(batch_size=8192), sys.argv[2], schema=f.schema_arrow)
"""

PYLANCE_SCAN = """
import sys, time
import lance
ds = lance.dataset(sys.argv[1])
t0 = time.perf_counter()
t = ds.to_table(columns=sys.argv[2].split(","))
print(time.perf_counter() - t0)
assert t.num_rows > 0
"""

SCHEMA = pa.schema(
    [
        ("l_orderkey", pa.int64()),
        ("l_partkey", pa.int64()),
        ("l_suppkey", pa.int64()),
        ("l_linenumber", pa.int32()),
        ("l_quantity", pa.decimal128(15, 2)),
        ("l_extendedprice", pa.decimal128(15, 2)),
        ("l_discount", pa.decimal128(15, 2)),
        ("l_tax", pa.decimal128(15, 2)),
        ("l_returnflag", pa.string()),
        ("l_linestatus", pa.string()),
        ("l_shipdate", pa.date32()),
        ("l_commitdate", pa.date32()),
        ("l_receiptdate", pa.date32()),
        ("l_shipinstruct", pa.string()),
        ("l_shipmode", pa.string()),
        ("l_comment", pa.string()),
    ]
)

WORDS = np.array(
    "carefully final deposits sleep quickly regular accounts haggle furiously ironic "
    "packages nag slyly pending requests boost blithely express theodolites".split()
)


def to_decimal(cents):
    """int64 cents as decimal(15, 2), exactly: the unscaled 128-bit integers built directly."""
    cents = np.asarray(cents, dtype=np.int64)
    words = np.zeros((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    words[:, 1] = np.where(cents < 0, -1, 0)
    return pa.Array.from_buffers(pa.decimal128(15, 2), len(cents), [None, pa.py_buffer(words.tobytes())])


def make_input(path, n):
    rng = np.random.default_rng(20261203)
    epoch_1992 = 8035  # days from 1970-01-01 to 1992-01-01
    with pq.ParquetWriter(path, SCHEMA) as w:
        step = 1_000_000
        for start in range(0, n, step):
            m = min(n, start + step) - start
            orderkey = (np.arange(start, start + m) // 4) + 1
            quantity = rng.integers(1, 51, m)
            price_cents = quantity * rng.integers(90_000, 210_000, m) // 100
            ship = epoch_1992 + rng.integers(0, 2526, m)
            comment = [
                " ".join(WORDS[rng.integers(0, len(WORDS), int(k))])
                for k in rng.integers(2, 7, m)
            ]
            table = pa.table(
                {
                    "l_orderkey": pa.array(orderkey, pa.int64()),
                    "l_partkey": pa.array(rng.integers(1, 200_000, m), pa.int64()),
                    "l_suppkey": pa.array(rng.integers(1, 10_000, m), pa.int64()),
                    "l_linenumber": pa.array((np.arange(m) % 4) + 1, pa.int32()),
                    "l_quantity": to_decimal(quantity * 100),
                    "l_extendedprice": to_decimal(price_cents),
                    "l_discount": to_decimal(rng.integers(0, 11, m)),
                    "l_tax": to_decimal(rng.integers(0, 9, m)),
                    "l_returnflag": pa.array(np.array(["A", "N", "R"])[rng.integers(0, 3, m)]),
                    "l_linestatus": pa.array(np.array(["F", "O"])[rng.integers(0, 2, m)]),
                    "l_shipdate": pa.array(ship.astype("int32"), pa.int32()).cast(pa.date32()),
                    "l_commitdate": pa.array((ship + rng.integers(-30, 60, m)).astype("int32"), pa.int32()).cast(pa.date32()),
                    "l_receiptdate": pa.array((ship + rng.integers(1, 31, m)).astype("int32"), pa.int32()).cast(pa.date32()),
                    "l_shipinstruct": pa.array(np.array(["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"])[rng.integers(0, 4, m)]),
                    "l_shipmode": pa.array(np.array(["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"])[rng.integers(0, 7, m)]),
                    "l_comment": pa.array(comment, pa.string()),
                },
                schema=SCHEMA,
            )
            w.write_table(table)


def timed(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE)
    return time.perf_counter() - t0, out.stdout


def main():
    args = sys.argv[1:]

    def option(name, default):
        if name in args:
            at = args.index(name)
            value = args[at + 1]
            del args[at : at + 2]
            return value
        return default

    rows = int(option("--rows", "6000000"))
    trials = int(option("--trials", "5"))
    lancet = option("--lancet", os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "lancet"))
    work = args[0] if args else tempfile.mkdtemp(prefix="lancet-lineitem-")
    os.makedirs(work, exist_ok=True)
    source = os.path.join(work, "lineitem.parquet")
    if not os.path.exists(source):
        make_input(source, rows)
    mine, theirs = os.path.join(work, "l"), os.path.join(work, "p")
    create = ([], [])
    scan = ([], [], [])
    cols = ",".join(COLUMNS)
    for _ in range(trials):
        for uri in (mine, theirs):
            shutil.rmtree(uri, ignore_errors=True)
        create[0].append(timed([lancet, "create", mine, "--from", source])[0])
        create[1].append(timed([sys.executable, "-c", PYLANCE_CREATE, source, theirs])[0])
        scan[0].append(timed([lancet, "scan", mine, "--columns", cols, "--format", "arrow", "-o", "/dev/null"])[0])
        wall, out = timed([sys.executable, "-c", PYLANCE_SCAN, mine, cols])
        scan[1].append(wall)
        scan[2].append(float(out.decode().strip()))
    med = statistics.median
    print(f"{rows} rows x 16 columns, {trials} trials, seconds (median of each)")
    print(f"create  lancet {med(create[0]):6.2f}  pylance {med(create[1]):6.2f}  ratio {med(create[0]) / med(create[1]):5.2f}")
    print(
        f"scan {cols}: lancet process {med(scan[0]):6.3f}  pylance process {med(scan[1]):6.3f} "
        f"(ratio {med(scan[0]) / med(scan[1]):5.2f}), pylance in-process to_table {med(scan[2]):6.3f} "
        f"(ratio {med(scan[0]) / med(scan[2]):5.2f})"
    )
    print(f"raw: create {create}, scan {scan}")


if __name__ == "__main__":
    main()
