#!/usr/bin/env bash
# make dist: one self-contained stateutil binary for linux/amd64, with its
# SHA-256 beside it:
#
#   dist/stateutil-linux-amd64
#   dist/stateutil-linux-amd64.sha256     (sha256sum -c reads it)
#
# RocksDB and the compression libraries it was built with (Debian's
# librocksdb.a, libsnappy.a, liblz4.a, libzstd.a, libbz2.a, libz.a) are
# linked in, and libstdc++ and libgcc too, so the binary needs nothing
# beyond glibc (libc, libm) at run time: no librocksdb, of any version.
#
# Reproducible: the same commit and toolchain give the same bytes, wherever
# and whenever it is built. -trimpath, no build id, no VCS stamp, symbols
# and debug info stripped; the one time stamped in, shown by `stateutil
# version`, is $SOURCE_DATE_EPOCH, by default the commit's own time.
#
# Generic over cgo: a cgo dependency whose native library must be linked
# in adds its build tags and static libraries below (or, for a one-off,
# DIST_TAGS and DIST_EXTLDFLAGS in the environment). A module that bundles
# its own static library needs nothing here; its dynamic needs beyond
# glibc and libstdc++ are what dist_test.go refuses.
#
# Usage: scripts/dist.sh [--out DIR]   (default DIR: dist)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=dist
if [[ ${1:-} == --out ]]; then
	out=${2:?--out needs a directory}
elif [[ $# -gt 0 ]]; then
	echo "usage: scripts/dist.sh [--out DIR]" >&2
	exit 2
fi
name=stateutil-linux-amd64

# grocksdb_no_link: grocksdb's own #cgo link flags are left out, so that
# the external linker's flags below alone say how RocksDB is linked
# (internal/rocksdb's shim honours the tag too). They are given to the link
# alone (-extldflags), not through CGO_LDFLAGS, which every cgo package's
# build (net's among them) records: the packages compile as make test's
# -trimpath builds do, and the build cache serves both.
tags=(grocksdb_no_link ${DIST_TAGS:-})
static_libs=(rocksdb snappy lz4 zstd bz2 z stdc++)
extldflags="-Wl,-Bstatic ${static_libs[*]/#/-l} -Wl,-Bdynamic -static-libgcc -lm -ldl -pthread ${DIST_EXTLDFLAGS:-}"

commit=$(git rev-parse HEAD)
version=$(git describe --tags --always --dirty --abbrev=12)
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}
built=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
pkg=github.com/stateutil/stateutil/cmd/internal/buildinfo
ldflags="-s -w -buildid= -X $pkg.buildVersion=$version -X $pkg.buildCommit=$commit -X $pkg.buildTime=$built -X $pkg.buildRocksDB=static -extldflags '$extldflags'"

mkdir -p "$out"
tmp=$(mktemp "$out/.$name.XXXXXX")
trap 'rm -f "$tmp"' EXIT
CGO_ENABLED=1 GOOS=linux GOARCH=amd64 GOFLAGS=-mod=readonly \
	go build -trimpath -buildvcs=false -tags "${tags[*]}" -ldflags "$ldflags" -o "$tmp" .
chmod 0755 "$tmp"
mv -f "$tmp" "$out/$name"
trap - EXIT
(cd "$out" && sha256sum "$name" >"$name.sha256.tmp" && mv -f "$name.sha256.tmp" "$name.sha256")
echo "dist: $out/$name ($version, $built): sha256 $(cut -d' ' -f1 "$out/$name.sha256")"
