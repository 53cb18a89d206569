"""Differential tester: lancet and pylance 14.0.2 take turns on one table.

Random operation sequences (append, write_fragments + one commit, delete, update, merge_insert
(upsert or delete by key), truncate, branch create/read/delete, compact with or without a
deferred remap, BTree build, index optimize with or without merge, add-column, drop-column,
rename-column, tags, overwrite, restore, cleanup, shallow clone, tree convert and flatten, two
lancet writers racing, a compaction lancet plans and executes before pylance drops or rebuilds
the index or appends and commits after it, three processes of both engines racing), each step
done by pylance or by lancet (the CLI) — with `--py`, also
by lancet's Python package (append, write_fragments + commit, delete, update, merge_insert,
compaction; on tree tables too), and work staged at an older version on twin copies
(`stale.py`) — on one table. On a tree table (created as one,
or converted) lancet takes every turn, and each step is also checked through `tree flatten`
into a copy that pylance reads. After every step:
- pylance's full scan and lancet's full scan equal a model of the live rows;
- filters answered through pylance's scalar indexes, and through lancet's `index search`,
  equal the model;
- with stable row ids, every row keeps the `_rowid` it was first seen with;
- with stable row ids, `lancet changes` and pylance's `delta` agree on the rows the last version
  inserted, updated and deleted;
- every tag names the version it was made on (both engines list the same), every cleanup kept
  it, and reading by the tag gives that version's rows;
- `lancet verify --data` passes.

A failing run prints its seed, shrinks the sequence to a minimal one that still fails, and
writes it as a standalone reproducer (`--replay FILE` runs it again).

    python difftest.py --lancet BIN [--seed S] [--steps N] [--runs R] [--minutes M]
                       [--stable true|false|random] [--replay FILE] [--out DIR] [--py]
                       [--uri s3://bucket/prefix] [--only kind,kind]
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
import uuid

import lance
import pyarrow as pa
import pyarrow.parquet as pq

import stale
from stale import model_matches

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("v", pa.int64())])


class Failure(Exception):
    pass


KINDS = {
    "append": 18, "write_fragments": 6, "delete": 16, "update": 10, "compact": 12, "index": 9,
    "optimize": 9, "add_column": 3, "restore": 3, "cleanup": 3, "clone": 2, "race": 4,
    "convert": 2, "flatten": 2, "drop_column": 2, "tag": 3,
    "overwrite": 2, "rename_column": 2, "merge": 8, "branch": 2, "truncate": 1,
    "staged_compact": 4, "stale": 8, "race3": 3, "meta": 3, "drop_index": 3,
    "update_columns": 5, "join": 2, "noted_append": 3,
}

# the steps that need lancet's Python package (with --py): stale work on twins
NEEDS_PY = {"stale", "noted_append"}

# where tables are made (`--uri`: an object store prefix such as s3://bucket/difftest);
# a temporary directory by default
URI_BASE = None


# the steps lancet's Python package takes (with --py); its other turns go to the CLI
PY_CAN = {"append", "write_fragments", "delete", "update", "merge", "compact", "drop_index",
          "update_columns", "join", "noted_append", "add_column"}


def gen_ops(rng, steps, stable, tree=False, py=False, only=None):
    """A sequence of steps; each names its engine and its arguments, drawn from `rng`
    (of the kinds `only` names, when given)."""
    ops = [{"op": "create", "rows": rng.choice([50, 120, 300]), "files": rng.randint(1, 4),
            "stable": stable, "tree": tree}]
    next_id = ops[0]["rows"] * ops[0]["files"]
    kinds = [k for k in KINDS if (py or k not in NEEDS_PY) and (only is None or k in only)]
    weights = [KINDS[k] for k in kinds]
    for _ in range(steps):
        by = rng.choice(["lance", "lancet", "py"] if py else ["lance", "lancet"])
        kind = rng.choices(kinds, weights=weights)[0]
        op = {"op": kind, "by": by}
        if kind == "overwrite":
            op["start"], op["n"] = next_id, rng.choice([30, 200])
            op["rows"] = rng.choice([50, 120])
            next_id += op["n"]
        elif kind in ("append", "write_fragments", "noted_append"):
            op["start"], op["n"] = next_id, rng.choice([1, 40, 150])
            next_id += op["n"]
            if kind == "noted_append":  # a commit message and transaction properties
                op["message"], op["key"] = f"m{rng.randrange(1000)}", f"p{rng.randrange(10)}"
        elif kind == "merge":
            # existing keys (drawn at run time from the model by `pick`) and new ones
            op["start"], op["n"] = next_id, rng.choice([0, 1, 30])
            op["k"], op["pick"] = rng.choice([0, 3, 40]), rng.randrange(1 << 30)
            op["delete"] = rng.random() < 0.2
            next_id += op["n"]
        elif kind == "race":
            op["by"] = "lancet"
            op["start"], op["n"] = next_id, rng.choice([1, 40])
            next_id += 2 * op["n"]
        elif kind == "update_columns":
            # v + 1 where the filter holds, by each fragment's update_columns and one Update;
            # staged: prepared on one version, committed after another engine's append
            m = rng.choice([3, 5, 7])
            op["filter"] = f"id % {m} = {rng.randrange(m)}"
            op["staged"] = rng.random() < 0.4
            op["start"], op["n"] = next_id, rng.choice([1, 40])
            next_id += op["n"]
            # the matched offsets committed too (rewrite_columns): on a stable-row-id table
            # they stamp the rows' last-updated-at versions
            op["offsets"] = rng.random() < 0.5
        elif kind in ("delete", "update"):
            m = rng.choice([3, 5, 7, 11])
            op["filter"] = f"id % {m} = {rng.randrange(m)}"
            if rng.random() < 0.3:
                lo = rng.randrange(max(next_id, 1))
                op["filter"] = f"v >= {lo} AND v < {lo + rng.randrange(20, 200)}"
        elif kind == "compact":
            op["target"] = rng.choice([100, 400, 2000])
            op["defer"] = (not stable) and rng.random() < 0.3
        elif kind == "staged_compact":
            # lancet plans and executes a compaction, pylance commits something, lancet
            # commits the compaction after it (work staged on an older version)
            op["by"] = "lancet"
            op["target"] = rng.choice([400, 2000])
            op["between"] = rng.choice(["drop_index", "rebuild_index", "append"])
            op["start"], op["n"] = next_id, rng.choice([1, 40])
            next_id += op["n"]
        elif kind == "optimize":
            op["merge"] = rng.random() < 0.5
        elif kind == "stale":
            next_id = stale.gen_stale(rng, op, next_id)
        elif kind == "meta":
            op["target"] = rng.choice(["schema", "config", "pk"])
            op["key"], op["value"] = f"k{rng.randrange(4)}", f"x{rng.randrange(100)}"
            op["remove"] = rng.random() < 0.25
        elif kind == "race3":
            next_id = stale.gen_race(rng, op, next_id, py)
        elif kind in ("add_column", "clone", "convert", "flatten"):
            op["by"] = "lancet"
            op["name"] = f"c{rng.randrange(1000)}"
        elif kind == "join":
            # a column joined on id (LanceDataset.merge): every live row's id * 3
            op["name"] = f"j{rng.randrange(1000)}"
        elif kind == "restore":
            op["back"] = rng.randint(1, 3)
        elif kind in ("drop_column", "rename_column"):
            op["pick"] = rng.randrange(1000)
            op["name"] = f"r{rng.randrange(1000)}"
        elif kind == "tag":
            op["name"] = f"t{rng.randrange(1000)}"
        elif kind == "branch":
            op["name"] = f"b{rng.randrange(1000)}"
            op["delete_by"] = rng.choice(["lance", "lancet"])
        ops.append(op)
    return ops


class Run:
    def __init__(self, lancet_bin, root, log, uri=None):
        self.bin = lancet_bin
        self.uri = uri or os.path.join(root, "t")
        self.root = root
        self.model = {}  # id -> v
        self.extra = []  # added column names (computed from id: id * 3)
        self.rowids = {}  # id -> first _rowid seen (stable tables)
        self.stable = False
        self.tree = False
        self.had_tree = False
        self.history = []  # model after each version, by version number
        self.tags = {}  # tag name -> version
        self.log = log
        self.copies = 0
        self.meta = {"schema": {}, "config": {}}  # the k* keys set in each map

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

    # -- steps ---------------------------------------------------------------------
    def step(self, op):
        kind = op["op"]
        # a tree table is lancet's alone: pylance's turns go to lancet; so are a cleanup once
        # the history holds tree versions (pylance cannot read them), and a restore of one
        by = op.get("by")
        if self.tree and by == "lance":
            by = "lancet"
        if by == "py" and kind not in PY_CAN:
            by = "lancet"
        py = None
        if by == "py":
            import lancet as py  # the package under test (python/), installed in this venv
        if kind in ("stale", "race3"):
            if self.tree:
                return  # pylance and its twin read flat tables only
            self.log(json.dumps(op))
            if kind == "stale":
                stale.stale_step(self, op, lance, Failure)
            else:
                stale.race_step(self, op, Failure)
            self.history_record()
            return
        if kind == "cleanup" and self.had_tree:
            by = "lancet"
        if kind == "restore" and self.history_tree(self.version() - op.get("back", 0)):
            by = "lancet"
        self.log(json.dumps(op))
        if kind == "create":
            self.stable, self.tree = op["stable"], op.get("tree", False)
            n = op["rows"] * op["files"]
            t = self.table(0, n)
            if self.tree:
                path = self.parquet(t)
                args = ["create", self.uri, "--from", path, "--layout", "tree",
                        "--max-rows-per-file", str(op["rows"])]
                self.lancet(*args, *(["--stable-row-ids"] if op["stable"] else []))
            else:
                lance.write_dataset(t, self.uri, max_rows_per_file=op["rows"],
                                    enable_stable_row_ids=op["stable"])
            self.model = {i: i for i in range(n)}
        elif kind == "append":
            t = self.table(op["start"], op["n"])
            if by == "lance":
                lance.write_dataset(t, self.uri, mode="append")
            elif by == "py":
                py.write_dataset(t, self.uri, mode="append")
            else:
                self.lancet("append", self.uri, "--from", self.parquet(t))
            self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
        elif kind == "noted_append":
            # an append with a commit message and properties: both engines read them back
            t = self.table(op["start"], op["n"])
            props = {op["key"]: op["message"]}
            if by == "lancet" or self.tree:  # the CLI has no messages: the package writes
                import lancet as writer
            else:
                writer = lance if by == "lance" else py
            writer.write_dataset(t, self.uri, mode="append", commit_message=op["message"],
                                 transaction_properties=props)
            self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
            import lancet as mine
            from lancet.dataset import LANCE_COMMIT_MESSAGE_KEY
            want = dict(props, **{LANCE_COMMIT_MESSAGE_KEY: op["message"]})
            for reader in [mine] if self.tree else [mine, lance]:
                ds = reader.dataset(self.uri)
                got = ds.read_transaction(ds.version).transaction_properties
                if got != want:
                    raise Failure(f"{reader.__name__} reads the transaction's properties {got}, expected {want}")
        elif kind == "overwrite":
            # every row replaced by new ones of the base schema (added columns go)
            self.extra = []
            t = self.table(op["start"], op["n"])
            if by == "lance":
                lance.write_dataset(t, self.uri, mode="overwrite", max_rows_per_file=op["rows"])
            else:
                self.lancet("create", self.uri, "--from", self.parquet(t), "--mode", "overwrite",
                            "--max-rows-per-file", str(op["rows"]))
            self.model = {i: i for i in range(op["start"], op["start"] + op["n"])}
            # new rows: new row ids (past every id handed out before)
            self.rowids = {}
            # the new schema's metadata is the data's (none); the config stays
            self.meta["schema"] = {}
        elif kind == "write_fragments":
            t = self.table(op["start"], op["n"])
            if by == "lance":
                frags = lance.fragment.write_fragments(t, self.uri, max_rows_per_file=60)
                ds = lance.dataset(self.uri)
                lance.LanceDataset.commit(self.uri, lance.LanceOperation.Append(frags),
                                          read_version=ds.version)
            elif by == "py":
                read = py.dataset(self.uri).version
                frags = py.write_fragments(t, self.uri)
                py.LanceDataset.commit(self.uri, py.LanceOperation.Append(frags), read_version=read)
            else:
                staged = self.lancet("write-fragments", self.uri, "--from", self.parquet(t)).stdout
                path = os.path.join(self.root, "staged.json")
                with open(path, "w") as f:
                    f.write(staged)
                self.lancet("append", self.uri, "--fragments", path)
            self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
        elif kind == "race":
            # two lancet appends at once: both land (one rebases over the other)
            procs = []
            for k in range(2):
                start = op["start"] + k * op["n"]
                path = self.parquet(self.table(start, op["n"]), f"race{k}.parquet")
                procs.append(subprocess.Popen([self.bin, "append", self.uri, "--from", path],
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
            for p in procs:
                _, err = p.communicate()
                if p.returncode != 0:
                    raise Failure(f"a racing append failed: {err.strip()}")
            n2 = 2 * op["n"]
            self.model.update({i: i for i in range(op["start"], op["start"] + n2)})
        elif kind == "merge":
            # upsert (or delete when matched) keyed on id: matched rows get v + 7
            live = sorted(self.model)
            r = random.Random(op["pick"])
            old = r.sample(live, min(len(live), op["k"]))
            new = list(range(op["start"], op["start"] + op["n"]))
            keys = old + new
            r.shuffle(keys)
            vals = [self.model[k] + 7 if k in self.model else k for k in keys]
            cols = {"id": pa.array(keys, pa.int64()), "v": pa.array(vals, pa.int64())}
            for c in self.extra:
                cols[c] = pa.array([k * 3 for k in keys], pa.int64())
            t = pa.table(cols)
            if by in ("lance", "py"):
                b = (lance if by == "lance" else py).dataset(self.uri).merge_insert("id")
                b = b.when_matched_delete() if op["delete"] else b.when_matched_update_all()
                res = b.when_not_matched_insert_all().execute(t)
                got = (res["num_inserted_rows"], res["num_updated_rows"], res["num_deleted_rows"])
            else:
                args = ["merge-insert", self.uri, "--from", self.parquet(t), "--on", "id", "--json"]
                if op["delete"]:
                    args += ["--when-matched", "delete"]
                res = json.loads(self.lancet(*args).stdout)
                got = (res["inserted_rows"], res["updated_rows"], res["deleted_rows"])
            want = (len(new), 0 if op["delete"] else len(old), len(old) if op["delete"] else 0)
            if got != want:
                raise Failure(f"{by} merge-insert reported {got}, the model {want}")
            for k, v in zip(keys, vals):
                if op["delete"] and k in self.model:
                    del self.model[k]
                else:
                    self.model[k] = v
        elif kind == "truncate":
            # every row deleted (pylance's truncate_table, lancet truncate)
            if by == "lance":
                lance.dataset(self.uri).truncate_table()
            else:
                out = json.loads(self.lancet("truncate", self.uri, "--json").stdout)
                if out["deleted_rows"] != len(self.model):
                    raise Failure(f"lancet truncate reported {out['deleted_rows']} rows, the model {len(self.model)}")
            self.model = {}
        elif kind == "delete":
            hit = self.matching(op["filter"])
            if by == "lance":
                lance.dataset(self.uri).delete(op["filter"])
            elif by == "py":
                n = py.dataset(self.uri).delete(op["filter"])["num_deleted_rows"]
                if n != len(hit):
                    raise Failure(f"the package's delete reported {n} rows, the model {len(hit)}")
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
            elif by == "py":
                n = py.dataset(self.uri).update({"v": "v + 1"}, where=op["filter"])["num_rows_updated"]
                if n != len(hit):
                    raise Failure(f"the package's update reported {n} rows, the model {len(hit)}")
            else:
                out = json.loads(self.lancet("update", self.uri, "--filter", op["filter"],
                                             "--set", "v = v + 1", "--json").stdout)
                if out["updated_rows"] != len(hit):
                    raise Failure(f"lancet update reported {out['updated_rows']} rows, the model {len(hit)}")
            for i in hit:
                self.model[i] += 1
        elif kind == "update_columns":
            self.update_columns(op, by, py)
        elif kind == "compact":
            if by in ("lance", "py"):
                (lance if by == "lance" else py).dataset(self.uri).optimize.compact_files(
                    target_rows_per_fragment=op["target"], defer_index_remap=op["defer"])
            else:
                args = ["compact", self.uri, "--target-rows-per-fragment", str(op["target"])]
                if op["defer"]:
                    args.append("--defer-index-remap")
                self.lancet(*args)
        elif kind == "staged_compact":
            self.staged_compact(op)
        elif kind == "index":
            if by == "lance":
                lance.dataset(self.uri).create_scalar_index("v", "BTREE", replace=True)
            else:
                if self.has_index():
                    return  # lancet builds a new index only
                self.lancet("index", "build", self.uri, "--column", "v")
        elif kind == "drop_index":
            if not self.has_index():
                return
            if by == "lance":
                lance.dataset(self.uri).drop_index("v_idx")
            elif by == "py":
                py.dataset(self.uri).drop_index("v_idx")
            else:
                self.lancet("index", "drop", self.uri, "--name", "v_idx")
            if self.has_index():
                raise Failure("drop_index left v_idx listed")
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
        elif kind == "join":
            if op["name"] in self.extra:
                return
            ids = sorted(self.model)
            t = pa.table({"id": pa.array(ids, pa.int64()), op["name"]: pa.array([i * 3 for i in ids], pa.int64())})
            if by == "lance" and not self.tree:
                lance.dataset(self.uri).merge(t, "id")
            elif by == "py":
                py.dataset(self.uri).merge(t, "id")
            else:
                self.lancet("add-column", self.uri, "--name", op["name"], "--expr", "id * 3")
            self.extra.append(op["name"])
        elif kind == "add_column":
            # a SQL expression: pylance's and lancet's package's add_columns (one Merge
            # each), or the CLI's add-column
            if op["name"] in self.extra:
                return
            if by == "lance" and not self.tree:
                lance.dataset(self.uri).add_columns({op["name"]: "id * 3"})
            elif by == "py":
                py.dataset(self.uri).add_columns({op["name"]: "id * 3"})
            else:
                self.lancet("add-column", self.uri, "--name", op["name"], "--expr", "id * 3")
            self.extra.append(op["name"])
        elif kind == "restore":
            target = self.version() - op["back"]
            # a restore to a version of another schema would change the columns, and a
            # cleaned version is gone: skip those
            if target < 1 or self.history_schema(target) != self.extra:
                return
            if not self.version_exists(target):
                return
            if by == "lance":
                lance.dataset(self.uri, version=target).restore()
            else:
                self.lancet("restore", self.uri, "--version", str(target))
            self.model = dict(self.history[target][0])
            self.meta = {k: dict(m) for k, m in self.history[target][3].items()}
            # a restore brings back the version's layout too
            flags = json.loads(self.lancet("inspect", self.uri, "--json").stdout)
            self.tree = "fragment_tree" in flags["reader_feature_flags"]
        elif kind == "cleanup":
            if by == "lance":
                import datetime
                lance.dataset(self.uri).cleanup_old_versions(
                    older_than=datetime.timedelta(0), delete_unverified=True,
                    error_if_tagged_old_versions=False)
            else:
                self.lancet("cleanup", self.uri, "--older-than", "0s", "--delete-unverified")
        elif kind == "clone":
            self.copies += 1
            target = os.path.join(self.root, f"clone{self.copies}")
            self.lancet("clone", self.uri, target)
            self.check_rows(self.readable(target), "the clone")
            return
        elif kind == "branch":
            # a branch of this version by either engine: both read the model's rows on it,
            # then either engine deletes it and neither lists it any more
            name = op["name"]
            if by == "lance":
                lance.dataset(self.uri).create_branch(name, self.version())
            else:
                self.lancet("branch", "create", self.uri, name)
            want = sorted(self.model.items())
            out = self.lancet("scan", self.uri, "--branch", name, "--columns", "id,v",
                              "--format", "jsonl").stdout
            got = sorted((r["id"], r["v"]) for r in map(json.loads, out.splitlines()) if r)
            if got != want:
                raise Failure(f"lancet's scan of branch {name}: {diff(got, want)}")
            if not self.tree:
                b = lance.dataset(self.uri).checkout_version((name, None))
                t = b.to_table(columns=["id", "v"])
                got = sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
                if got != want:
                    raise Failure(f"pylance's read of branch {name}: {diff(got, want)}")
            if op["delete_by"] == "lance" and not self.tree:
                lance.dataset(self.uri).branches.delete(name)
            else:
                self.lancet("branch", "delete", self.uri, name)
            listed = self.lancet("branch", "list", self.uri).stdout
            if name in listed or (not self.tree and name in lance.dataset(self.uri).branches.list()):
                raise Failure(f"branch {name} is still listed after its deletion")
            return
        elif kind == "drop_column":
            # an added column goes (id and v stay: the model is over them)
            if not self.extra:
                return
            name = self.extra[op["pick"] % len(self.extra)]
            if by == "lance":
                lance.dataset(self.uri).drop_columns([name])
            else:
                self.lancet("drop-columns", self.uri, "--columns", name)
            self.extra.remove(name)
        elif kind == "rename_column":
            # an added column takes a new name; its values (id * 3) and field id stay
            if not self.extra or op["name"] in self.extra:
                return
            k = op["pick"] % len(self.extra)
            old = self.extra[k]
            if by == "lance":
                lance.dataset(self.uri).alter_columns({"path": old, "name": op["name"]})
            else:
                self.lancet("alter-column", self.uri, "--column", old, "--rename", op["name"])
            self.extra[k] = op["name"]
        elif kind == "tag":
            # a name once: `tag create` of an existing one is refused (checked typed)
            v = self.version()
            if op["name"] in self.tags:
                out = self.lancet("tag", "create", self.uri, op["name"], ok=False)
                if out.returncode == 0 or "already exists" not in out.stderr:
                    raise Failure(f"a second tag {op['name']} was not refused: {out.stderr}")
                return
            if by == "lance":
                lance.dataset(self.uri).tags.create(op["name"], v)
            else:
                self.lancet("tag", "create", self.uri, op["name"])
            self.tags[op["name"]] = v
            return
        elif kind == "meta":
            if self.meta_step(op, by):
                return
        elif kind == "convert":
            if self.tree:
                return
            self.lancet("tree", "convert", self.uri)
            self.tree = True
        elif kind == "flatten":
            if not self.tree:
                return
            self.lancet("tree", "flatten", self.uri)
            self.tree = False
        self.history_record()

    def update_columns(self, op, by, py):
        """v + 1 on the rows `op`'s filter matches, through every fragment's
        ``update_columns`` keyed on id and one ``LanceOperation.Update`` (the CLI updates
        instead: it has no fragment-level API); staged, another engine appends between."""
        hit = sorted(self.matching(op["filter"]))
        if by == "lancet":
            self.lancet("update", self.uri, "--filter", op["filter"], "--set", "v = v + 1")
        else:
            lib = lance if by == "lance" else py
            ds = lib.dataset(self.uri)
            data = pa.table({"id": pa.array(hit, pa.int64()),
                             "v": pa.array([self.model[i] + 1 for i in hit], pa.int64())})
            updated, modified, offsets = [], [], {}
            for f in ds.get_fragments():
                if op.get("offsets"):
                    meta, modified, offsets[f.fragment_id] = f.update_columns(data, left_on="id",
                                                                              with_offsets=True)
                else:
                    meta, modified = f.update_columns(data, left_on="id")
                updated.append(meta)
            if op["staged"]:
                t = self.table(op["start"], op["n"])
                if by == "lance" or self.tree:  # a tree table is lancet's alone
                    self.lancet("append", self.uri, "--from", self.parquet(t))
                else:
                    lance.write_dataset(t, self.uri, mode="append")
                self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
            if updated:
                extra = {}
                if op.get("offsets"):
                    extra = dict(update_mode="rewrite_columns", updated_fragment_offsets=offsets)
                op_ = lib.LanceOperation.Update(updated_fragments=updated, fields_modified=modified, **extra)
                lib.LanceDataset.commit(self.uri, op_, read_version=ds.version)
        for i in hit:
            self.model[i] += 1

    def meta_step(self, op, by):
        """A key of the schema's metadata or the config set or removed by either engine; a
        primary key on the nullable `id` refused by both with nothing published. Returns
        True when nothing was published."""
        key, value = op["key"], None if op["remove"] else op["value"]
        if op["target"] == "pk":
            before = self.version()
            pk = "lance-schema:unenforced-primary-key"
            out = self.lancet("metadata", self.uri, "--field", "id", "--set", f"{pk}=true", ok=False)
            if out.returncode == 0 or not out.stderr.startswith("lancet: "):
                raise Failure(f"a primary key on the nullable id was not refused: {out.stderr}")
            if not self.tree:
                try:
                    lance.dataset(self.uri).update_field_metadata({"id": {pk: "true"}})
                    raise Failure("pylance accepted a primary key on the nullable id")
                except OSError:
                    pass
            if self.version() != before:
                raise Failure("a refused primary key published a version")
            return True
        target = op["target"]
        if by == "lance":
            ds = lance.dataset(self.uri)
            (ds.update_schema_metadata if target == "schema" else ds.update_config)({key: value})
        else:
            args = ["--remove", key] if value is None else ["--set", f"{key}={value}"]
            self.lancet("metadata", self.uri, f"--{target}", *args)
        if value is None:
            self.meta[target].pop(key, None)
        else:
            self.meta[target][key] = value
        return False

    def check_meta(self, ds):
        """Both maps, as pylance reads them, hold the model's k* keys."""
        schema = {k.decode(): v.decode() for k, v in (ds.schema.metadata or {}).items()
                  if k.startswith(b"k")}
        config = {k: v for k, v in ds.config().items() if k.startswith("k")}
        if schema != self.meta["schema"] or config != self.meta["config"]:
            raise Failure(f"metadata: schema {schema}, config {config}; the model {self.meta}")

    def staged_compact(self, op):
        """A compaction planned and executed by lancet, committed after a pylance change: it
        lands, or is a conflict that publishes nothing; the rows never change."""
        plan = self.lancet("compact", self.uri, "--target-rows-per-fragment", str(op["target"]),
                           "--plan").stdout
        tasks = json.loads(plan)
        results = []
        for k, task in enumerate(tasks):
            path = os.path.join(self.root, f"task{k}.json")
            with open(path, "w") as f:
                f.write(json.dumps(task))
            out = os.path.join(self.root, f"result{k}.json")
            with open(out, "w") as f:
                f.write(self.lancet("compact", self.uri, "--execute", path).stdout)
            results.append(out)
        # pylance cannot read a tree table: there lancet appends in between
        between = "lancet_append" if self.tree else op["between"]
        if between == "drop_index" and self.has_index():
            lance.dataset(self.uri).drop_index("v_idx")
        elif between == "rebuild_index":
            lance.dataset(self.uri).create_scalar_index("v", "BTREE", replace=True)
        elif between in ("append", "lancet_append"):
            t = self.table(op["start"], op["n"])
            if between == "append":
                lance.write_dataset(t, self.uri, mode="append")
            else:
                self.lancet("append", self.uri, "--from", self.parquet(t))
            self.model.update({i: i for i in range(op["start"], op["start"] + op["n"])})
        if not results:
            return
        before = self.version()
        args = ["compact", self.uri, "--commit"]
        for r in results:
            args.append(r)
        out = self.lancet(*args, ok=False)
        if out.returncode != 0:
            err = out.stderr.strip()
            if not err.startswith("lancet: ") or "another writer" not in err:
                raise Failure(f"a staged compaction failed: {err}")
            if self.version() != before:
                raise Failure(f"a refused staged compaction published a version: {err}")

    def parquet(self, t, name="rows.parquet"):
        path = os.path.join(self.root, name)
        pq.write_table(t, path)
        return path

    def version(self):
        out = json.loads(self.lancet("inspect", self.uri, "--json").stdout)
        return out["version"]

    def version_exists(self, v):
        return self.lancet("inspect", self.uri, "--version", str(v), "--json", ok=False).returncode == 0

    def has_index(self, uri=None):
        out = json.loads(self.lancet("index", "list", uri or self.uri, "--json").stdout)
        items = out if isinstance(out, list) else out.get("indices", [])
        return any(i.get("name") == "v_idx" for i in items)

    def history_record(self):
        v = self.version()
        self.had_tree |= self.tree
        while len(self.history) <= v:
            self.history.append(None)
        self.history[v] = (dict(self.model), list(self.extra), self.tree,
                           {k: dict(m) for k, m in self.meta.items()})
        # versions in between (lancet's add-column may publish more than one)
        for i in range(len(self.history)):
            if self.history[i] is None:
                self.history[i] = ({}, ["?"], True, {})

    def history_tree(self, version):
        h = self.history[version] if 0 <= version < len(self.history) else None
        return bool(h and h[2])

    def history_schema(self, version):
        h = self.history[version] if version < len(self.history) else None
        return h[1] if h else ["?"]

    def matching(self, f):
        return {i for i, v in self.model.items() if model_matches(f, i, v)}

    # -- checks --------------------------------------------------------------------
    def readable(self, uri=None):
        """The URI pylance reads: `uri` (the table by default), or on a tree a flattened copy
        of it."""
        uri = uri or self.uri
        if not self.tree:
            return uri
        copy = os.path.join(self.root, "flat")
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(uri, copy)
        self.lancet("tree", "flatten", copy)
        return copy

    def check_rows(self, uri, what):
        """pylance's full scan of `uri` equals the model."""
        want = sorted(self.model.items())
        t = lance.dataset(uri).to_table(columns=["id", "v"])
        got = sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
        if got != want:
            raise Failure(f"pylance's scan of {what} differs from the model: {diff(got, want)}")

    def check_tags(self):
        """Every tag names the version it was made on, which every cleanup kept, and reading
        by the tag (lancet; pylance too where the version is flat) gives that version's rows."""
        theirs = None
        if not self.tree:
            theirs = {k: v["version"] for k, v in lance.dataset(self.uri).tags.list().items()}
        mine = {}
        for line in self.lancet("tag", "list", self.uri).stdout.splitlines():
            t = json.loads(line)
            mine[t["name"]] = t["version"]
        if mine != self.tags or (theirs is not None and theirs != self.tags):
            raise Failure(f"tags differ: lancet {mine}, pylance {theirs}, model {self.tags}")
        for name, v in self.tags.items():
            want = sorted(self.history[v][0].items())
            out = self.lancet("scan", self.uri, "--tag", name, "--columns", "id,v",
                              "--format", "jsonl").stdout
            got = sorted((r["id"], r["v"]) for r in map(json.loads, out.splitlines()) if r)
            if got != want:
                raise Failure(f"lancet's scan of tag {name} (version {v}): {diff(got, want)}")
            if not self.tree and not self.history_tree(v):
                t = lance.dataset(self.uri, version=name).to_table(columns=["id", "v"])
                got = sorted(zip(t.column("id").to_pylist(), t.column("v").to_pylist()))
                if got != want:
                    raise Failure(f"pylance's read of tag {name} (version {v}): {diff(got, want)}")

    def check_changes(self):
        """With stable row ids, what the last version changed: `lancet changes` and pylance's
        `delta` give the same row ids inserted, updated and deleted."""
        v = self.version()
        if not self.stable or self.tree or v < 2 or self.history_tree(v - 1):
            return
        if not self.version_exists(v - 1):
            return  # cleaned up: nothing to compare against
        d = lance.dataset(self.uri, version=v).delta(begin_version=v - 1, end_version=v)
        theirs = {
            "inserted": sorted(d.get_inserted_rows().read_all().column("_rowid").to_pylist()),
            "updated": sorted(d.get_updated_rows().read_all().column("_rowid").to_pylist()),
            "deleted": sorted(d.get_deleted_row_ids().read_all().column("_rowid").to_pylist()),
        }
        out = self.lancet("changes", self.uri, "--since", str(v - 1), "--format", "jsonl").stdout
        mine = {"inserted": [], "updated": [], "deleted": []}
        for r in map(json.loads, filter(str.strip, out.splitlines())):
            mine[r["_change"]].append(r["_rowid"])
        mine = {k: sorted(x) for k, x in mine.items()}
        if mine != theirs:
            raise Failure(f"changes of version {v}: lancet {mine}, pylance {theirs}")

    def check(self):
        self.check_tags()
        self.check_changes()
        want = sorted(self.model.items())
        uri = self.readable()
        ds = lance.dataset(uri)
        self.check_meta(ds)
        t = ds.to_table(columns=["id", "v"], with_row_id=True)
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
        version = str(self.version())
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
        self.check_package_reads(ds)
        self.lancet("verify", self.uri, "--data")

    def check_package_reads(self, theirs):
        """lancet's Python package (when installed) reads the table as pylance reads it (or
        its flattened copy): rows by position, rows by `_rowid` in a filter, and a scan of
        deleted rows."""
        try:
            import lancet as package
        except ImportError:
            return
        mine = package.dataset(self.uri)
        n = theirs.count_rows()
        if n == 0:
            return
        picks = [(k * 7919) % n for k in range(12)] + [0, n - 1]
        got = mine.take(picks, columns=["id", "v"]).to_pylist()
        want = theirs.take(picks, columns=["id", "v"]).to_pylist()
        if got != want:
            raise Failure(f"take by position {picks}: lancet {got[:4]}.., pylance {want[:4]}..")
        row_ids = theirs.to_table(columns=["id"], with_row_id=True).column("_rowid").to_pylist()
        chosen = sorted({row_ids[p] for p in picks})
        f = f"_rowid IN ({', '.join(map(str, chosen))})"
        got = sorted(mine.to_table(columns=["id"], filter=f).column("id").to_pylist())
        want = sorted(theirs.to_table(columns=["id"], filter=f).column("id").to_pylist())
        if got != want:
            raise Failure(f"filter {f}: lancet {diff(got, want)}")
        shown = {}
        for name, ds in (("lancet", mine), ("pylance", theirs)):
            t = ds.to_table(columns=["id"], with_row_id=True, include_deleted_rows=True)
            shown[name] = (sorted(t.column("id").to_pylist()), t.column("_rowid").null_count)
        if shown["lancet"] != shown["pylance"]:
            raise Failure(f"deleted rows shown: lancet {len(shown['lancet'][0])} rows "
                          f"({shown['lancet'][1]} deleted), pylance {len(shown['pylance'][0])} "
                          f"({shown['pylance'][1]} deleted)")


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
    uri = f"{URI_BASE}/{uuid.uuid4().hex}" if URI_BASE else None
    run = Run(lancet_bin, root, log, uri)
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


