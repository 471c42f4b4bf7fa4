#!/usr/bin/env bash
# Starts an S3-compatible server on 127.0.0.1 for the tests (moto's server
# mode, from PyPI, pinned, in a venv under the cache dir) and writes
# .cache/s3.env for the Go tests:
#
#   scripts/s3-start.sh && . .cache/s3.env && go test ./storage/s3/; scripts/s3-stop.sh
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR          where state goes (default: <repo>/.cache)
#   STATEUTIL_S3_PORT            fixed port (default: a free one); a test that
#                                restarts the server passes the port it had
#   STATEUTIL_S3_START_TIMEOUT   seconds to wait for the server (default 60)
#
# moto keeps objects in memory (large ones spill to temporary files): a
# restart starts empty, with the bucket created anew. If a server started
# from this cache dir still runs, it is reused.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/s3"
envfile="$cache/s3.env"
pidfile="$state/server.pid"
log="$state/server.log"
moto_version=5.2.5
venv="$state/moto-$moto_version"
bucket=stateutil-test
timeout=${STATEUTIL_S3_START_TIMEOUT:-60}
t0=$SECONDS

say() { echo "s3-start: $*" >&2; }
die() {
	say "$*"
	if [[ -f $log ]]; then
		say "last lines of $log:"
		tail -n 40 "$log" >&2
	fi
	exit 1
}

# is_server PID: a live moto server of ours (guards against reused pids).
is_server() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "$state/server.py"
}

mkdir -p "$state"
if [[ -f $pidfile && -f $envfile ]] && is_server "$(cat "$pidfile")"; then
	say "already running (pid $(cat "$pidfile")); reusing $envfile"
	exit 0
fi

if [[ ! -x $venv/bin/python || ! -f $venv/.installed ]]; then
	say "installing moto[server]==$moto_version into $venv"
	rm -rf "$venv"
	python3 -m venv "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
	"$venv/bin/pip" install -q --disable-pip-version-check "moto[server]==$moto_version" >"$state/install.log" 2>&1 ||
		{ cat "$state/install.log" >&2; die "pip install moto failed"; }
	touch "$venv/.installed"
fi

# moto checks a write's precondition (If-None-Match, If-Match) and stores
# the object in two steps, with no lock between them; S3 does both at once.
# Serialising the conditional writes gives the harness S3's guarantee,
# which the claim tests rely on. Everything else runs as moto runs it.
cat >"$state/server.py" <<'PY'
import logging
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app

logging.getLogger("werkzeug").setLevel(logging.WARNING)
app = DomainDispatcherApplication(create_backend_app)
conditional = threading.Lock()


def serve(environ, start_response):
    if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE") and (
        environ.get("HTTP_IF_NONE_MATCH") or environ.get("HTTP_IF_MATCH")
    ):
        with conditional:
            return list(app(environ, start_response))
    return app(environ, start_response)


host, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"serving on {host}:{port}", flush=True)
open(ready, "w").close()
run_simple(host, port, serve, threaded=True, request_handler=MotoRequestHandler)
PY

port=${STATEUTIL_S3_PORT:-$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
endpoint="http://127.0.0.1:$port"
rm -f "$envfile" "$state/ready"
: >"$log"
# moto uses botocore inside: the caller's AWS settings (an empty
# AWS_PROFILE, a config file) are not the server's business.
for v in $(compgen -e); do
	if [[ $v == AWS_* ]]; then unset "$v"; fi
done
# setsid: a Ctrl-C aimed at the caller must not half-stop the server;
# s3-stop.sh stops it.
setsid "$venv/bin/python" "$state/server.py" 127.0.0.1 "$port" "$state/ready" </dev/null >>"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

deadline=$((SECONDS + timeout))
until [[ -f $state/ready ]] && curl -sf -o /dev/null "$endpoint/moto-api/"; do
	kill -0 "$pid" 2>/dev/null || die "server (pid $pid) exited before it answered"
	if ((SECONDS >= deadline)); then
		kill -TERM "$pid" 2>/dev/null || true
		die "server not up after ${timeout}s; stopped it"
	fi
	sleep 0.2
done
# moto does not check signatures: a plain PUT creates the bucket.
curl -sf -o /dev/null -X PUT "$endpoint/$bucket" || die "creating bucket $bucket failed"

cat >"$envfile.tmp" <<ENV
# Written by scripts/s3-start.sh; removed by scripts/s3-stop.sh.
export STATEUTIL_TEST_S3=s3://$bucket/t
export STATEUTIL_TEST_S3_PORT=$port
export STATEUTIL_TEST_S3_PID=$pid
export STATEUTIL_TEST_S3_SERVER="$venv/bin/python $state/server.py"
export AWS_ENDPOINT_URL=$endpoint
export AWS_ACCESS_KEY_ID=stateutil-test
export AWS_SECRET_ACCESS_KEY=stateutil-test-secret
export AWS_REGION=us-east-1
export AWS_EC2_METADATA_DISABLED=true
ENV
mv "$envfile.tmp" "$envfile"
say "moto $moto_version at $endpoint (pid $pid), bucket $bucket, up in $((SECONDS - t0))s; env in $envfile"
