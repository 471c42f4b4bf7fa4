#!/usr/bin/env bash
# Stops the server started by scripts/s3-start.sh (only that pid) and
# removes .cache/s3.env; the venv stays for the next start. Safe to run
# when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/s3"
pidfile="$state/server.pid"

say() { echo "s3-stop: $*" >&2; }

pid=$(cat "$pidfile" 2>/dev/null || true)
if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$state/server.py"; then
	kill -TERM "$pid"
	for _ in $(seq 40); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "pid $pid ignored SIGTERM for 10s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	say "stopped (pid $pid)"
else
	say "not running"
fi
rm -f "$cache/s3.env" "$pidfile" "$state/ready"
