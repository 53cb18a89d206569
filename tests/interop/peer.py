"""What pylance 14.0.2 sees of objects lancet wrote, and objects pylance writes for lancet.

Every subcommand prints one JSON object on stdout.

  scan URI [VERSION]            rows (sorted by every column), count and indices of a version
  rowids URI VERSION            every live (_rowid, _rowaddr), sorted by _rowid
  filters URI VERSION JSON [I]  TRUE and NULL _rowids of each filter (full scan, or indexed if I=true;
                                {"error": ...} for a filter pylance refuses)
  filter-table URI              a table of every filter type with indexes, an append, a delete
                                and a compaction; prints the versions
  read-file PATH                a Lance file read with LanceFileReader
  write-file PATH               write a Lance file with LanceFileWriter (known rows, metadata,
                                one global buffer)
  cleanup-history URI STABLE    a history to clean up: appends, deletes, an update, BTree builds,
                                compactions (deferred remap: an FRI, without stable row ids), a tag
  cleanup URI JSON              cleanup_old_versions with JSON's arguments (older_than_s, retain_versions,
                                delete_unverified), tagged versions kept; prints the stats
  clone URI TARGET VERSION      shallow_clone of VERSION to TARGET; prints the target's versions
  branch-history URI            versions 1-3 (create, append, delete), branch `dev` from version 2 with
                                an insert, then a compaction of main; prints the versions
  branch-rows URI BRANCH        the rows pylance reads on a branch's latest version
  data-files DIR                part1.parquet (ids 0-99), part2.arrow (100-149), part3.csv (150-179):
                                id int64, x float64, s string (NULL every 9th row)
  data-twin URI DIR STABLE      pylance runs the data sequence on a new table: create from part1
                                (40 rows a file), append part2, delete id % 7 = 3, update x = x * 2,
                                s = 'u' where id < 60, append part3
  table URI JSON                to_table with JSON's options (columns, filter, with_row_id,
                                with_row_address, limit, offset, version): columns and rows in order
  take-rows URI JSON [COLUMNS]  _take_rows of JSON's row ids: rows in the order asked
  maintenance-table URI TWIN STABLE  20 fragments x 500 rows (id, v), a BTree on id, id % 10 = 3
                                deleted; TWIN a copy
  compact URI JSON              compact_files with JSON's options; prints the fragments' rows
  append-iv URI START N         appends rows START..START+N of (id, v)
"""
import json
import os
import sys

import lance
import lance.file as lf
import pyarrow as pa


def json_value(v):
    import decimal
    # decimals as the exact string of their value
    if isinstance(v, decimal.Decimal):
        return str(v)
    # JSON has no NaN or infinity: spell them as strings so both sides compare them
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return repr(v)
    return v


def rows_of(table):
    cols = table.column_names
    out = [[json_value(v) for v in r.values()] for r in table.to_pylist()]
    out.sort(key=lambda r: [(v is None, str(type(v)), v if v is not None else 0) for v in r])
    return cols, out


def scan(uri, version=None):
    ds = lance.dataset(uri, version=int(version) if version is not None else None)
    cols, rows = rows_of(ds.to_table())
    return {
        "version": ds.version,
        "count": ds.count_rows(),
        "columns": cols,
        "rows": rows,
        "indices": sorted(i["name"] for i in ds.list_indices()),
    }


def rowids(uri, version):
    ds = lance.dataset(uri, version=int(version))
    out = {}
    t = ds.scanner(columns=[], with_row_id=True, with_row_address=True).to_table()
    pairs = sorted(zip(t.column("_rowid").to_pylist(), t.column("_rowaddr").to_pylist()))
    out["row_ids"] = [p[0] for p in pairs]
    out["row_addrs"] = [p[1] for p in pairs]
    if ds.has_stable_row_ids:
        cols = ["_row_created_at_version", "_row_last_updated_at_version"]
        v = ds.scanner(columns=cols, with_row_id=True).to_table()
        rows = sorted(zip(v.column("_rowid").to_pylist(), *(v.column(c).to_pylist() for c in cols)))
        out["created_at"] = [r[1] for r in rows]
        out["last_updated_at"] = [r[2] for r in rows]
    return out


