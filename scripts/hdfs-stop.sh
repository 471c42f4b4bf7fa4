#!/usr/bin/env bash
# Stops the harness started by scripts/hdfs-start.sh and removes its state.
# Safe to run when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/hdfs"
pidfile="$state/harness.pid"

say() { echo "hdfs-stop: $*" >&2; }

# The NodeManager first: it would retry a ResourceManager that is gone.
nmpid=$(cat "$state/nodemanager.pid" 2>/dev/null || true)
if [[ -n $nmpid ]] && kill -0 "$nmpid" 2>/dev/null &&
	tr '\0' ' ' <"/proc/$nmpid/cmdline" 2>/dev/null | grep -q 'stateutil.testenv.YarnHarness'; then
	kill -TERM "$nmpid"
	for _ in $(seq 60); do
		kill -0 "$nmpid" 2>/dev/null || break
		sleep 0.5
	done
	kill -KILL "$nmpid" 2>/dev/null || true
	say "stopped the nodemanager (pid $nmpid)"
fi
rm -f "$state/nodemanager.pid" "$state/nm-addr"
rm -rf "$state/yarn-conf"

pid=$(cat "$pidfile" 2>/dev/null || true)
if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null &&
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'stateutil.testenv.HdfsHarness'; then
	kill -TERM "$pid"
	for _ in $(seq 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "pid $pid ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	say "stopped (pid $pid)"
else
	say "not running"
fi
rm -f "$cache/hdfs.env" "$pidfile" "$state/addr"
rm -rf "$state/data"
