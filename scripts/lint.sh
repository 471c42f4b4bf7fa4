#!/usr/bin/env bash
# make lint: gofmt, go vet, staticcheck, and deadcode (nothing in the product
# unreachable from main; packages that only tests import are test support and
# are checked from the tests instead). The two tools are pinned and installed
# into the cache on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}
staticcheck_version=v0.8.2 # 2026.2.2
tools_version=v0.52.0      # golang.org/x/tools, for deadcode
bin="$cache/tools"

install() { # NAME MODULE@VERSION STAMP
  if [ ! -x "$bin/$1" ] || [ "$(cat "$bin/$1.version" 2>/dev/null)" != "$3" ]; then
    GOBIN="$bin" go install "$2"
    echo "$3" >"$bin/$1.version"
  fi
}
install staticcheck "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version" "$staticcheck_version"
install deadcode "golang.org/x/tools/cmd/deadcode@$tools_version" "$tools_version"

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed:"
  echo "$unformatted"
  exit 1
fi
go vet ./...
"$bin/staticcheck" ./...

# deadcode from main: reported only in packages the binary links, since a
# package that only tests import (snaptest, storagetest, flinkharness, ...)
# is test support, reached from the tests in the second run.
linked=$(go list -deps -f '{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}' . | sed "s|^$PWD/\{0,1\}||")
# Test hooks: cgo functions only tests call, since _test.go files cannot use
# cgo.
hooks='internal/rocksdb/native.go:[0-9:]*: unreachable func: fileCRC32C$'
unused=$("$bin/deadcode" ./... | grep -Ev "$hooks" | awk -v linked="$linked" '
  BEGIN {n = split(linked, d, "\n"); for (i = 1; i <= n; i++) in_bin[d[i]] = 1}
  {f = $1; sub(/:.*/, "", f); dir = f; if (!sub(/\/[^\/]*$/, "", dir)) dir = ""; if (dir in in_bin) print}')
unused_in_tests=$("$bin/deadcode" -test ./...)
if [ -n "$unused$unused_in_tests" ]; then
  echo "deadcode: unreachable code"
  printf '%s\n' "$unused" "$unused_in_tests" | sed '/^$/d'
  exit 1
fi