def filters(uri, version, filters_json, use_index="false"):
    """For each filter: the _rowid of rows where it is TRUE, where NOT (filter) is TRUE, and
    where it is NULL (neither), by pylance's full scan (or with its scalar indexes when
    use_index is true). Lance types some literals differently under NOT, so "NULL" is only
    meaningful for filters whose literals type the same in both places."""
    ds = lance.dataset(uri, version=int(version))
    index = use_index == "true"

    def ids(f):
        t = ds.to_table(filter=f, columns=[], with_row_id=True, use_scalar_index=index)
        return set(t.column("_rowid").to_pylist())

    everything = set(ds.to_table(columns=[], with_row_id=True).column("_rowid").to_pylist())
    out = []
    for f in json.loads(filters_json):
        try:
            true = ids(f)
            false = ids(f"NOT ({f})")
        except Exception as e:  # noqa: BLE001 - a filter pylance refuses
            out.append({"error": str(e).splitlines()[0]})
            continue
        out.append({"row_ids": sorted(true), "not_row_ids": sorted(false), "null_row_ids": sorted(everything - true - false)})
    return out


def filter_table(uri):
    """A table with a column of every type filters compare (int64, int32, float64, float32,
    string, date, timestamp, bool, decimal(15,2); NULLs, float specials, strings with quotes,
    wildcards and backslashes), BTrees on i, f, s, d, ts, b and dc and a Bitmap on i32; then an
    append no index covers, a delete and a compaction. Prints the versions to compare at."""
    import datetime
    import decimal
    n = 3000
    specials = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), None]
    words = ["", "a", "ab", "a%b", "a_b", "it's", "back\\slash", "%", "_x", "abc", "B", "é", "日本", "z"]
    epoch = datetime.datetime(2024, 1, 1)

    def rows(lo, hi):
        cols = {k: [] for k in ["i", "i32", "f", "f32", "s", "d", "ts", "b", "dc"]}
        for k in range(lo, hi):
            cols["i"].append(None if k % 53 == 0 else [-(2**63) + 1, 2**63 - 1][k % 2] if k % 401 == 3 else (k * 37) % 81 - 40)
            cols["i32"].append(None if k % 61 == 0 else (k * 11) % 41 - 20)
            cols["f"].append(specials[k % len(specials)] if k % 9 == 0 else ((k * 13) % 81 - 40) / 4.0)
            cols["f32"].append(None if k % 47 == 0 else ((k * 7) % 33 - 16) / 2.0)
            cols["s"].append(None if k % 59 == 0 else words[k % len(words)] + ("" if k % 4 else str(k % 3)))
            cols["d"].append(None if k % 43 == 0 else (epoch + datetime.timedelta(days=(k * 17) % 90 - 30)).date())
            cols["ts"].append(None if k % 41 == 0 else epoch + datetime.timedelta(hours=(k * 29) % 200 - 100, seconds=k % 2))
            cols["b"].append(None if k % 7 == 0 else k % 3 == 0)
            cols["dc"].append(None if k % 31 == 0 else decimal.Decimal((k * 37) % 8101 - 4000) / 100)
        return pa.table(
            {
                "i": pa.array(cols["i"], pa.int64()),
                "i32": pa.array(cols["i32"], pa.int32()),
                "f": pa.array(cols["f"], pa.float64()),
                "f32": pa.array(cols["f32"], pa.float32()),
                "s": pa.array(cols["s"], pa.utf8()),
                "d": pa.array(cols["d"], pa.date32()),
                "ts": pa.array(cols["ts"], pa.timestamp("us")),
                "b": pa.array(cols["b"], pa.bool_()),
                "dc": pa.array(cols["dc"], pa.decimal128(15, 2)),
            }
        )

    ds = lance.write_dataset(rows(0, n), uri, max_rows_per_file=700)
    out = {"unindexed": ds.version}
    for col in ["i", "f", "s", "d", "ts", "b", "dc"]:
        ds.create_scalar_index(col, lance.indices.IndexConfig("btree", {"zone_size": 64}))
    # indexes lancet does not answer through: the column is scanned instead
    ds.create_scalar_index("i32", "BITMAP")
    ds.create_scalar_index("f32", "ZONEMAP")
    ds = lance.write_dataset(rows(n, n + 500), uri, mode="append")
    out["appended"] = ds.version
    ds.delete("i % 5 = 0 OR s = 'ab'")
    ds = lance.dataset(uri)
    out["deleted"] = ds.version
    ds.optimize.compact_files(target_rows_per_fragment=2000)
    ds = lance.dataset(uri)
    out["compacted"] = ds.version
    return out


def explain(uri, f):
    ds = lance.dataset(uri)
    return {"plan": ds.scanner(filter=f, columns=[], with_row_id=True).explain_plan()}


