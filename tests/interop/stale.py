"""Stale work and racing processes for the differential tester (`difftest.py`).

A *stale* step stages work on version V through both engines' Python APIs, on twin copies of
the table (pylance on the twin, lancet's package on the table), lets one engine commit
something else in between on both, then commits the staged work:

- handles opened at V running `delete`, `update`, `merge_insert` or `create_scalar_index`;
- BTree segments trained on V by lancet's distributed build, committed after;
- `write_fragments` at V committed as `LanceOperation.Append` / `Overwrite` with
  `read_version=V`;
- a compaction planned and executed at V (`Compaction.plan` / `execute`), committed after.

Both engines' outcomes must agree: both commit with equal rows, or both refuse and the table is
what the in-between commit left. lancet may refuse where Lance commits only for the pairs in
`STRICTER` (recorded in docs/decisions/0037). pylance's result is itself checked: it is the
staged work applied after the in-between commit, or as evaluated at V and rebased.

A *racing* step runs three processes at once on the table — lancet's CLI, lancet's package (or
a second CLI without `--py`) and pylance — each appending, deleting or updating, all started at
one instant; each commits (delete and update planned again after a conflict, as Lance's) or
refuses with a conflict, and the rows are those of some order of the commits that landed. With
`--uri s3://…` the tables live on an object store (the S3 test runs it against moto).
"""

import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import time

import lance.commit
import lance.fragment
import lance.optimize
import pyarrow as pa

WORK = ["delete", "update", "merge", "append_fragments", "overwrite_fragments", "compact",
        "index", "segments"]
BETWEEN = ["append", "delete", "update", "merge", "compact", "index", "drop_index"]

# (work, between) pairs where lancet refuses what Lance 14.0.2 commits (docs/decisions/0037)
STRICTER = set()


class Refused(Exception):
    """A commit the engine refused (its exception kept)."""


def gen_stale(rng, op, next_id):
    op["by"] = "py"
    op["work"] = rng.choice(WORK)
    op["between"] = rng.choice(BETWEEN)
    op["between_by"] = rng.choice(["lance", "lancet"])
    m = rng.choice([3, 5, 7])
    op["filter"] = f"id % {m} = {rng.randrange(m)}"
    if rng.random() < 0.3:
        lo = rng.randrange(max(next_id, 1))
        op["filter"] = f"v >= {lo} AND v < {lo + rng.randrange(20, 200)}"
    m2 = rng.choice([2, 3, 4])
    op["between_filter"] = f"id % {m2} = {rng.randrange(m2)}"
    op["k"], op["pick"] = rng.choice([0, 3, 40]), rng.randrange(1 << 30)
    op["target"] = rng.choice([400, 2000])
    op["start"], op["n"] = next_id, rng.choice([1, 30])
    op["start2"] = next_id + op["n"]
    return next_id + 2 * op["n"]


def gen_race(rng, op, next_id, py):
    op["by"] = "all"
    op["racers"] = []
    for who in ("cli", "py" if py else "cli", "lance"):
        kind = rng.choice(["append", "delete", "update"])
        m = rng.choice([3, 5, 7])
        op["racers"].append({"who": who, "kind": kind, "start": next_id, "n": rng.choice([1, 20]),
                             "filter": f"id % {m} = {rng.randrange(m)}"})
        next_id += 20
    return next_id


# -- models -----------------------------------------------------------------------------------
def model_matches(f, i, v):
    """The delete/update filters `gen_ops` draws, over one row."""
    import re
    if m := re.fullmatch(r"id % (\d+) = (\d+)", f):
        return i % int(m[1]) == int(m[2])
    if m := re.fullmatch(r"v >= (\d+) AND v < (\d+)", f):
        return int(m[1]) <= v < int(m[2])
    raise ValueError(f)


def apply_simple(model, kind, f=None, rows=None, bump=1):
    """`model` after a delete or update (`v + bump`) of the rows `f` matches, or an append."""
    out = dict(model)
    if kind == "delete":
        for i, v in model.items():
            if model_matches(f, i, v):
                del out[i]
    elif kind == "update":
        for i, v in model.items():
            if model_matches(f, i, v):
                out[i] = v + bump
    elif kind == "append":
        out.update(rows)
    return out


def merge_rows(model, op):
    """The source rows of a staged merge: existing keys (v + 7) and new ones, from `model`."""
    live = sorted(model)
    r = random.Random(op["pick"])
    old = r.sample(live, min(len(live), op["k"]))
    new = list(range(op["start"], op["start"] + op["n"]))
    keys = old + new
    r.shuffle(keys)
    return keys, [model[k] + 7 if k in model else k for k in keys]


