"""Differential tester: lancet and pylance 14.0.2 take turns on one table.

Random operation sequences (append, delete, update, compact with or without a deferred remap,
BTree build, index optimize with or without merge, add-column, restore), each step done by
pylance or by lancet (the CLI), on one table. After every step:
- pylance's full scan and lancet's full scan equal a model of the live rows;
- filters answered through pylance's scalar indexes, and through lancet's `index search`,
  equal the model;
- with stable row ids, every row keeps the `_rowid` it was first seen with;
- `lancet verify --data` passes.

A failing run prints its seed, shrinks the sequence to a minimal one that still fails, and
writes it as a standalone reproducer (`--replay FILE` runs it again).

    python difftest.py --lancet BIN [--seed S] [--steps N] [--runs R] [--minutes M]
                       [--stable true|false|random] [--replay FILE] [--out DIR]
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import lance
import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.int64())])


class Failure(Exception):
    pass


def gen_ops(rng, steps, stable):
    """A sequence of steps; each names its engine and its arguments, drawn from `rng`."""
    ops = [{"op": "create", "rows": rng.choice([50, 120, 300]), "files": rng.randint(1, 4),
            "stable": stable}]
    next_id = ops[0]["rows"] * ops[0]["files"]
    for _ in range(steps):
        by = rng.choice(["lance", "lancet"])
        kind = rng.choices(
            ["append", "delete", "update", "compact", "index", "optimize", "add_column",
             "restore"],
            weights=[20, 18, 12, 14, 10, 10, 4, 3])[0]
        op = {"op": kind, "by": by}
        if kind == "append":
            op["start"], op["n"] = next_id, rng.choice([1, 40, 150])
            next_id += op["n"]
        elif kind in ("delete", "update"):
            m = rng.choice([3, 5, 7, 11])
            op["filter"] = f"id % {m} = {rng.randrange(m)}"
            if rng.random() < 0.3:
                op["filter"] = f"v >= {rng.randrange(max(next_id, 1))} AND v < {rng.randrange(max(next_id, 1)) + 20}"
        elif kind == "compact":
            op["target"] = rng.choice([100, 400, 2000])
            op["defer"] = (not stable) and rng.random() < 0.3
        elif kind == "optimize":
            op["merge"] = rng.random() < 0.5
        elif kind == "add_column":
            op["by"] = "lancet"
            op["name"] = f"c{rng.randrange(1000)}"
        elif kind == "restore":
            op["back"] = rng.randint(1, 3)
        ops.append(op)
    return ops


class Run:
    def __init__(self, lancet_bin, root, log):
        self.bin = lancet_bin
        self.uri = os.path.join(root, "t")
        self.root = root
        self.model = {}  # id -> v
        self.extra = []  # added column names (computed from id: id * 3)
        self.rowids = {}  # id -> first _rowid seen (stable tables)
        self.stable = False
        self.history = []  # model after each version, by version number
        self.log = log

    # -- engines -------------------------------------------------------------------
    def lancet(self, *args, ok=True):
        out = subprocess.run([self.bin, *args], capture_output=True, text=True)
        if "panicked" in out.stderr:
            raise Failure(f"lancet {' '.join(args)} panicked: {out.stderr.strip()}")
        if ok and out.returncode != 0:
            raise Failure(f"lancet {' '.join(args)} failed: {out.stderr.strip()}")
        return out

    def table(self, start, n):
        ids = pa.array(range(start, start + n), pa.int64())
        cols = {"id": ids, "v": ids}
        for c in self.extra:
            cols[c] = pa.array([i * 3 for i in range(start, start + n)], pa.int64())
        return pa.table(cols)

    def version(self):
        return lance.dataset(self.uri).version

    # -- steps ---------------------------------------------------------------------
    def step(self, op):
        kind, by = op["op"], op.get("by")
        self.log(json.dumps(op))
        if kind == "create":
            self.stable = op["stable"]
            t = self.table(0, op["rows"] * op["files"])
            lance.write_dataset(t, self.uri, max_rows_per_file=op["rows"],
                                enable_stable_row_ids=op["stable"])
            self.model = {i: i for i in range(op["rows"] * op["files"])}
        elif kind == "append":
            t = self.table(op["start"], op["n"])
            if by == "lance":
                lance.write_dataset(t, self.uri, mode="append")
            else:
                path = os.path.join(self.root, "append.parquet")
                pq.write_table(t, path)
                self.lancet("append", self.uri, "--from", path)
            self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
        elif kind == "delete":
            hit = self.matching(op["filter"])
            if by == "lance":
                lance.dataset(self.uri).delete(op["filter"])
            else:
                out = json.loads(self.lancet("delete", self.uri, "--filter", op["filter"],
                                             "--json").stdout)
                if out["deleted_rows"] != len(hit):
                    raise Failure(f"lancet delete reported {out['deleted_rows']} rows, the model {len(hit)}")
            for i in hit:
                del self.model[i]
        elif kind == "update":
            hit = self.matching(op["filter"])
            if by == "lance":
                lance.dataset(self.uri).update({"v": "v + 1"}, where=op["filter"])
            else:
                out = json.loads(self.lancet("update", self.uri, "--filter", op["filter"],
                                             "--set", "v = v + 1", "--json").stdout)
                if out["updated_rows"] != len(hit):
                    raise Failure(f"lancet update reported {out['updated_rows']} rows, the model {len(hit)}")
            for i in hit:
                self.model[i] += 1
        elif kind == "compact":
            if by == "lance":
                lance.dataset(self.uri).optimize.compact_files(
                    target_rows_per_fragment=op["target"], defer_index_remap=op["defer"])
            else:
                args = ["compact", self.uri, "--target-rows-per-fragment", str(op["target"])]
                if op["defer"]:
                    args.append("--defer-index-remap")
                self.lancet(*args)
        elif kind == "index":
            if by == "lance":
                lance.dataset(self.uri).create_scalar_index("v", "BTREE", replace=True)
            else:
                ds = lance.dataset(self.uri)
                if any(i["name"] == "v_idx" for i in ds.list_indices()):
                    return  # lancet builds a new index only
                self.lancet("index", "build", self.uri, "--column", "v")
        elif kind == "optimize":
            if by == "lance":
                ds = lance.dataset(self.uri)
                if op["merge"]:
                    ds.optimize.optimize_indices(num_indices_to_merge=0)
                else:
                    ds.optimize.optimize_indices()
            else:
                args = ["index", "optimize", self.uri] + (["--merge"] if op["merge"] else [])
                self.lancet(*args)
        elif kind == "add_column":
            if op["name"] in self.extra:
                return
            self.lancet("add-column", self.uri, "--name", op["name"], "--expr", "id * 3")
            self.extra.append(op["name"])
        elif kind == "restore":
            target = self.version() - op["back"]
            # a restore to a version of another schema would change the columns: skip
            if target < 1 or self.history_schema(target) != self.extra:
                return
            if by == "lance":
                lance.dataset(self.uri, version=target).restore()
            else:
                self.lancet("restore", self.uri, "--version", str(target))
            self.model = dict(self.history[target][0])
        self.history_record()

    def history_record(self):
        v = self.version()
        while len(self.history) <= v:
            self.history.append(None)
        self.history[v] = (dict(self.model), list(self.extra))
        # versions in between (lancet's add-column may publish more than one)
        for i in range(len(self.history)):
            if self.history[i] is None:
                self.history[i] = ({}, ["?"])

    def history_schema(self, version):
        h = self.history[version] if version < len(self.history) else None
        return h[1] if h else ["?"]

    def matching(self, f):
        t = lance.dataset(self.uri).to_table(columns=["id"], filter=f)
        return set(t.column("id").to_pylist())

    # -- checks --------------------------------------------------------------------
    def check(self):
        want = sorted(self.model.items())
        ds = lance.dataset(self.uri)
        cols = ["id", "v"]
        t = ds.to_table(columns=cols, with_row_id=True)
        got = sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
        if got != want:
            raise Failure(f"pylance's scan differs from the model: {diff(got, want)}")
        if self.stable:
            for i, r in zip(t.column("id").to_pylist(), t.column("_rowid").to_pylist()):
                if self.rowids.setdefault(i, r) != r:
                    raise Failure(f"row id={i} changed _rowid {self.rowids[i]} -> {r}")
        out = self.lancet("scan", self.uri, "--columns", "id,v", "--format", "jsonl").stdout
        rows = [json.loads(line) for line in out.splitlines() if line.strip()]
        got = sorted((r["id"], r["v"]) for r in rows)
        if got != want:
            raise Failure(f"lancet's scan differs from the model: {diff(got, want)}")
        for c in self.extra:
            t = ds.to_table(columns=["id", c])
            bad = [(i, x) for i, x in zip(t.column("id").to_pylist(), t.column(c).to_pylist())
                   if x != i * 3]
            if bad:
                raise Failure(f"column {c} holds wrong values: {bad[:5]}")
        top = max(self.model.values(), default=0)
        probes = [f"v = {top // 2}", f"v < {top // 3}", f"v >= {top // 4} AND v < {top // 4 + 50}",
                  f"v IN ({top}, {top // 5}, 7)"]
        version = str(ds.version)
        for f in probes:
            want_ids = sorted(i for i, v in self.model.items() if matches(f, v))
            t = ds.to_table(columns=["id"], filter=f, use_scalar_index=True)
            got_ids = sorted(t.column("id").to_pylist())
            if got_ids != want_ids:
                raise Failure(f"pylance through its index, {f}: {diff(got_ids, want_ids)}")
            scanned = ds.to_table(columns=[], filter=f, with_row_id=True,
                                  use_scalar_index=False).column("_rowid").to_pylist()
            out = json.loads(self.lancet("index", "search", self.uri, "--filter", f,
                                         "--version", version, "--json").stdout)
            if sorted(out["row_ids"]) != sorted(scanned):
                raise Failure(f"lancet index search, {f}: {diff(sorted(out['row_ids']), sorted(scanned))}")
        self.lancet("verify", self.uri, "--data")


def matches(f, v):
    """The probe filters of `check`, over one value."""
    import re
    if m := re.fullmatch(r"v = (\d+)", f):
        return v == int(m[1])
    if m := re.fullmatch(r"v < (\d+)", f):
        return v < int(m[1])
    if m := re.fullmatch(r"v >= (\d+) AND v < (\d+)", f):
        return int(m[1]) <= v < int(m[2])
    if m := re.fullmatch(r"v IN \((\d+), (\d+), (\d+)\)", f):
        return v in {int(m[1]), int(m[2]), int(m[3])}
    raise ValueError(f)


def diff(got, want):
    g, w = set(got), set(want)
    return f"{len(got)} rows, expected {len(want)}; extra {sorted(g - w)[:5]}, missing {sorted(w - g)[:5]}"


def run_ops(lancet_bin, ops, verbose=False):
    """Runs `ops` on a fresh table; returns None, or the failure and the step it came at."""
    root = tempfile.mkdtemp(prefix="difftest-")
    log = (lambda s: print("  " + s, file=sys.stderr)) if verbose else (lambda s: None)
    run = Run(lancet_bin, root, log)
    try:
        for i, op in enumerate(ops):
            try:
                run.step(op)
                run.check()
            except Failure as e:
                return (i, str(e))
            except Exception as e:  # noqa: BLE001 - pylance refusing a step is a finding too
                return (i, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None
    finally:
        shutil.rmtree(root, ignore_errors=True)


def shrink(lancet_bin, ops, failure):
    """Drops steps (never the create) while the sequence still fails; the failing step's
    message may change, a failure is a failure."""
    ops = ops[: failure[0] + 1]
    changed = True
    while changed:
        changed = False
        for i in range(len(ops) - 1, 0, -1):
            trial = ops[:i] + ops[i + 1:]
            f = run_ops(lancet_bin, trial)
            if f is not None:
                ops, failure = trial[: f[0] + 1], f
                changed = True
                break
    return ops, failure


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lancet", required=True)
    p.add_argument("--seed", type=int)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--minutes", type=float)
    p.add_argument("--stable", default="random")
    p.add_argument("--replay")
    p.add_argument("--out", default=tempfile.gettempdir())
    p.add_argument("--no-shrink", action="store_true")
    a = p.parse_args()
    if a.replay:
        ops = json.load(open(a.replay))["ops"]
        f = run_ops(a.lancet, ops, verbose=True)
        print(json.dumps({"failure": f}))
        sys.exit(1 if f else 0)
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    deadline = time.time() + 60 * a.minutes if a.minutes else None
    runs = steps = 0
    while True:
        rng = random.Random(seed)
        stable = {"true": True, "false": False}.get(a.stable, rng.random() < 0.5)
        ops = gen_ops(rng, a.steps, stable)
        f = run_ops(a.lancet, ops)
        runs += 1
        if f is not None:
            print(f"difftest: seed {seed} failed at step {f[0]} ({json.dumps(ops[f[0]])}): {f[1]}",
                  file=sys.stderr)
            if not a.no_shrink:
                ops, f = shrink(a.lancet, ops, f)
            path = os.path.join(a.out, f"difftest-repro-{seed}.json")
            with open(path, "w") as out:
                json.dump({"seed": seed, "failure": f, "ops": ops}, out, indent=1)
            print(f"difftest: shrunk to {len(ops)} steps, failing with: {f[1]}", file=sys.stderr)
            print(f"difftest: reproducer {path} (replay: difftest.py --lancet BIN --replay {path})",
                  file=sys.stderr)
            print(json.dumps({"runs": runs, "steps": steps + f[0], "failed_seed": seed}))
            sys.exit(1)
        steps += len(ops) - 1
        seed += 1
        if deadline is None and runs >= a.runs:
            break
        if deadline is not None and time.time() >= deadline:
            break
    print(json.dumps({"runs": runs, "steps": steps, "failed_seed": None}))


if __name__ == "__main__":
    main()