def pylance_alone_fails(lancet_bin, ops, failure):
    """Whether `ops` with pylance taking every turn it can (the steps only lancet does stay
    lancet's) fail at the same step with the same kind of finding."""
    alone = [dict(o, by="lance") if o.get("by") in ("lancet", "py") and o["op"] in PYLANCE_CAN else o
             for o in ops]
    if alone == ops:
        return False
    f = run_ops(lancet_bin, alone[: failure[0] + 1])
    kind = lambda msg: msg.split(":")[0].split(",")[0]
    return f is not None and f[0] == failure[0] and kind(f[1]) == kind(failure[1])


# the steps pylance can take as well as lancet
PYLANCE_CAN = {"append", "write_fragments", "delete", "update", "compact", "index", "optimize",
               "restore", "cleanup", "drop_index", "update_columns", "join", "add_column"}


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
    p.add_argument("--tree", default="random", help="create a tree table: true, false, random")
    p.add_argument("--replay")
    p.add_argument("--out", default=tempfile.gettempdir())
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--uri", help="make the tables under this prefix (e.g. s3://bucket/dir)")
    p.add_argument("--only", help="draw only these kinds of steps (comma-separated)")
    p.add_argument("--py", action="store_true",
                   help="lancet's Python package takes turns too (it must be installed)")
    a = p.parse_args()
    global URI_BASE
    URI_BASE = a.uri
    only = set(a.only.split(",")) if a.only else None
    if a.replay:
        ops = json.load(open(a.replay))["ops"]
        f = run_ops(a.lancet, ops, verbose=True)
        print(json.dumps({"failure": f}))
        sys.exit(1 if f else 0)
    seed = a.seed if a.seed is not None else random.randrange(1 << 32)
    deadline = time.time() + 60 * a.minutes if a.minutes else None
    runs = steps = 0
    theirs = []  # seeds whose failure pylance alone reproduces
    while True:
        rng = random.Random(seed)
        stable = {"true": True, "false": False}.get(a.stable, rng.random() < 0.5)
        tree = {"true": True, "false": False}.get(a.tree, rng.random() < 0.25)
        ops = gen_ops(rng, a.steps, stable, tree, a.py, only)
        f = run_ops(a.lancet, ops)
        runs += 1
        if f is not None and not pylance_alone_fails(a.lancet, ops, f) and not a.no_shrink:
            # pylance's own defect may show at another step of the whole sequence than of
            # lancet's: the shrunk sequence is judged again
            ops, f = shrink(a.lancet, ops, f)
        if f is not None and pylance_alone_fails(a.lancet, ops, f):
            # the same sequence with pylance taking every turn it can fails the same way:
            # pylance's own defect, not lancet's (recorded, and the run goes on)
            print(f"difftest: seed {seed}: pylance alone fails the same way at step {f[0]}: {f[1]}",
                  file=sys.stderr)
            theirs.append(seed)
            f = None
            steps += len(ops) - 1
            seed += 1
            if (deadline is None and runs >= a.runs) or (deadline is not None and time.time() >= deadline):
                break
            continue
        if f is not None:
            print(f"difftest: seed {seed} failed at step {f[0]} ({json.dumps(ops[f[0]])}): {f[1]}",
                  file=sys.stderr)
            os.makedirs(a.out, exist_ok=True)
            path = os.path.join(a.out, f"difftest-repro-{seed}.json")
            with open(path, "w") as out:
                json.dump({"seed": seed, "failure": f, "ops": ops}, out, indent=1)
            print(f"difftest: shrunk to {len(ops)} steps, failing with: {f[1]}", file=sys.stderr)
            print(f"difftest: reproducer {path} (replay: difftest.py --lancet BIN --replay {path})",
                  file=sys.stderr)
            print(json.dumps({"runs": runs, "steps": steps + f[0], "failed_seed": seed,
                              "pylance_alone_failed": theirs}))
            sys.exit(1)
        steps += len(ops) - 1
        seed += 1
        if deadline is None and runs >= a.runs:
            break
        if deadline is not None and time.time() >= deadline:
            break
    print(json.dumps({"runs": runs, "steps": steps, "failed_seed": None,
                      "pylance_alone_failed": theirs}))


if __name__ == "__main__":
    main()
