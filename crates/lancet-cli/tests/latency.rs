//! Slow storage, measured (issue 44): `--store-latency` holds each request back, and every
//! request of the longest sequential chain costs the command its round trip; the delay proxy
//! (`tests/latency/delay_proxy.py`) adds the same round trip on the wire in front of moto's S3
//! server, for lancet and pylance alike, and its accounting agrees with lancet's own.

#[path = "moto/mod.rs"]
mod moto;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn lancet(args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lancet"))
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

fn ok(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let out = lancet(args, envs);
    assert!(
        out.status.success(),
        "lancet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON line `--store-stats` prints last on stderr.
fn stats(out: &Output) -> Value {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {err}"))
}

fn table_csv(dir: &Path) -> String {
    let path = dir.join("rows.csv");
    let mut rows = String::from("id,v\n");
    for i in 0..200 {
        rows.push_str(&format!("{i},{}\n", i % 7));
    }
    std::fs::write(&path, rows).unwrap();
    path.to_str().unwrap().to_string()
}

const NO_ENV: &[(&str, &str)] = &[];

#[test]
fn each_request_of_the_chain_costs_the_injected_latency() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let t = t.to_str().unwrap();
    let csv = table_csv(dir.path());
    ok(
        &["create", t, "--from", &csv, "--max-rows-per-file", "20"],
        NO_ENV,
    );
    ok(&["index", "build", t, "--column", "id"], NO_ENV);

    // a count is a listing and the manifest: two round trips, one after the other
    let counted = ok(
        &["--store-latency", "40ms", "--store-stats", "count", t],
        NO_ENV,
    );
    assert_eq!(String::from_utf8_lossy(&counted.stdout).trim(), "200");
    let s = stats(&counted);
    assert_eq!(
        (s["requests"].as_u64(), s["longest_chain"].as_u64()),
        (Some(2), Some(2)),
        "{s}"
    );
    assert_eq!(
        (s["lists"].as_u64(), s["gets"].as_u64()),
        (Some(1), Some(1)),
        "{s}"
    );
    assert!(s["wall_ms"].as_f64().unwrap() >= 80.0, "{s}");

    // a point query: no faster than its chain allows, and the same requests without delay
    let query = ["scan", t, "--filter", "id = 7", "--columns", "id"];
    let slow = ok(
        &[
            &["--store-latency", "30ms-50ms", "--store-stats"],
            &query[..],
        ]
        .concat(),
        NO_ENV,
    );
    let s = stats(&slow);
    let chain = s["longest_chain"].as_u64().unwrap();
    assert!(chain >= 3, "{s}");
    assert!(s["wall_ms"].as_f64().unwrap() >= 30.0 * chain as f64, "{s}");
    assert!(
        s["bytes_read"].as_u64().unwrap() > 0 && s["bytes_written"] == 0,
        "{s}"
    );
    let fast = ok(&[&["--store-stats"], &query[..]].concat(), NO_ENV);
    assert_eq!(slow.stdout, fast.stdout);
    assert_eq!(stats(&fast)["requests"], s["requests"]);

    for bad in ["80ms-20ms", "soon"] {
        let out = lancet(&["--store-latency", bad, "count", t], NO_ENV);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("lancet: --store-latency"), "{err}");
    }
}

/// A walk of the whole tree fetches each level's interiors at once and its leaves in rounds
/// of 32: the chain grows with the tree's height and leaves / 32, not with its objects.
#[test]
fn a_tree_is_walked_a_level_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let t = t.to_str().unwrap();
    let path = dir.path().join("rows.csv");
    let rows: String = (0..400).map(|i| format!("{i},{}\n", i % 7)).collect();
    std::fs::write(&path, format!("id,v\n{rows}")).unwrap();
    ok(
        &[
            "create",
            t,
            "--from",
            path.to_str().unwrap(),
            "--max-rows-per-file",
            "2",
        ],
        NO_ENV,
    );
    // 200 fragments, 2 per leaf: 100 leaves under 2 interiors under the root
    ok(&["tree", "convert", t, "--leaf-records", "2"], NO_ENV);
    let shown = ok(
        &[
            "--store-latency",
            "10ms",
            "--store-stats",
            "tree",
            "show",
            t,
            "--json",
        ],
        NO_ENV,
    );
    let tree: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(
        (tree["height"].as_u64(), tree["leaves"].as_u64()),
        (Some(2), Some(100))
    );
    let s = stats(&shown);
    // each object once: the listing, the manifest, 2 interiors, 100 leaves
    assert_eq!(s["requests"].as_u64(), Some(104), "{s}");
    // listing, manifest, the interiors' level, then the leaves 32 at a time: 4 rounds, or 5
    // as a sliding window (a leaf starts as soon as the first of its window is taken), and
    // one more for a loaded machine
    let chain = s["longest_chain"].as_u64().unwrap();
    assert!(
        chain <= 2 + 1 + 100_u64.div_ceil(32) + 2,
        "chain {chain}: {s}"
    );
}

