#!/usr/bin/env bash
# Builds the lancet wheel with maturin (sharing the workspace's target directory, so the
# crates the Rust tests built are reused), installs it into the interop virtualenv together
# with the Python test dependencies (Ray, DuckDB, Polars, DataFusion, pytest), and runs the
# pytest suite against pylance 14.0.2 in the same virtualenv. Arguments go to pytest.
#   LANCET_WHEEL_PROFILE  cargo profile of the wheel (default dev: the Rust tests' build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/tests/interop/venv.sh")
venv=$(dirname "$(dirname "$py")")
stamp="$venv/.lancet-python-1"
if [ ! -f "$stamp" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ray[data]==2.60.0" duckdb==2.0.1 \
    polars==2.1.0 datafusion==55.0.0 pandas==3.1.1 pytest==9.2.0 maturin==1.16.0 >&2
  touch "$stamp"
fi
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --quiet --profile "${LANCET_WHEEL_PROFILE:-dev}" \
  -m "$root/python/Cargo.toml" -o "$wheels" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/lancet-*.whl >&2
# from the tests directory: the source tree's lancet/ (without the native module) must not
# shadow the installed package
cd "$root/python/tests"
"$venv/bin/python" -m pytest -q -p no:cacheprovider . "$@"