def fri_expect(uri, pre_version):
    """Every physical row address of version PRE's fragments; where the row with the same `id`
    lives in the latest version (null if deleted by then, or already deleted at PRE); and what
    pylance's remap_row_addrs answers for them."""
    pre = lance.dataset(uri, version=int(pre_version))
    post = lance.dataset(uri)
    addrs = []
    for f in pre.get_fragments():
        m = f.metadata
        addrs.extend((m.id << 32) | o for o in range(m.physical_rows))
    live = pre.to_table(columns=["id"], with_row_address=True)
    id_at = dict(zip(live.column("_rowaddr").to_pylist(), live.column("id").to_pylist()))
    now = post.to_table(columns=["id"], with_row_address=True)
    addr_of = dict(zip(now.column("id").to_pylist(), now.column("_rowaddr").to_pylist()))
    expected = [addr_of.get(id_at[a]) if a in id_at else None for a in addrs]
    remapped = post.remap_row_addrs(pa.array(addrs, pa.uint64()))
    return {
        "addrs": addrs,
        "expected": expected,
        "pylance": None if remapped is None else remapped.to_pylist(),
    }


def read_file(path):
    r = lf.LanceFileReader(path)
    m = r.metadata()
    table = r.read_all().to_table()
    return {
        "num_rows": m.num_rows,
        "version": [m.major_version, m.minor_version],
        "schema": [[f.name, str(f.type), f.nullable] for f in m.schema],
        "metadata": {k.decode(): v.decode() for k, v in (m.schema.metadata or {}).items()},
        "global_buffer_1": r.read_global_buffer(1).hex(),
        "columns": {c: table.column(c).to_pylist() for c in table.column_names},
    }


def write_file(path):
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("label", pa.uint16())])
    table = pa.table(
        {"id": pa.array(range(300), pa.int64()), "label": pa.array([i % 7 if i % 5 else None for i in range(300)], pa.uint16())},
        schema=schema,
    )
    w = lf.LanceFileWriter(path, schema, version="2.1")
    w.write_batch(table)
    w.add_schema_metadata("lance:test", "from-pylance")
    idx = w.add_global_buffer(b"LSPC-peer")
    w.close()
    return {"global_buffer": idx, "num_rows": 300}


def delete(uri, predicate):
    ds = lance.dataset(uri)
    ds.delete(predicate)
    return {"version": lance.dataset(uri).version}


def rewrite(uri, sources_json, mode, arg, version=None):
    """Writes (does not commit) new fragments holding the live rows of fragments SOURCES, in
    order: `partition K` sends each row to destination `id % K` (keeping order within each),
    `ordered N` splits the concatenation into N-row fragments. Prints the fragments' metadata
    and the labels (partition only), for lancet to commit the rewrite with its FRI mapping."""
    ds = lance.dataset(uri, version=None if version is None else int(version))
    live = pa.concat_tables([ds.get_fragment(s).to_table() for s in json.loads(sources_json)])
    labels = []
    if mode == "partition":
        k = int(arg)
        labels = [i % k for i in live.column("id").to_pylist()]
        parts = [live.filter(pa.array([label == d for label in labels])) for d in range(k)]
    else:
        n = int(arg)
        parts = [live.slice(o, n) for o in range(0, live.num_rows, n)]
    fragments = []
    for part in parts:
        out = lance.fragment.write_fragments(
            part, uri, max_rows_per_file=1 << 30, data_storage_version=ds.data_storage_version
        )
        assert len(out) == 1, "one fragment per destination"
        fragments.append(out[0].to_json())
    return {"fragments": fragments, "labels": labels}


def append_at(uri, read_version, start, n):
    """Writes rows [START, START+N) (the fixtures' columns) as new fragments and commits them
    as an Append prepared on READ_VERSION, as a writer that started before later commits."""
    ds = lance.dataset(uri, version=int(read_version))
    ids = list(range(int(start), int(start) + int(n)))
    part = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"name-{i}" for i in ids], pa.utf8()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )
    frags = lance.fragment.write_fragments(part, uri, data_storage_version=ds.data_storage_version)
    out = lance.LanceDataset.commit(uri, lance.LanceOperation.Append(frags), read_version=int(read_version))
    return {"version": out.version}


def write_fragments(uri, start, n):
    """Writes rows [START, START+N) (the fixtures' columns) as new fragments of at most 1000
    rows without committing them, and prints their metadata, for lancet to commit."""
    ds = lance.dataset(uri)
    ids = list(range(int(start), int(start) + int(n)))
    part = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"name-{i}" for i in ids], pa.utf8()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )
    frags = lance.fragment.write_fragments(
        part, uri, max_rows_per_file=1000, data_storage_version=ds.data_storage_version
    )
    return {"fragments": [f.to_json() for f in frags]}


