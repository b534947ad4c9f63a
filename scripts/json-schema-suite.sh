#!/bin/sh
# Runs json_schema_validate against the official JSON Schema Test Suite
# (test/scripts/json-schema-suite.test.ts; figures and known gaps in README.md).
# The suite's npm package (@json-schema-org/tests) is a git dependency these machines cannot fetch,
# so the suite comes from Debian's libtest-json-schema-acceptance-perl, which ships it whole
# (drafts 3 to 2020-12, optional/, remotes/; suite commit 47958f8): downloaded, not installed.
# JSON_SCHEMA_SUITE=<dir holding tests/ and remotes/> uses another copy instead.
set -e
cd "$(dirname "$0")/.."
if [ -z "$JSON_SCHEMA_SUITE" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/json-schema-test-suite-1.019"
  JSON_SCHEMA_SUITE="$cache/usr/share/perl5/auto/share/dist/Test-JSON-Schema-Acceptance"
  if [ ! -d "$JSON_SCHEMA_SUITE/tests" ]; then
    mkdir -p "$cache"
    (cd "$cache" && apt-get download libtest-json-schema-acceptance-perl && dpkg-deb -x libtest-json-schema-acceptance-perl_*.deb .)
  fi
fi
export JSON_SCHEMA_SUITE
npx vitest run --project scripts test/scripts/json-schema-suite.test.ts
