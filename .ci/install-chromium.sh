#!/usr/bin/env bash
# Installs Debian's Chromium, which the browser tests of @session-tree/view drive through
# playwright-core, and the fonts its pages and screenshots use. Idempotent and quick: when the
# package is installed and the binary runs, it exits at once. Needs root (CI runs as root).
set -euo pipefail

runs() {
  [ "$(dpkg-query -W -f='${Status}' chromium 2>/dev/null || true)" = "install ok installed" ] &&
    /usr/bin/chromium --version >/dev/null 2>&1
}

if runs; then
  echo "install-chromium: $(/usr/bin/chromium --version 2>/dev/null) is installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "install-chromium: run as root to apt-get install chromium" >&2
  exit 1
fi

# The package lists of a fresh machine are empty: update first.
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation
if ! runs; then
  echo "install-chromium: chromium was installed but /usr/bin/chromium --version fails" >&2
  exit 1
fi
echo "install-chromium: installed $(/usr/bin/chromium --version 2>/dev/null)"
