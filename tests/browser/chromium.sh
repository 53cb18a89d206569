#!/usr/bin/env bash
# Makes sure Debian's Chromium and its ChromeDriver are installed (packages chromium and
# chromium-driver: /usr/bin/chromium, /usr/bin/chromedriver), installing them with apt-get as
# the tests' pylance virtualenv is created: on first use, by the test command itself.
# Browsers that download their own builds cannot be fetched on these machines.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  sudo="sudo -n"
fi
# one installer at a time: test binaries may ask concurrently
exec 9>"${TMPDIR:-/tmp}/lancet-chromium-install.lock"
flock 9
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2 || true
$sudo apt-get install -y -qq chromium chromium-driver >&2
