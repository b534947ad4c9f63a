#!/bin/sh
# Installs what is missing, so `npm start` and `npm test` work on a fresh clone with only Node 20 + npm.
# The `node` devDependency then puts Node 22 first on the PATH of every npm script.
set -e
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing dependencies (npm ci)..."
  npm ci --no-audit --no-fund --loglevel=error
fi