def work_models(op, at_v, after_b):
    """The rows the staged work may leave: applied after the in-between commit, or evaluated
    at V and rebased onto it (rows the in-between commit removed stay removed)."""
    w = op["work"]
    if w in ("delete", "update"):
        seq = apply_simple(after_b, w, op["filter"])
        hit = {i for i, v in at_v.items() if model_matches(op["filter"], i, v)}
        rebased = dict(after_b)
        for i in hit & set(after_b):
            if w == "delete":
                del rebased[i]
            else:
                rebased[i] = after_b[i] + 1
        return [seq, rebased]
    if w == "merge":
        keys, vals = merge_rows(at_v, op)
        seq = dict(after_b)
        for k, v in zip(keys, vals):
            seq[k] = v
        rebased = dict(after_b)
        for k, v in zip(keys, vals):
            if k in at_v and k not in after_b:
                continue  # matched at V, deleted since: stays deleted when rebased
            rebased[k] = v
        return [seq, rebased]
    if w == "append_fragments":
        return [{**after_b, **{i: i for i in range(op["start2"], op["start2"] + op["n"])}}]
    if w == "overwrite_fragments":
        return [{i: i for i in range(op["start2"], op["start2"] + op["n"])}]
    return [after_b]  # compact, index: the rows stay


# -- a stale step ------------------------------------------------------------------------------
class Staged:
    """One engine's staged work at V on one copy of the table."""

    def __init__(self, run, eng, uri, op):
        self.run, self.eng, self.uri, self.op = run, eng, uri, op
        self.ds = eng.dataset(uri)  # the handle at V
        w = op["work"]
        self.commit = None
        if w in ("append_fragments", "overwrite_fragments"):
            t = run.table(op["start2"], op["n"])
            mode = "overwrite" if w == "overwrite_fragments" else "append"
            if mode == "overwrite":
                t = t.select(["id", "v"])
            self.schema = t.schema
            self.frags = eng.fragment.write_fragments(t, uri, mode=mode)
        elif w == "compact":
            opts = eng.optimize.CompactionOptions(target_rows_per_fragment=op["target"])
            plan = eng.optimize.Compaction.plan(self.ds, opts)
            self.results = [task.execute(self.ds) for task in plan.tasks]
        elif w == "segments" and eng is not lance:
            # lancet's distributed build (lancet.ray's tasks, without Ray): segments trained
            # over two shares of V's fragments, committed later; pylance's twin builds its
            # index on a handle at V (a CreateIndex read at V as well)
            self.at = eng._lancet.open(uri, version=self.ds.version)
            ids = [f.fragment_id for f in self.ds.get_fragments()]
            shares = [s for s in (ids[::2], ids[1::2]) if s]
            self.segments = [bytes(self.at.train_btree_segment("v", s, None)) for s in shares]
        elif w == "merge":
            keys, vals = merge_rows(run.model, op)
            cols = {"id": pa.array(keys, pa.int64()), "v": pa.array(vals, pa.int64())}
            for c in run.extra:
                cols[c] = pa.array([k * 3 for k in keys], pa.int64())
            self.source = pa.table(cols)

    def land(self):
        """Commits the staged work: True when it published, Refused when the engine refused."""
        w, op, eng, ds = self.op["work"], self.op, self.eng, self.ds
        try:
            if w == "delete":
                ds.delete(op["filter"])
            elif w == "update":
                ds.update({"v": "v + 1"}, where=op["filter"])
            elif w == "merge":
                ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all() \
                    .execute(self.source)
            elif w == "index" or (w == "segments" and (eng is lance or not self.segments)):
                ds.create_scalar_index("v", "BTREE", replace=True)
            elif w == "segments":
                self.at.commit_btree_segments("v", self.segments)
            elif w == "append_fragments":
                eng.LanceDataset.commit(self.uri, eng.LanceOperation.Append(self.frags),
                                        read_version=ds.version)
            elif w == "overwrite_fragments":
                eng.LanceDataset.commit(self.uri, eng.LanceOperation.Overwrite(self.schema, self.frags),
                                        read_version=ds.version)
            elif w == "compact":
                if not self.results:
                    return False
                eng.optimize.Compaction.commit(ds, self.results)
        except Exception as e:  # noqa: BLE001 - the engine's refusal, compared below
            raise Refused(e)
        return True