def create(uri, n):
    """Writes rows [0, N) (the fixtures' columns) in fragments of N/4 rows, then deletes
    every 10th row: versions 1 and 2. With s3:// URIs the AWS_* variables configure the store."""
    n = int(n)
    ids = list(range(n))
    t = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"name-{i}" for i in ids], pa.utf8()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )
    lance.write_dataset(t, uri, max_rows_per_file=max(1, n // 4))
    lance.dataset(uri).delete("id % 10 = 0")
    return {"version": lance.dataset(uri).version}


def churn(uri, n):
    """N commits racing other writers: appends, deletes and compactions in turn. A commit that
    loses a conflict is retried on the latest version (Lance's own retries come first); a
    compaction pylance refuses (a tagged FRI history needs defer_index_remap) is skipped.
    Prints what landed, what was refused and how many conflicts."""
    import time
    landed, refused, conflicts = [], [], 0
    for i in range(int(n)):
        for attempt in range(20):
            try:
                ds = lance.dataset(uri)
                kind = ("append", "delete", "append", "compact")[i % 4]
                if kind == "append":
                    start = 1_000_000 + i * 1000
                    ids = list(range(start, start + 200))
                    t = pa.table(
                        {
                            "id": pa.array(ids, pa.int64()),
                            "name": pa.array([f"name-{j}" for j in ids], pa.utf8()),
                            "value": pa.array([j * 0.5 for j in ids], pa.float64()),
                        }
                    )
                    lance.write_dataset(t, uri, mode="append")
                elif kind == "delete":
                    ds.delete(f"id % 17 = {i % 17}")
                else:
                    ds.optimize.compact_files(target_rows_per_fragment=50_000)
                landed.append(kind)
                time.sleep(0.15)  # leave the other writer room to land between commits
                break
            except Exception as e:  # noqa: BLE001 - conflicts surface as several types
                if "requires defer_index_remap" in str(e):
                    # pylance 14 refuses to compact (with eager remap) a table whose Fragment
                    # Reuse Index history is tagged, as lancet's rewrites leave it
                    refused.append(kind)
                    break
                if "onflict" not in str(e) and "ncompatible" not in str(e):
                    raise
                conflicts += 1
                time.sleep(0.05)
    return {"landed": landed, "refused": refused, "conflicts": conflicts}


def versions(uri):
    """Every version's visible row count and whether it opens, as pylance sees it."""
    ds = lance.dataset(uri)
    out = {}
    for v in ds.versions():
        d = lance.dataset(uri, version=v["version"])
        out[str(v["version"])] = {"rows": d.count_rows(), "indices": sorted(i["name"] for i in d.list_indices())}
    return out


def transactions(uri):
    """Each version's operation name, newest first, as pylance reads them."""
    ds = lance.dataset(uri)
    out = []
    for t in ds.get_transactions(ds.version):
        out.append(None if t is None else {"read_version": t.read_version, "operation": type(t.operation).__name__})
    return {"version": ds.version, "transactions": out, "indices": sorted(i["name"] for i in ds.list_indices())}


def index(uri, column, index_type, name):
    """Builds a pylance scalar index (BTREE, BITMAP, ZONEMAP, ...) and lists every index."""
    ds = lance.dataset(uri)
    ds.create_scalar_index(column, index_type, name=name)
    ds = lance.dataset(uri)
    return {"version": ds.version, "indices": sorted([i["name"], i["type"]] for i in ds.list_indices())}


def text_vector_table(uri):
    """A table whose string column has only an Inverted index and whose vector column an
    IVF_FLAT index (neither of which lancet reads), plus an unindexed int64 column."""
    import numpy as np

    n = 2000
    rng = np.random.default_rng(5)
    vec = pa.FixedSizeListArray.from_arrays(pa.array(rng.random(n * 8).astype("float32")), 8)
    words = [f"w{i % 50} x{i % 7}" if i % 97 else None for i in range(n)]
    t = pa.table({"s": pa.array(words, pa.utf8()), "v": vec, "k": pa.array(range(n), pa.int64())})
    ds = lance.write_dataset(t, uri, max_rows_per_file=800)
    ds.create_scalar_index("s", "INVERTED")
    ds.create_index("v", "IVF_FLAT", num_partitions=2)
    ds = lance.dataset(uri)
    return {"version": ds.version, "indices": sorted([i["name"], i["type"]] for i in ds.list_indices())}


def cleanup_history(uri, stable):
    """Versions 1.. : create, two appends, a delete, a BTree, an update, a compaction, a
    BTree rebuild, a delete, a second compaction, another delete; tag `t2` on version 2.
    Without stable row ids the compactions defer index remapping (a v0 FRI); pylance 14.0.2
    refuses that with stable row ids, so those compact plainly."""
    stable = stable == "true"

    def tbl(a, b):
        return pa.table({"id": pa.array(range(a, b), pa.int64()), "v": pa.array([f"s{i}" for i in range(a, b)])})

    lance.write_dataset(tbl(0, 100), uri, enable_stable_row_ids=stable)
    lance.write_dataset(tbl(100, 200), uri, mode="append")
    lance.write_dataset(tbl(200, 300), uri, mode="append")
    lance.dataset(uri).delete("id < 10")
    lance.dataset(uri).create_scalar_index("id", "BTREE")
    lance.dataset(uri).update({"v": "'upd'"}, where="id >= 250")
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=not stable)
    lance.dataset(uri).create_scalar_index("id", "BTREE", replace=True)
    lance.dataset(uri).delete("id = 42")
    lance.write_dataset(tbl(300, 400), uri, mode="append")
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=1000, defer_index_remap=not stable)
    lance.dataset(uri).delete("id = 77")
    ds = lance.dataset(uri)
    ds.tags.create("t2", 2)
    return {"version": ds.version, "indices": sorted(i["name"] for i in ds.list_indices())}