/// The delay proxy, stopped on drop.
struct Proxy {
    child: Child,
    port: u16,
    control: u16,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn start_proxy(py: &str, target: &str, delay_ms: u64, dir: &Path) -> Proxy {
    let port_file = dir.join("proxy.port");
    let control_file = dir.join("proxy.control");
    let child = Command::new(py)
        .arg(repo().join("tests/latency/delay_proxy.py"))
        .args(["--target", target, "--delay-ms", &delay_ms.to_string()])
        .arg("--port-file")
        .arg(&port_file)
        .arg("--control-port-file")
        .arg(&control_file)
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !port_file.exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "no proxy");
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap().trim().parse().unwrap();
    Proxy {
        child,
        port: read(&port_file),
        control: read(&control_file),
    }
}

impl Proxy {
    fn ask(&self, what: &str) -> Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.control)).unwrap();
        s.write_all(format!("{what}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        serde_json::from_str(answer.trim()).unwrap()
    }
}

#[test]
fn the_delay_proxy_adds_the_same_round_trip_for_lancet_and_pylance() {
    const DELAY_MS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let py = moto::python();
    let server = moto::start_moto(&py);
    moto::make_bucket(&py, &server.endpoint, "slow");
    let target = server.endpoint.trim_start_matches("http://").to_string();
    let proxy = start_proxy(&py, &target, DELAY_MS, dir.path());
    let endpoint = format!("http://127.0.0.1:{}", proxy.port);
    let env = [
        ("AWS_ENDPOINT", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
    ];
    let uri = "s3://slow/t";
    let csv = table_csv(dir.path());
    ok(
        &["create", uri, "--from", &csv, "--max-rows-per-file", "20"],
        &env,
    );
    ok(&["index", "build", uri, "--column", "id"], &env);

    // lancet's own log and the proxy's count the same requests and the same chain
    proxy.ask("reset");
    let out = ok(
        &[
            "--store-stats",
            "scan",
            uri,
            "--filter",
            "id = 7",
            "--columns",
            "id",
        ],
        &env,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"id":7}"#);
    let own = stats(&out);
    let wire = proxy.ask("stats");
    assert_eq!(own["requests"], wire["requests"], "{own} {wire}");
    // the proxy may see one dependency more: it hears an answer before lancet takes it
    let own_chain = own["longest_chain"].as_u64().unwrap();
    let wire_chain = wire["longest_chain"].as_u64().unwrap();
    assert!(
        own_chain <= wire_chain && wire_chain <= own_chain + 1,
        "{own} {wire}"
    );
    let chain = wire["longest_chain"].as_f64().unwrap();
    assert!(
        own["wall_ms"].as_f64().unwrap() >= chain * DELAY_MS as f64,
        "{own}"
    );
    // listing, manifest, the index's lookup with its page data's tail, the page's column
    // metadata, the page, the data file: six round trips one after another
    assert!(chain <= 6.0, "{own}");

    // rows of several fragments found through the index are read at once, not one by one
    proxy.ask("reset");
    let out = ok(
        &[
            "--store-stats",
            "scan",
            uri,
            "--filter",
            "id < 190",
            "--columns",
            "id",
        ],
        &env,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 190);
    let wire = proxy.ask("stats");
    // ten data files, besides the listing, the manifest and the index
    assert!(wire["requests"].as_u64().unwrap() >= 12, "{wire}");
    assert!(wire["longest_chain"].as_u64().unwrap() <= 6, "{wire}");

    // on a tree, the BTree opens while the leaves resolve: no round trip more than flat
    ok(&["tree", "convert", uri], &env);
    proxy.ask("reset");
    let out = ok(
        &[
            "--store-stats",
            "scan",
            uri,
            "--filter",
            "id = 7",
            "--columns",
            "id",
        ],
        &env,
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), r#"{"id":7}"#);
    let wire = proxy.ask("stats");
    eprintln!("tree point query: {wire}");
    assert!(wire["longest_chain"].as_u64().unwrap() <= 6, "{wire}");

    // pylance through the same proxy pays the same round trip per request of its chain
    proxy.ask("reset");
    let script = format!(
        "import time, lance\n\
         so = {{'aws_endpoint': '{endpoint}', 'allow_http': 'true', 'aws_access_key_id': 'testing',\n\
               'aws_secret_access_key': 'testing', 'aws_region': 'us-east-1'}}\n\
         t = time.perf_counter()\n\
         rows = lance.dataset('{uri}', version=2, storage_options=so).to_table(filter='id = 7').to_pylist()\n\
         print(time.perf_counter() - t, rows)"
    );
    let run = Command::new(&py).args(["-c", &script]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let said = String::from_utf8_lossy(&run.stdout);
    let (seconds, rows) = said.trim().split_once(' ').unwrap();
    assert_eq!(rows, "[{'id': 7, 'v': 0}]");
    let wire = proxy.ask("stats");
    let chain = wire["longest_chain"].as_f64().unwrap();
    assert!(chain >= 2.0, "{wire}");
    assert!(
        seconds.parse::<f64>().unwrap() * 1000.0 >= chain * DELAY_MS as f64,
        "{wire}"
    );
}
