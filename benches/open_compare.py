"""Opening a table and an indexed equality on a new handle, the package against pylance
14.0.2 in one process (issue 42): a 1M-row table (`id` int64, `v` float64) per engine with a
BTree on `id`.

Usage (the interop virtualenv's python, a release wheel installed):
    python benches/open_compare.py [WORK_DIR] [--rounds R]

Each round (default 3), per engine: the median of 300 `dataset(uri)` and the median of 100
`dataset(uri).to_table(filter=f"id = {k}")`, in ms. The futex count per open in the docs is
`strace -f -c` of a loop of 1,000 opens per engine.
"""
import os
import shutil
import statistics
import sys
import time

import lance
import pyarrow as pa

import lancet


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    args = [a for a in args if a != str(rounds)]
    work = args[0] if args else "/tmp/lancet-open-bench"
    rows = 1_000_000
    t = pa.table({"id": pa.array(range(rows), pa.int64()), "v": pa.array(range(rows), pa.float64())})
    engines = (("lancet", lancet), ("pylance", lance))
    for name, lib in engines:
        uri = os.path.join(work, name)
        shutil.rmtree(uri, ignore_errors=True)
        lib.write_dataset(t, uri)
        lib.dataset(uri).create_scalar_index("id", "BTREE")
    print("round  engine   open ms  equality ms")
    for r in range(rounds):
        for name, lib in engines:
            uri = os.path.join(work, name)
            opens = []
            for _ in range(300):
                t0 = time.perf_counter()
                lib.dataset(uri)
                opens.append(time.perf_counter() - t0)
            eq = []
            for i in range(100):
                t0 = time.perf_counter()
                lib.dataset(uri).to_table(filter=f"id = {i * 7919}")
                eq.append(time.perf_counter() - t0)
            print(f"{r + 1:5}  {name:7}  {statistics.median(opens) * 1e3:7.3f}  "
                  f"{statistics.median(eq) * 1e3:11.3f}")


if __name__ == "__main__":
    main()
