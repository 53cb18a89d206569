#!/usr/bin/env bash
# Creates (once) the virtualenv that interop tests use to run the peer, pylance 14.0.2, and
# prints its python path. Everything comes from PyPI by package name: pylance, pyarrow, and
# moto, whose S3 server the S3 tests start on loopback.
#   LANCET_VENV  where to put it (default: ~/.cache/lancet/venv-pylance-14.0.2)
set -euo pipefail
venv="${LANCET_VENV:-$HOME/.cache/lancet/venv-pylance-14.0.2}"
stamp="$venv/.lancet-ready-2"
if [ ! -f "$stamp" ]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pylance==14.0.2" pyarrow "moto[server]" >&2
  "$venv/bin/python" -c "import lance; assert lance.__version__ == '14.0.2', lance.__version__" >&2
  touch "$stamp"
fi
echo "$venv/bin/python"
