#!/bin/sh
# Real-browser tests use Debian's chromium (playwright's own browser download is not reachable here).
# Installs it when missing; needs root (CI and dev machines here run as root).
set -e
if command -v chromium >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != "0" ]; then
  echo "chromium is missing: install Debian's chromium package (sudo apt-get install chromium)" >&2
  exit 1
fi
echo "installing chromium (Debian package)..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq chromium >/dev/null
