"""Writes pylance 14.0.2 fixture datasets and what pylance reports about each of their versions.

Usage: python gen_fixtures.py OUT_DIR

For each dataset OUT_DIR/<name>/ it writes OUT_DIR/<name>.expect.json:
{"versions": [{"version", "num_rows", "stable_row_ids", "fragments": [...], "indices": [...]}]}
lancet's interop tests compare `lancet inspect --json` against these.
"""
import json
import os
import sys

import lance
import pyarrow as pa


def table(start, n):
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([f"name-{i}" for i in ids], pa.utf8()),
            "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        }
    )


def deletion_path(frag_id, d):
    suffix = {"array": "arrow", "bitmap": "bin"}[d.file_type]
    return f"_deletions/{frag_id}-{d.read_version}-{d.id}.{suffix}"


def describe(ds):
    frags = []
    for f in ds.get_fragments():
        m = f.metadata
        d = m.deletion_file
        frags.append(
            {
                "id": m.id,
                "physical_rows": m.physical_rows,
                "num_deleted_rows": d.num_deleted_rows if d is not None else 0,
                "files": [df.path for df in m.files],
                "deletion_file": deletion_path(m.id, d) if d is not None else None,
            }
        )
    indices = []
    for idx in ds.list_indices():
        indices.append(
            {
                "name": idx["name"],
                "uuid": idx["uuid"],
                "fields": [ds.schema.get_field_index(n) for n in idx["fields"]],
                "dataset_version": idx["version"],
                "fragment_ids": sorted(int(i) for i in idx["fragment_ids"]),
            }
        )
    type_urls = {d.name: d.type_url for d in ds.describe_indices()}
    for i in indices:
        i["type_url"] = type_urls.get(i["name"])
    return {
        "version": ds.version,
        "num_rows": ds.count_rows(),
        "stable_row_ids": bool(ds.has_stable_row_ids),
        "fragments": sorted(frags, key=lambda f: f["id"]),
        "indices": sorted(indices, key=lambda i: i["name"]),
    }


def dump(uri, out):
    versions = []
    for v in lance.dataset(uri).versions():
        versions.append(describe(lance.dataset(uri, version=v["version"])))
    with open(out, "w") as f:
        json.dump({"versions": versions}, f, indent=1)


def basic(uri):
    # v1: 3 fragments; v2: one 8000-row fragment; v3: small delete (.arrow);
    # v4: >5000 rows deleted in one fragment (.bin); v5: BTree index with 64-row pages.
    lance.write_dataset(table(0, 10_000), uri, max_rows_per_file=4000)
    lance.write_dataset(table(10_000, 8000), uri, mode="append", max_rows_per_file=10_000)
    ds = lance.dataset(uri)
    ds.delete("id < 3 OR id = 5000")
    ds.delete("id >= 10100 AND id < 16000")
    ds.create_scalar_index("id", lance.indices.IndexConfig("btree", {"zone_size": 64}))


def stable(uri):
    lance.write_dataset(table(0, 3000), uri, max_rows_per_file=1000, enable_stable_row_ids=True)
    lance.write_dataset(table(3000, 1500), uri, mode="append")
    ds = lance.dataset(uri)
    ds.update({"value": "value + 1"}, where="id % 7 = 0 AND id < 2000")
    ds.delete("id % 11 = 0")


def fri(uri):
    lance.write_dataset(table(0, 4000), uri, max_rows_per_file=500)
    ds = lance.dataset(uri)
    ds.create_scalar_index("id", lance.indices.IndexConfig("btree", {"zone_size": 64}))
    ds.delete("id % 5 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=1200, defer_index_remap=True)
    ds = lance.dataset(uri)
    ds.delete("id % 7 = 0")
    ds.optimize.compact_files(target_rows_per_fragment=5000, defer_index_remap=True)


def stable_history(uri):
    # Stable row ids through every kind of change: append, update, delete, merge_insert and two
    # compactions (sequences move between fragments and become holes, bitmaps and arrays).
    lance.write_dataset(table(0, 3000), uri, max_rows_per_file=1000, enable_stable_row_ids=True)
    lance.write_dataset(table(3000, 1500), uri, mode="append", max_rows_per_file=700)
    ds = lance.dataset(uri)
    ds.update({"value": "value + 1"}, where="id % 7 = 0 AND id < 2000")
    ds.delete("id % 11 = 0")
    new = table(4300, 400)
    ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(new)
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=1500)
    ds = lance.dataset(uri)
    ds.delete("id % 13 = 0")
    ds.update({"value": "value * 2"}, where="id % 17 = 0")
    ds = lance.dataset(uri)
    ds.optimize.compact_files(target_rows_per_fragment=2500)


def btree(uri):
    # One column per BTree case, each indexed with 64-row pages; then deletions (version 6+).
    import math
    n = 5000
    ints, floats, strs, mostly_null = [], [], [], []
    specials = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), None]
    words = ["", "a", "ab", "abc", "abd", "b", "é", "éa", "日本", "日本語", "z\u00ff", "\U0010ffff"]
    for i in range(n):
        # heavy duplicates across pages, plus the int64 extremes
        ints.append(None if i % 97 == 0 else [-(2**63) + 1, 2**63 - 1][i % 2] if i % 500 == 1 else (i * 7919) % 60 - 30)
        floats.append(specials[i % len(specials)] if i % 7 == 0 else ((i * 31) % 200 - 100) / 4.0)
        strs.append(None if i % 89 == 0 else words[i % len(words)] + ("" if i % 3 else str(i % 11)))
        mostly_null.append(i % 50 if i % 400 == 0 else None)
    t = pa.table(
        {
            "i": pa.array(ints, pa.int64()),
            "f": pa.array(floats, pa.float64()),
            "s": pa.array(strs, pa.utf8()),
            "m": pa.array(mostly_null, pa.int64()),
        }
    )
    ds = lance.write_dataset(t, uri, max_rows_per_file=1200)
    for col in ["i", "f", "s", "m"]:
        ds.create_scalar_index(col, lance.indices.IndexConfig("btree", {"zone_size": 64}))
        ds = lance.dataset(uri)
    ds.delete("i = 3 OR f = 2.5 OR s = 'ab'")


BUILDERS = {"basic": basic, "stable": stable, "fri": fri, "stable_history": stable_history, "btree": btree}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, build in BUILDERS.items():
        uri = os.path.join(out, name)
        build(uri)
        dump(uri, os.path.join(out, f"{name}.expect.json"))


if __name__ == "__main__":
    main()