def cleanup(uri, args_json):
    import datetime
    a = json.loads(args_json)
    kw = {"error_if_tagged_old_versions": False}
    if "older_than_s" in a:
        kw["older_than"] = datetime.timedelta(seconds=a["older_than_s"])
    if "retain_versions" in a:
        kw["retain_versions"] = a["retain_versions"]
    if a.get("delete_unverified"):
        kw["delete_unverified"] = True
    st = lance.dataset(uri).cleanup_old_versions(**kw)
    return {"bytes_removed": st.bytes_removed, "old_versions": st.old_versions}


def clone(uri, target, version):
    lance.dataset(uri).shallow_clone(target, int(version))
    c = lance.dataset(target)
    return {"version": c.version, "versions": [v["version"] for v in c.versions()]}


def branch_history(uri):
    def tbl(a, b):
        return pa.table({"id": pa.array(range(a, b), pa.int64()), "v": pa.array([f"s{i}" for i in range(a, b)])})

    lance.write_dataset(tbl(0, 100), uri)
    lance.write_dataset(tbl(100, 200), uri, mode="append")
    lance.dataset(uri).delete("id < 5")
    branch = lance.dataset(uri).create_branch("dev", 2)
    branch.insert(tbl(900, 910))
    lance.dataset(uri).optimize.compact_files(target_rows_per_fragment=10000)
    return {"version": lance.dataset(uri).version}


def branch_rows(uri, branch):
    d = lance.dataset(uri).checkout_version((branch, None))
    return {"rows": d.count_rows(), "data": sorted(d.to_table().column("id").to_pylist())}


def data_schema():
    return pa.schema([("id", pa.int64(), False), ("x", pa.float64()), ("s", pa.string())])


def data_rows(start, end):
    ids = list(range(start, end))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([i * 1.5 for i in ids], pa.float64()),
            "s": pa.array([None if i % 9 == 0 else f"s{i}" for i in ids], pa.string()),
        },
        schema=data_schema(),
    )


def data_files(d):
    import os
    import pyarrow.csv as csv
    import pyarrow.parquet as pq
    pq.write_table(data_rows(0, 100), os.path.join(d, "part1.parquet"))
    with pa.ipc.new_file(os.path.join(d, "part2.arrow"), data_schema()) as w:
        w.write_table(data_rows(100, 150))
    # CSV: a NULL string is an empty field
    with open(os.path.join(d, "part3.csv"), "w") as f:
        f.write("id,x,s\n")
        for r in data_rows(150, 180).to_pylist():
            f.write(f"{r['id']},{r['x']},{r['s'] or ''}\n")
    return {"dir": d}


def read_csv_part(path):
    import pyarrow.csv as csv
    opts = csv.ConvertOptions(column_types=data_schema(), strings_can_be_null=True)
    return csv.read_csv(path, convert_options=opts).cast(data_schema())


def data_twin(uri, d, stable):
    import os
    import pyarrow.parquet as pq
    stable = stable == "true"
    lance.write_dataset(pq.read_table(os.path.join(d, "part1.parquet")).cast(data_schema()), uri,
                        max_rows_per_file=40, enable_stable_row_ids=stable)
    with pa.ipc.open_file(os.path.join(d, "part2.arrow")) as r:
        lance.write_dataset(r.read_all(), uri, mode="append")
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 3")
    ds = lance.dataset(uri)
    ds.update({"x": "x * 2", "s": "'u'"}, where="id < 60")
    lance.write_dataset(read_csv_part(os.path.join(d, "part3.csv")), uri, mode="append")
    return {"version": lance.dataset(uri).version}