def between(run, uri, op, lance, at):
    """The in-between commit, the same on both copies; returns the model after it."""
    kind, by, f = op["between"], op["between_by"], op["between_filter"]
    t = run.table(op["start"], op["n"])
    if kind == "append":
        if by == "lance":
            lance.write_dataset(t, uri, mode="append")
        else:
            run.lancet("append", uri, "--from", run.parquet(t))
        return apply_simple(at, "append", rows={i: i for i in range(op["start"], op["start"] + op["n"])})
    if kind in ("delete", "update"):
        if by == "lance":
            ds = lance.dataset(uri)
            ds.delete(f) if kind == "delete" else ds.update({"v": "v + 2"}, where=f)
        elif kind == "delete":
            run.lancet("delete", uri, "--filter", f)
        else:
            run.lancet("update", uri, "--filter", f, "--set", "v = v + 2")
        return apply_simple(at, kind, f, bump=2)
    if kind == "merge":
        # rewrite the v of every third live key (v + 5) in place: an upsert matching only
        keys = sorted(at)[::3]
        cols = {"id": pa.array(keys, pa.int64()), "v": pa.array([at[k] + 5 for k in keys], pa.int64())}
        for c in run.extra:
            cols[c] = pa.array([k * 3 for k in keys], pa.int64())
        src = pa.table(cols)
        if by == "lance":
            lance.dataset(uri).merge_insert("id").when_matched_update_all().execute(src)
        else:
            run.lancet("merge-insert", uri, "--from", run.parquet(src), "--on", "id",
                       "--when-not-matched", "nothing")
        return {k: (v + 5 if k in set(keys) else v) for k, v in at.items()}
    if kind == "compact":
        if by == "lance":
            lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=op["target"])
        else:
            run.lancet("compact", uri, "--target-rows-per-fragment", str(op["target"]))
    elif kind == "index":
        if by == "lance" or run.has_index(uri):
            lance.dataset(uri).create_scalar_index("v", "BTREE", replace=True)
        else:
            run.lancet("index", "build", uri, "--column", "v")
    elif kind == "drop_index":
        if run.has_index(uri):
            lance.dataset(uri).drop_index("v_idx")
    return dict(at)


def rows_of(lance, uri):
    t = lance.dataset(uri).to_table(columns=["id", "v"])
    return dict(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))


def stale_step(run, op, lance, Failure):
    import lancet as py
    twin = os.path.join(run.root, "twin")
    shutil.rmtree(twin, ignore_errors=True)
    shutil.copytree(run.uri, twin, symlinks=True)
    at_v = dict(run.model)
    try:
        theirs = Staged(run, lance, twin, op)
        mine = Staged(run, py, run.uri, op)
    except Exception as e:  # noqa: BLE001
        raise Failure(f"staging {op['work']} at V failed: {type(e).__name__}: {e}")
    after_b = between(run, twin, op, lance, at_v)
    between(run, run.uri, op, lance, at_v)
    v_theirs, v_mine = lance.dataset(twin).version, run.version()
    outcomes = []
    for staged in (theirs, mine):
        try:
            outcomes.append(staged.land())
        except Refused as e:
            outcomes.append(e.args[0])
    got_theirs, got_mine = rows_of(lance, twin), rows_of(lance, run.uri)
    pair = (op["work"], op["between"])
    said = lambda o: "committed" if o is True else ("nothing to do" if o is False else
                                                    f"{type(o).__name__}: {str(o).splitlines()[0] if str(o) else ''}")
    if isinstance(outcomes[0], bool) != isinstance(outcomes[1], bool):
        if isinstance(outcomes[0], bool) and pair in STRICTER:
            pass
        else:
            raise Failure(f"staged {pair}: pylance {said(outcomes[0])}, lancet {said(outcomes[1])}")
    if isinstance(outcomes[1], bool):
        models = work_models(op, at_v, after_b) if outcomes[1] else [after_b]
        if isinstance(outcomes[0], bool) and got_mine != got_theirs:
            raise Failure(f"staged {pair}: lancet's rows differ from pylance's: "
                          f"{diff(got_mine, got_theirs)}")
        if got_mine not in models:
            raise Failure(f"staged {pair}: the rows are none the staged work may leave: "
                          f"{diff(got_mine, models[0])}")
    else:
        if conflict_kind(lance, outcomes[0]) != conflict_kind(py, outcomes[1]):
            raise Failure(f"staged {pair}: refused as {said(outcomes[1])}, pylance {said(outcomes[0])}")
        if run.version() != v_mine or got_mine != after_b:
            raise Failure(f"staged {pair}: a refused commit changed the table")
    if not isinstance(outcomes[0], bool) and got_theirs != after_b:
        raise Failure(f"staged {pair}: pylance's refused commit changed its twin")
    run.model = got_mine
    # a row the in-between commit deleted and the staged merge inserted again is a new row
    for i in set(at_v) - set(after_b):
        run.rowids.pop(i, None)
    if op["work"] == "overwrite_fragments" and outcomes[1] is True:
        run.extra = []
        run.rowids = {}
        run.meta["schema"] = {}
    shutil.rmtree(twin, ignore_errors=True)


