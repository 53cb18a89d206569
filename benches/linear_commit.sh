#!/usr/bin/env bash
# One commit of N new fragments on an empty table (the setup of `lancet bench commit`, and any
# large distributed append), at 100K and 400K fragments: what the commit costs, and the
# ratio between the two. Judging a candidate is linear in what it holds, so 4x the fragments
# must cost under 6x the time (a quadratic judge took 9 s at 100K and 192 s at 300K).
#   benches/linear_commit.sh [SMALL] [LARGE] [LAYOUT]   (defaults 100000 400000 flat)
# Builds the release CLI first. Exits 1 when the ratio is 6 or more.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
small=${1:-100000}
large=${2:-400000}
layout=${3:-flat}
cargo build -q --release -p lancet-cli --manifest-path "$root/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$root/target}/release/lancet"
commit_s() {
  "$bin" bench commit --fragments "$1" --commits 1 --changed 1 --layout "$layout" --json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["setup_commit_s"])'
}
a=$(commit_s "$small")
b=$(commit_s "$large")
python3 - "$small" "$a" "$large" "$b" <<'PY'
import sys
small, a, large, b = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ratio = b / a if a > 0 else float("inf")
print(f"one commit of {small:,} new fragments: {a:.2f} s; of {large:,}: {b:.2f} s; "
      f"ratio {ratio:.2f} for {large / small:.0f}x the fragments (limit 6)")
sys.exit(0 if ratio < 6 else 1)
PY