def table(uri, opts):
    o = json.loads(opts)
    ds = lance.dataset(uri, version=o.pop("version", None))
    t = ds.to_table(**o)
    return {"columns": t.column_names, "rows": [[json_value(v) for v in r.values()] for r in t.to_pylist()]}


def take_rows(uri, ids, columns=None):
    ds = lance.dataset(uri)
    t = ds._take_rows(json.loads(ids), columns=columns.split(",") if columns else None)
    return {"columns": t.column_names, "rows": [[json_value(v) for v in r.values()] for r in t.to_pylist()]}


def maintenance_table(uri, twin, stable):
    import shutil
    t = pa.table({"id": pa.array(range(10000), pa.int64()), "v": pa.array(range(10000), pa.int64())})
    ds = lance.write_dataset(t, uri, max_rows_per_file=500, enable_stable_row_ids=stable == "true")
    ds.create_scalar_index("id", "BTREE")
    lance.dataset(uri).delete("id % 10 = 3")
    shutil.copytree(uri, twin)
    return {"version": lance.dataset(uri).version}


def drop_index(uri, name):
    """pylance's drop_index: a CreateIndex removing every segment of `name`."""
    lance.dataset(uri).drop_index(name)
    ds = lance.dataset(uri)
    return {"version": ds.version, "indices": sorted(i["name"] for i in ds.list_indices())}


def keyed_table(uri):
    """A table with a non-null `id` and a nullable `v`, no key set."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.int64())])
    lance.write_dataset(pa.table({"id": [1, 2, 3], "v": [1, None, 3]}, schema=schema), uri)
    return {"version": lance.dataset(uri).version}


def primary_key(uri):
    """The unenforced primary key pylance reads: its columns' names, in key order."""
    return {"key": [f.name() for f in lance.dataset(uri).lance_schema.unenforced_primary_key()]}


def append_iv(uri, start, n):
    ids = range(int(start), int(start) + int(n))
    t = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())})
    lance.write_dataset(t, uri, mode="append")
    return {"version": lance.dataset(uri).version}


def compact(uri, opts):
    ds = lance.dataset(uri)
    ds.optimize.compact_files(**json.loads(opts))
    ds = lance.dataset(uri)
    return {
        "fragments": [f.physical_rows for f in ds.get_fragments()],
        "indices": sorted(i["name"] for i in ds.list_indices()),
    }


def twin_table(uri, twin, spec_json):
    """A table pylance writes from a spec, copied to `twin`: `files` fragments of `rows` rows
    (id and v = id), a BTree on `index` (when named) over those, `append` more fragments after
    the index, then `delete` (a predicate) applied."""
    import shutil
    spec = json.loads(spec_json)
    rows, files = spec["rows"], spec["files"]
    stable = spec.get("stable", False)

    def part(start, n):
        ids = range(start, start + n)
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64())})

    ds = lance.write_dataset(part(0, rows * files), uri, max_rows_per_file=rows,
                             enable_stable_row_ids=stable)
    if spec.get("index"):
        ds.create_scalar_index(spec["index"], "BTREE")
    for i in range(spec.get("append", 0)):
        lance.write_dataset(part(rows * (files + i), rows), uri, mode="append",
                            max_rows_per_file=rows)
    if spec.get("delete"):
        lance.dataset(uri).delete(spec["delete"])
    shutil.copytree(uri, twin)
    return {"version": lance.dataset(uri).version}


def drop_columns(uri, columns):
    """pylance's drop_columns (a Project), then each fragment's data files."""
    ds = lance.dataset(uri)
    ds.drop_columns(columns.split(","))
    ds = lance.dataset(uri)
    return {"version": ds.version,
            "files": [[df.path for df in f.data_files()] for f in ds.get_fragments()]}


def coverage(uri):
    """Each index entry's name and covered fragment ids, sorted."""
    ds = lance.dataset(uri)
    out = []
    for i in ds.list_indices():
        out.append([i["name"], sorted(int(f) for f in i["fragment_ids"])])
    return {"indices": sorted(out), "fragments": [f.physical_rows for f in ds.get_fragments()]}


def add_columns(uri, name, expr):
    """pylance's add_columns with one SQL expression."""
    ds = lance.dataset(uri)
    ds.add_columns({name: expr})
    return {"version": lance.dataset(uri).version}


def files(uri):
    """Each fragment's data files: the field ids each lists."""
    ds = lance.dataset(uri)
    return {"version": ds.version,
            "files": [[list(df.fields) for df in f.data_files()] for f in ds.get_fragments()]}


