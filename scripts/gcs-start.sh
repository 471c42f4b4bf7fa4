#!/usr/bin/env bash
# Starts a Google Cloud Storage emulator on 127.0.0.1 for the tests
# (fake-gcs-server, a tool of stateutil's module, pinned in go.mod, built
# into the cache dir)
# and writes .cache/gcs.env:
#
#   scripts/gcs-start.sh && . .cache/gcs.env && go test ./storage/gcs/; scripts/gcs-stop.sh
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR           where state goes (default: <repo>/.cache)
#   STATEUTIL_GCS_PORT            fixed port (default: a free one); a test that
#                                 restarts the server passes the port it had
#   STATEUTIL_GCS_START_TIMEOUT   seconds to wait for the server (default 60)
#
# The server keeps objects in memory: a restart starts empty, with the
# bucket created anew. If a server started from this cache dir still runs,
# it is reused.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/gcs"
envfile="$cache/gcs.env"
pidfile="$state/server.pid"
log="$state/server.log"
version=$(cd "$root" && go list -m -f '{{.Version}}' github.com/fsouza/fake-gcs-server)
server="$state/fake-gcs-server-$version/fake-gcs-server"
bucket=stateutil-test
timeout=${STATEUTIL_GCS_START_TIMEOUT:-60}
t0=$SECONDS

name=gcs-start
mark="$state/fake-gcs-server-"
. "$root/scripts/server-lib.sh"

mkdir -p "$state"
reuse "$envfile"

if [[ ! -x $server ]]; then
	say "building fake-gcs-server $version into $(dirname "$server")"
	# A tool of the module (go.mod's tool directive), never linked into
	# stateutil: it builds on the versions stateutil itself compiles, so that
	# the Cloud Storage client, gRPC and the Google API packages it shares
	# with storage/gcs compile once for both.
	(cd "$root" && nice go build -o "$server" github.com/fsouza/fake-gcs-server) >"$state/install.log" 2>&1 ||
		{ cat "$state/install.log" >&2; die "building fake-gcs-server failed"; }
fi

port=${STATEUTIL_GCS_PORT:-$(free_port)}
endpoint="http://127.0.0.1:$port"
rm -f "$envfile"
: >"$log"
# setsid: a Ctrl-C aimed at the caller must not half-stop the server;
# gcs-stop.sh stops it.
setsid "$server" -scheme http -host 127.0.0.1 -port "$port" -backend memory \
	-external-url "$endpoint" -public-host "127.0.0.1:$port" -log-level warn </dev/null >>"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

deadline=$((SECONDS + timeout))
until curl -sf -o /dev/null "$endpoint/storage/v1/b?project=stateutil"; do
	kill -0 "$pid" 2>/dev/null || die "server (pid $pid) exited before it answered"
	if ((SECONDS >= deadline)); then
		kill -TERM "$pid" 2>/dev/null || true
		die "server not up after ${timeout}s; stopped it"
	fi
	sleep 0.2
done
curl -sf -o /dev/null -X POST -H 'Content-Type: application/json' -d "{\"name\":\"$bucket\"}" \
	"$endpoint/storage/v1/b?project=stateutil" || die "creating bucket $bucket failed"

cat >"$envfile.tmp" <<ENV
# Written by scripts/gcs-start.sh; removed by scripts/gcs-stop.sh.
export STATEUTIL_TEST_GCS=gs://$bucket/t
export STATEUTIL_TEST_GCS_PORT=$port
export STATEUTIL_TEST_GCS_PID=$pid
export STATEUTIL_TEST_GCS_SERVER=$server
export STORAGE_EMULATOR_HOST=$endpoint
ENV
mv "$envfile.tmp" "$envfile"
say "fake-gcs-server $version at $endpoint (pid $pid), bucket $bucket, up in $((SECONDS - t0))s; env in $envfile"
