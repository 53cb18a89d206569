//! moto's S3 server for the tests that need a real S3 protocol peer (`s3.rs`,
//! `latency.rs`), from the interop virtualenv `tests/interop/venv.sh` creates.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop")
}

pub fn python() -> String {
    let out = Command::new("bash")
        .arg(interop_dir().join("venv.sh"))
        .output()
        .expect("running tests/interop/venv.sh");
    assert!(
        out.status.success(),
        "venv.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// moto's server on a free loopback port, stopped on drop.
pub struct Moto {
    child: Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_moto(py: &str) -> Moto {
    let port = free_port();
    let child = Command::new(py)
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting moto's server");
    let moto = Moto {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "moto did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    moto
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Creates `bucket` on the server at `endpoint`.
pub fn make_bucket(py: &str, endpoint: &str, bucket: &str) {
    let made = Command::new(py)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .args([
            "-c",
            &format!(
                "import boto3; boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1').create_bucket(Bucket='{bucket}')"
            ),
        ])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
}