def overwrite_twin(twin, path, start, n, max_rows):
    """Writes rows [start, start+n) of another schema (`k` utf8, `n` int64) to Parquet at
    `path`, and overwrites `twin` with them through pylance."""
    import pyarrow.parquet as pq
    ids = range(int(start), int(start) + int(n))
    t = pa.table({"k": pa.array([f"k{i}" for i in ids], pa.utf8()),
                  "n": pa.array(ids, pa.int64())})
    pq.write_table(t, path)
    lance.write_dataset(t, twin, mode="overwrite", max_rows_per_file=int(max_rows))
    return {"version": lance.dataset(twin).version}


def identity(uri):
    """What an overwrite must make equal: schema (names, types, field ids), rows with their
    `_rowid`s, fragment ids and rows, indexes, and the next ids handed out."""
    ds = lance.dataset(uri)
    t = ds.to_table(with_row_id=True)
    cols, rows = rows_of(t)
    return {"columns": cols, "rows": rows,
            "fields": [[f.name(), f.id()] for f in ds.lance_schema.fields()],
            "nullable": [[f.name, f.nullable] for f in ds.schema],
            "fragments": [[f.fragment_id, f.count_rows()] for f in ds.get_fragments()],
            "indices": sorted(i["name"] for i in ds.list_indices())}


def alter(uri, alterations):
    """pylance's alter_columns with the JSON list of alterations (a `data_type` by its
    pyarrow alias: "int32", "float32", "large_string", ...)."""
    alts = json.loads(alterations)
    for a in alts:
        if "data_type" in a:
            a["data_type"] = pa.type_for_alias(a["data_type"])
    lance.dataset(uri).alter_columns(*alts)
    return {"version": lance.dataset(uri).version}


def delta(uri, begin, end):
    """pylance's delta of (begin, end], read through version `end`: inserted and updated rows
    (every column with _rowid and the version columns), deleted row ids sorted."""
    ds = lance.dataset(uri, version=int(end))
    d = ds.delta(begin_version=int(begin), end_version=int(end))
    out = {}
    for name, reader in [("inserted", d.get_inserted_rows()), ("updated", d.get_updated_rows())]:
        cols, rows = rows_of(reader.read_all())
        out[name] = {"columns": cols, "rows": rows}
    out["deleted"] = sorted(d.get_deleted_row_ids().read_all().column("_rowid").to_pylist())
    return out


def branches(uri, action, name=None, version=None):
    """pylance's branches: `list` ({name: parent_version}), `create` NAME VERSION, `rows` NAME
    (the branch's latest version, opened through the main dataset), `append` NAME START N (rows
    of the `create` peer's columns appended to the branch)."""
    ds = lance.dataset(uri)
    if action == "create":
        ds.create_branch(name, int(version))
    elif action == "rows":
        b = ds.checkout_version((name, None))
        cols, rows = rows_of(b.to_table())
        return {"version": b.version, "columns": cols, "rows": rows}
    elif action == "create-from":
        # a branch of branch `version` ("PARENT:V"): pylance's create_branch((parent, v))
        parent, v = version.split(":")
        ds.create_branch(name, (parent, int(v)))
    elif action == "delete":
        try:
            ds.branches.delete(name)
        except Exception as e:  # refused: its message
            return {"refused": str(e)}
    elif action == "tag":
        # tag `name` on "BRANCH:V"
        branch, v = version.split(":")
        ds.tags.create(name, (branch, int(v)))
    elif action == "append":
        b = ds.checkout_version((name, None))
        ids = list(range(int(version), int(version) + 5))
        t = pa.table({"id": pa.array(ids, pa.int64()),
                      "name": pa.array([f"name-{i}" for i in ids], pa.utf8()),
                      "value": pa.array([i * 0.5 for i in ids], pa.float64())})
        lance.write_dataset(t, b, mode="append")
    return {"branches": {k: v["parent_version"] for k, v in lance.dataset(uri).branches.list().items()}}


def tags(uri, action, name=None, version=None):
    """pylance's `ds.tags`: `list` ({name: version}), `create`/`update` NAME VERSION, `delete`
    NAME, or `open` NAME (the version a tag names, opened by pylance, and its rows)."""
    ds = lance.dataset(uri)
    if action == "create":
        ds.tags.create(name, int(version))
    elif action == "update":
        ds.tags.update(name, int(version))
    elif action == "delete":
        ds.tags.delete(name)
    elif action == "open":
        at = lance.dataset(uri, version=name)
        cols, rows = rows_of(at.to_table())
        return {"version": at.version, "columns": cols, "rows": rows}
    return {"tags": {k: v["version"] for k, v in lance.dataset(uri).tags.list().items()}}


