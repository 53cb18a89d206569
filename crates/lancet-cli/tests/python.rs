//! The Python package's test suite (`python/tests`, pytest), run by the README's test
//! command: `python/test.sh` builds the wheel with maturin into the interop virtualenv
//! (pylance 14.0.2, Ray, DuckDB, Polars, DataFusion) and runs pytest. It never skips:
//! without Python or PyPI it fails.

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_package_suite_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = Command::new("bash")
        .arg(root.join("python/test.sh"))
        // the differential tester in the suite drives this build of the CLI
        .env("LANCET_BIN", env!("CARGO_BIN_EXE_lancet"))
        .status()
        .expect("bash runs python/test.sh");
    assert!(status.success(), "python/test.sh failed: {status}");
}
