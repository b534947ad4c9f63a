#!/bin/sh
# Refreshes the vendored JSON Schema Test Suite in test/fixtures/json-schema-suite/ (the required
# files of the five drafts json_schema_validate claims; see the README there), then runs
# test/scripts/json-schema-suite.test.ts on it. A maintainer's tool, never run by CI: CI runs the
# test on the committed copy and fetches nothing.
# The suite's npm package (@json-schema-org/tests) is a git dependency these machines cannot fetch,
# so the suite comes from Debian's libtest-json-schema-acceptance-perl, which ships it whole
# (drafts 3 to 2020-12, optional/, remotes/): downloaded, not installed.
# JSON_SCHEMA_SUITE=<dir holding tests/> copies from another checkout instead (a newer suite commit:
# then update the commit in the fixture's README and the known list).
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
dest=test/fixtures/json-schema-suite/tests
for draft in draft4 draft6 draft7 draft2019-09 draft2020-12; do
  rm -rf "$dest/$draft"
  mkdir -p "$dest/$draft"
  # Required cases only: the draft's own files, not optional/ (the test reads no more).
  find "$JSON_SCHEMA_SUITE/tests/$draft" -maxdepth 1 -type f -name '*.json' -exec cp {} "$dest/$draft/" \;
done
[ -f "$JSON_SCHEMA_SUITE/submodule_status" ] && echo "suite: $(head -1 "$JSON_SCHEMA_SUITE/submodule_status")"
unset JSON_SCHEMA_SUITE
npx vitest run --project scripts test/scripts/json-schema-suite.test.ts
