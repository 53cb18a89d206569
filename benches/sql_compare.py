"""TPC-H Q1 and Q6 with `lancet sql` against DuckDB over the same rows in Parquet, in the same
run (issue 43): the line items of `lineitem_compare.py` (default 6,000,000 rows, SF1's size;
decimal(15,2) quantities and prices, date32 dates), as a lancet table and as the Parquet file
it was created from.

Usage (from the repo root, after `cargo build --release -p lancet-cli`, with the interop
virtualenv's python, which has duckdb):
    python benches/sql_compare.py [WORK_DIR] [--rows N] [--trials T] [--lancet PATH]

Each query T times (default 5), alternating the engines:
  - lancet: the whole `lancet sql QUERY --table lineitem=WORK_DIR/l --format csv` process,
    timed from outside (start, open, plan, scan, aggregate, print);
  - DuckDB: `duckdb.sql(QUERY over read_parquet(...))` in this process, timed inside (no
    process start, no import), its result fetched.
The answers are compared first: counts and sums exactly (as decimals), averages to the
6 decimal places DataFusion gives the average of a decimal(15,2).
Prints the medians and lancet's time over DuckDB's.
"""
import csv
import decimal
import io
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lineitem_compare import make_input  # noqa: E402

Q1 = """
SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= date '1998-12-01' - interval '90' day
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus
"""

Q6 = """
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= date '1994-01-01'
  AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07
  AND l_quantity < 24
"""

QUERIES = {"Q1": Q1, "Q6": Q6}


def option(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def lancet_rows(lancet, table, query):
    t0 = time.perf_counter()
    out = subprocess.run([lancet, "sql", query, "--table", f"lineitem={table}", "--format", "csv"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    elapsed = time.perf_counter() - t0
    return elapsed, list(csv.DictReader(io.StringIO(out)))


def duckdb_rows(con, parquet, query):
    q = query.replace("FROM lineitem", f"FROM read_parquet('{parquet}') AS lineitem")
    t0 = time.perf_counter()
    rel = con.sql(q)
    names = rel.columns
    rows = rel.fetchall()
    elapsed = time.perf_counter() - t0
    return elapsed, [dict(zip(names, r)) for r in rows]


def same(mine, theirs, query):
    """Counts and sums equal as decimals, averages to 6 decimal places."""
    assert len(mine) == len(theirs), (query, mine, theirs)
    for a, b in zip(mine, theirs):
        for k, v in b.items():
            got = a[k]
            if isinstance(v, str):
                assert got == v, (query, k, got, v)
            elif k.startswith("avg"):
                x, y = float(got), float(v)
                assert abs(x - y) < 1e-6, (query, k, x, y)
            else:
                assert decimal.Decimal(got) == decimal.Decimal(str(v)), (query, k, got, v)


def main():
    import duckdb

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {sys.argv[i + 1] for i, a in enumerate(sys.argv) if a.startswith("--")}
    args = [a for a in args if a not in flags]
    work = args[0] if args else "/tmp/lancet-sql-bench"
    rows = int(option("--rows", "6000000"))
    trials = int(option("--trials", "5"))
    lancet = option("--lancet", "target/release/lancet")
    os.makedirs(work, exist_ok=True)
    parquet = os.path.join(work, f"lineitem-{rows}.parquet")
    if not os.path.exists(parquet):
        make_input(parquet, rows)
    table = os.path.join(work, f"l-{rows}")
    if not os.path.exists(table):
        subprocess.run([lancet, "create", table, "--from", parquet], check=True, stdout=subprocess.DEVNULL)
    con = duckdb.connect()
    print(f"{rows} rows, {trials} trials, seconds (median); lancet: whole process, DuckDB: in-process")
    for name, query in QUERIES.items():
        _, mine = lancet_rows(lancet, table, query)
        _, theirs = duckdb_rows(con, parquet, query)
        same(mine, theirs, name)
        times = {"lancet": [], "duckdb": []}
        for t in range(trials):
            order = ("lancet", "duckdb") if t % 2 == 0 else ("duckdb", "lancet")
            for engine in order:
                if engine == "lancet":
                    times["lancet"].append(lancet_rows(lancet, table, query)[0])
                else:
                    times["duckdb"].append(duckdb_rows(con, parquet, query)[0])
        m = {k: statistics.median(v) for k, v in times.items()}
        print(f"{name}: lancet sql {m['lancet']:.3f}  duckdb {m['duckdb']:.3f}  "
              f"ratio {m['lancet'] / m['duckdb']:.2f}  (answers equal)")


if __name__ == "__main__":
    main()
