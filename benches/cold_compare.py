"""Cold commands on a slow object store (issue 44): lancet (flat and tree) and pylance 14.0.2
(flat), each step a new process with nothing in memory, against moto's S3 server behind the
delay proxy (`tests/latency/delay_proxy.py`), which adds the same round trip to every request
of both engines and counts what crosses it: requests, bytes, and the longest chain of requests
that ran one after another (a request depends on every request answered before it started).

Usage (from the repo root, after `cargo build --release -p lancet-cli`, with the interop
virtualenv's python, which has pylance, moto and boto3):
    python benches/cold_compare.py [WORK_DIR] [--sizes 10000,100000] [--rows-per-fragment 20]
        [--delay-ms 50] [--lancet PATH]

For each size N: a table of N fragments (stable row ids, a BTree on `id`) made locally by
`lancet create` and `lancet index build`, its tree twin by `lancet tree convert`, both uploaded
to moto directly (not through the proxy). Then, each step timed as a whole process (lancet) or
from after `import lance` to the answer (pylance, whose import costs no storage):
  open + count rows, point query through the index (`id = K`), 1% of the rows by an indexed
  range, take 100 row ids, append one fragment, delete 10 rows.
Each step runs twice: without the delay (what the work itself costs here: moto's time per
request, the bytes, the CPU), then with it. Prints a table: wall time, requests, bytes read,
the chain, and the limit, chain x delay + the step without delay: what no client beats once
its requests depend on each other that way. The mutations run last (lancet's, then pylance's
on the same flat table), so each mutating step runs twice on a table one step further on.
"""
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "latency"))
from delay_proxy import DelayProxy  # noqa: E402

BUCKET = "cold"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
}


def option(name, default):
    if name in sys.argv:
        return sys.argv[sys.argv.index(name) + 1]
    return default


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import socket

    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto did not start")


def upload(local, prefix, endpoint):
    import boto3

    s3 = boto3.client("s3", endpoint_url=f"http://{endpoint}", region_name="us-east-1")
    files = []
    for root, _, names in os.walk(local):
        for n in names:
            path = os.path.join(root, n)
            files.append((path, f"{prefix}/{os.path.relpath(path, local)}"))
    with concurrent.futures.ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda f: s3.upload_file(f[0], BUCKET, f[1]), files))
    return len(files)


def build(work, n, rpf, lancet):
    """The flat table and its tree twin, locally."""
    base = os.path.join(work, f"n{n}")
    flat, tree = os.path.join(base, "flat"), os.path.join(base, "tree")
    if os.path.isdir(tree):
        return flat, tree
    os.makedirs(base, exist_ok=True)
    csv = os.path.join(base, "rows.csv")
    with open(csv, "w") as f:
        f.write("id,v\n")
        for i in range(n * rpf):
            f.write(f"{i},{i % 1000}\n")
    run = lambda *a: subprocess.run([lancet, *a], check=True, capture_output=True)  # noqa: E731
    run("create", flat, "--from", csv, "--max-rows-per-file", str(rpf), "--stable-row-ids")
    run("index", "build", flat, "--column", "id")
    shutil.copytree(flat, tree)
    run("tree", "convert", tree)
    return flat, tree


PYLANCE = """
import json, sys, time
import lance, pyarrow as pa
uri, step, arg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
so = {{"aws_endpoint": "{endpoint}", "allow_http": "true", "aws_access_key_id": "testing",
      "aws_secret_access_key": "testing", "aws_region": "us-east-1"}}
t = time.perf_counter()
if step == "append":
    lance.write_dataset(pa.table({{"id": pa.array(arg, pa.int64()), "v": pa.array([i % 1000 for i in arg], pa.int64())}}),
                        uri, mode="append", storage_options=so)
else:
    ds = lance.dataset(uri, storage_options=so)
    if step == "count":
        ds.count_rows()
    elif step == "filter":
        ds.to_table(filter=arg, columns=["id", "v"])
    elif step == "take":
        ds._take_rows(arg, columns=["id", "v"])
    elif step == "delete":
        ds.delete(arg)
print(time.perf_counter() - t)
"""