def merge_source(path, keys_json, tag):
    """Writes a merge source to Parquet at `path`: `id` the keys (JSON, null allowed) and
    `v` = 1000000 * tag + id (0 for a NULL key), columns in the order `v`, `id`."""
    import pyarrow.parquet as pq
    keys = json.loads(keys_json)
    v = [1000000 * int(tag) + (k or 0) for k in keys]
    pq.write_table(pa.table({"v": pa.array(v, pa.int64()), "id": pa.array(keys, pa.int64())}), path)
    return {"rows": len(keys)}


def merge_insert(uri, path, on, opts_json):
    """pylance's merge_insert of the Parquet rows at `path` keyed on `on` (comma-separated):
    opts `matched` (update|delete|nothing|fail), `not_matched` (insert|nothing),
    `by_source` (keep|delete), `by_source_filter`, `use_index`. Run on one core: pylance's
    row order for updated rows follows its scan's partitions (one per core)."""
    import pyarrow.parquet as pq
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    o = json.loads(opts_json)
    b = lance.dataset(uri).merge_insert(on.split(","))
    m = o.get("matched", "update")
    if m == "update":
        b = b.when_matched_update_all(o.get("condition"))
    elif m == "delete":
        b = b.when_matched_delete()
    elif m == "fail":
        b = b.when_matched_fail()
    if o.get("not_matched", "insert") == "insert":
        b = b.when_not_matched_insert_all()
    if o.get("by_source", "keep") == "delete":
        b = b.when_not_matched_by_source_delete(o.get("by_source_filter"))
    if "use_index" in o:
        b = b.use_index(o["use_index"])
    r = b.execute(pq.read_table(path))
    return {"inserted_rows": r["num_inserted_rows"], "updated_rows": r["num_updated_rows"],
            "deleted_rows": r["num_deleted_rows"], "version": lance.dataset(uri).version}


def lineage(uri):
    """Every row with `_rowid` and, on stable-row-id tables, its version columns, in scan
    order; the fragments' ids and physical rows."""
    ds = lance.dataset(uri)
    columns = ["id", "v"]
    if ds.has_stable_row_ids:
        columns += ["_row_created_at_version", "_row_last_updated_at_version"]
    t = ds.to_table(columns=columns, with_row_id=True)
    rows = [[json_value(v) for v in r.values()] for r in t.to_pylist()]
    return {"columns": t.column_names, "rows": rows,
            "fragments": [[f.fragment_id, f.physical_rows] for f in ds.get_fragments()]}


def maps(uri, action=None):
    """The table's config, metadata, schema metadata and field metadata; with `action`
    `pylance`, pylance makes the changes the interop test makes with lancet first."""
    ds = lance.dataset(uri)
    if action == "pylance":
        ds.update_config({"lance.test": "1", "gone": "x"})
        ds.update_config({"gone": None})
        ds.update_metadata({"owner": "a", "team": "b"})
        ds.update_metadata({"only": "c"}, replace=True)
        ds.update_schema_metadata({"s": "1"})
        ds.update_field_metadata({"v": {"unit": "ms"}})
        ds = lance.dataset(uri)
    fields = {f.name: {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
              for f in ds.schema}
    schema = {k.decode(): v.decode() for k, v in (ds.schema.metadata or {}).items()}
    return {"config": ds.config(), "metadata": ds.metadata, "schema": schema, "fields": fields,
            "version": ds.version}


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    fn = {"scan": scan, "rowids": rowids, "filters": filters, "explain": explain, "fri-expect": fri_expect, "read-file": read_file, "write-file": write_file, "rewrite": rewrite, "delete": delete, "append-at": append_at, "write-fragments": write_fragments, "transactions": transactions, "create": create, "churn": churn, "versions": versions, "index": index, "filter-table": filter_table, "text-vector-table": text_vector_table, "cleanup-history": cleanup_history, "cleanup": cleanup, "clone": clone, "branch-history": branch_history, "branch-rows": branch_rows, "data-files": data_files, "data-twin": data_twin, "table": table, "take-rows": take_rows, "maintenance-table": maintenance_table, "compact": compact, "append-iv": append_iv, "keyed-table": keyed_table, "primary-key": primary_key, "drop-index": drop_index, "twin-table": twin_table, "coverage": coverage, "drop-columns": drop_columns, "tags": tags, "add-columns": add_columns, "files": files, "overwrite-twin": overwrite_twin, "identity": identity, "alter": alter, "delta": delta, "branches": branches, "merge-source": merge_source, "merge-insert": merge_insert, "lineage": lineage, "maps": maps}[cmd]
    json.dump(fn(*args), sys.stdout)


if __name__ == "__main__":
    main()
