#!/bin/sh
# Installs what is missing, so `npm start` and `npm test` work on a fresh clone with only Node 20 + npm.
# The `node` devDependency then puts Node 22 first on the PATH of every npm script.
# `npm install --no-save` rather than `npm ci`: the registry these machines reach serves only the
# linux-x64 builds of platform packages, so the lockfile cannot list the other platforms' optional
# binaries and `npm ci` refuses it; `install --no-save` follows the lockfile and leaves it untouched.
set -e
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "installing dependencies..."
  npm install --no-save --no-audit --no-fund --loglevel=error
fi
# A changed patch cannot be applied over the one installed: reinstall what it patches.
for patch in patches/*.patch; do
  [ -f "$patch" ] || continue
  if [ "$patch" -nt node_modules/.package-lock.json ]; then
    name=$(basename "$patch" | sed -E 's/\+[^+]*\.patch$//; s/\+/\//')
    echo "re-applying $patch..."
    rm -rf "node_modules/$name"
    npm install --no-save --no-audit --no-fund --loglevel=error
    touch node_modules/.package-lock.json
  fi
done