def steps(n, rpf):
    rows = n * rpf
    point = rows // 2 + 7
    share = max(1, rows // 100)
    ids = [int(i * rows / 100) for i in range(100)]
    appended = list(range(rows, rows + rpf))
    return [
        ("open + count rows", "count", None),
        ("point query", "filter", f"id = {point}"),
        ("1% by index", "filter", f"id >= {rows // 4} AND id < {rows // 4 + share}"),
        ("take 100 row ids", "take", ids),
        ("append 1 fragment", "append", appended),
        ("delete 10 rows", "delete", f"id >= {rows // 3} AND id < {rows // 3 + 10}"),
    ]


def lancet_args(step, arg, uri, work):
    if step == "count":
        return ["count", uri]
    if step == "filter":
        return ["scan", uri, "--filter", arg, "--columns", "id,v", "--format", "csv"]
    if step == "take":
        return ["take", uri, "--row-ids", *map(str, arg), "--columns", "id,v", "--format", "csv"]
    if step == "append":
        path = os.path.join(work, f"append-{arg[0]}.csv")
        with open(path, "w") as f:
            f.write("id,v\n" + "".join(f"{i},{i % 1000}\n" for i in arg))
        return ["append", uri, "--from", path]
    if step == "delete":
        return ["delete", uri, "--filter", arg]
    raise ValueError(step)


def measure(proxy, command, env, delay):
    proxy.delay = delay
    proxy.reset()
    t = time.perf_counter()
    out = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(f"{command}: {out.stderr}")
    return wall, out, proxy.stats()


def main():
    positional, i = [], 1
    while i < len(sys.argv):
        if sys.argv[i].startswith("--"):
            i += 2
        else:
            positional.append(sys.argv[i])
            i += 1
    work = positional[0] if positional else "/tmp/cold"
    sizes = [int(s) for s in option("--sizes", "10000,100000").split(",")]
    rpf = int(option("--rows-per-fragment", "20"))
    delay = float(option("--delay-ms", "50")) / 1000
    lancet = os.path.abspath(option("--lancet", "target/release/lancet"))
    os.makedirs(work, exist_ok=True)
    moto, target = start_moto()
    try:
        import boto3

        os.environ.update(CREDENTIALS)
        boto3.client("s3", endpoint_url=f"http://{target}", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        proxy = DelayProxy(target, delay).start()
        endpoint = f"http://127.0.0.1:{proxy.port}"
        env = dict(os.environ, AWS_ENDPOINT=endpoint, AWS_ALLOW_HTTP="true", **CREDENTIALS)
        script = PYLANCE.format(endpoint=endpoint)
        results = []
        for n in sizes:
            t = time.perf_counter()
            flat, tree = build(work, n, rpf, lancet)
            objects = upload(flat, f"n{n}/flat", target) + upload(tree, f"n{n}/tree", target)
            print(f"# {n} fragments: built and uploaded {objects} objects in "
                  f"{time.perf_counter() - t:.0f} s", file=sys.stderr)
            uris = {"flat": f"s3://{BUCKET}/n{n}/flat", "tree": f"s3://{BUCKET}/n{n}/tree"}
            plan = steps(n, rpf)
            reads = [s for s in plan if s[1] not in ("append", "delete")]
            writes = [s for s in plan if s[1] in ("append", "delete")]
            for group in (reads, writes):
                for name, step, arg in group:
                    for engine, layout in (("lancet", "flat"), ("lancet", "tree"), ("pylance", "flat")):
                        uri = uris[layout]
                        # the same step without the delay first: what the work itself costs
                        # (moto, the bytes, the CPU), then with it
                        walls = []
                        for d in (0.0, delay):
                            if engine == "lancet":
                                cmd = [lancet, "--store-stats", *lancet_args(step, arg, uri, work)]
                                wall, out, wire = measure(proxy, cmd, env, d)
                                own = json.loads(out.stderr.strip().splitlines()[-1])
                                if own["requests"] != wire["requests"]:
                                    print(f"# {name}: lancet counted {own['requests']} requests, "
                                          f"the proxy {wire['requests']}", file=sys.stderr)
                            else:
                                cmd = [sys.executable, "-c", script, uri, step, json.dumps(arg)]
                                _, out, wire = measure(proxy, cmd, env, d)
                                wall = float(out.stdout.strip().splitlines()[-1])
                            walls.append(wall)
                        base, wall = walls
                        results.append((n, layout, engine, name, wall, base, wire))
                        limit = wire["longest_chain"] * delay + base
                        print(f"{n}\t{engine} {layout}\t{name}\t{wall:.3f} s\t"
                              f"{wire['requests']} req\tchain {wire['longest_chain']}\t"
                              f"{wire['bytes_down']} B\tlimit {limit:.3f} s", file=sys.stderr)
        ms = delay * 1000
        print(f"| fragments | engine | step | wall (s) | requests | longest chain | bytes read "
              f"| no delay (s) | limit: chain x {ms:.0f} ms + no delay (s) | wall / limit |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for n, layout, engine, name, wall, base, wire in results:
            limit = wire["longest_chain"] * delay + base
            print(f"| {n:,} | {engine} {layout} | {name} | {wall:.3f} | {wire['requests']} | "
                  f"{wire['longest_chain']} | {wire['bytes_down']:,} | {base:.3f} | {limit:.3f} "
                  f"| {wall / limit:.2f} |")
    finally:
        moto.terminate()


if __name__ == "__main__":
    main()