def conflict_kind(eng, e):
    """How an engine refused: a commit conflict (retryable or not), or another error."""
    if isinstance(e, eng.commit.CommitConflictError):
        return ("conflict", e.retryable)
    # some pylance calls (Compaction.commit) raise a plain OSError with Lance's message
    text = str(e)
    if isinstance(e, OSError) and "ommit conflict for version" in text:
        return ("conflict", text.startswith("Retryable"))
    return ("error", type(e).__name__)


def diff(got, want):
    g, w = set(got.items()), set(want.items())
    return f"{len(got)} rows, expected {len(want)}; extra {sorted(g - w)[:5]}, missing {sorted(w - g)[:5]}"


# -- racing processes --------------------------------------------------------------------------
RACER = r"""
import json, subprocess, sys, time
import pyarrow as pa
spec = json.loads(sys.argv[1])
uri, kind = spec["uri"], spec["kind"]
if spec["engine"] == "cli":
    # the CLI starts at the agreed instant too (a Python process takes long to start)
    time.sleep(max(0.0, spec["at"] - time.time()))
    out = subprocess.run(spec["cmd"], capture_output=True, text=True)
    sys.stderr.write(out.stderr)
    sys.exit(out.returncode)
eng = __import__(spec["engine"])
time.sleep(max(0.0, spec["at"] - time.time()))
try:
    if kind == "append":
        ids = list(range(spec["start"], spec["start"] + spec["n"]))
        cols = {"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())}
        for c in spec["extra"]:
            cols[c] = pa.array([i * 3 for i in ids], pa.int64())
        eng.write_dataset(pa.table(cols), uri, mode="append")
    elif kind == "delete":
        eng.dataset(uri).delete(spec["filter"])
    else:
        eng.dataset(uri).update({"v": "v + 1"}, where=spec["filter"])
    print("committed")
except Exception as e:
    print("refused " + type(e).__name__ + ": " + (str(e).splitlines() or [""])[0])
"""



def racer_model(model, r, extra):
    if r["kind"] == "append":
        return apply_simple(model, "append", rows={i: i for i in range(r["start"], r["start"] + r["n"])})
    return apply_simple(model, r["kind"], r["filter"])


def race_step(run, op, Failure):
    procs = []
    at = time.time() + 1.5  # every racer imports its engine first, then all start at once
    for k, r in enumerate(op["racers"]):
        spec = dict(r, engine={"lance": "lance", "py": "lancet", "cli": "cli"}[r["who"]],
                    uri=run.uri, extra=run.extra, at=at)
        if r["who"] == "cli":
            if r["kind"] == "append":
                path = run.parquet(run.table(r["start"], r["n"]), f"racer{k}.parquet")
                args = ["append", run.uri, "--from", path]
            elif r["kind"] == "delete":
                args = ["delete", run.uri, "--filter", r["filter"]]
            else:
                args = ["update", run.uri, "--filter", r["filter"], "--set", "v = v + 1"]
            spec["cmd"] = [run.bin, *args]
        cmd = [sys.executable, "-c", RACER, json.dumps(spec)]
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    landed = []
    for r, p in zip(op["racers"], procs):
        out, err = p.communicate()
        if "panicked" in err:
            raise Failure(f"racer {r} panicked: {err.strip()}")
        if r["who"] == "cli":
            ok = p.returncode == 0
            if not ok and not (err.startswith("lancet: ") and "another writer" in err):
                raise Failure(f"racing lancet {r['kind']} failed: {err.strip()}")
        else:
            if p.returncode != 0:
                raise Failure(f"racer {r} crashed: {err.strip()[-500:]}")
            ok = out.startswith("committed")
            if not ok and r["who"] == "py" and "onflict" not in out and "another writer" not in out:
                raise Failure(f"racing package {r['kind']} refused: {out.strip()}")
        if ok:
            landed.append(r)
    got = rows_of(lance, run.uri)
    for order in itertools.permutations(landed):
        m = dict(run.model)
        for r in order:
            m = racer_model(m, r, run.extra)
        if m == got:
            run.model = m
            return
    raise Failure(f"after racers {landed} landed the rows match no order of them")
