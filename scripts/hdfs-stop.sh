#!/usr/bin/env bash
# Stops the harnesses started by scripts/hdfs-start.sh (the open one, its
# NodeManager, the one of --secure with its YARN and the one of --ha) and removes their
# state.
# Safe to run when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/hdfs"
secure="$cache/hdfs-secure"
ha="$cache/hdfs-ha"
dn="$cache/hdfs-dn"

say() { echo "hdfs-stop: $*" >&2; }

# stop_jvm PIDFILE CLASS NAME: TERM the JVM whose pid PIDFILE holds if it
# runs CLASS (only ever what the start script started), KILL it after 30s.
stop_jvm() {
	local pid
	pid=$(cat "$1" 2>/dev/null || true)
	if [[ -z $pid ]] || ! kill -0 "$pid" 2>/dev/null ||
		! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "stateutil.testenv.$2"; then
		say "$3 not running"
		return 0
	fi
	kill -TERM "$pid"
	for _ in $(seq 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "$3 (pid $pid) ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	say "stopped $3 (pid $pid)"
}

# The four clusters side by side (a JVM takes seconds to stop); within
# one, the NodeManager first: it would retry a ResourceManager that is gone.
open_cluster() {
	stop_jvm "$state/nodemanager.pid" YarnHarness "the nodemanager"
	rm -f "$state/nodemanager.pid" "$state/nm-addr"
	rm -rf "$state/yarn-conf"

	stop_jvm "$state/harness.pid" HdfsHarness "the HDFS harness"
	rm -f "$cache/hdfs.env" "$state/harness.pid" "$state/addr"
	rm -rf "$state/data"
}

secure_cluster() {
	stop_jvm "$secure/nodemanager.pid" YarnHarness "the kerberized nodemanager"
	stop_jvm "$secure/resourcemanager.pid" YarnHarness "the kerberized resourcemanager"
	rm -f "$secure/nodemanager.pid" "$secure/nm-addr" "$secure/resourcemanager.pid" "$secure/rm-addr"
	rm -rf "$secure/yarn-conf"

	stop_jvm "$secure/harness.pid" HdfsHarness "the kerberized HDFS harness"
	rm -f "$cache/hdfs-secure.env" "$secure/harness.pid" "$secure/addr"
	rm -rf "$secure/data" "$secure/krb"
}

ha_cluster() {
	stop_jvm "$ha/harness.pid" HdfsHarness "the HA HDFS harness"
	rm -f "$cache/hdfs-ha.env" "$ha/harness.pid" "$ha/addr" "$ha/failover"
	rm -rf "$ha/data" "$ha/conf"
}

dn_cluster() {
	stop_jvm "$dn/harness.pid" HdfsHarness "the 3-datanode HDFS harness"
	rm -f "$cache/hdfs-dn.env" "$dn/harness.pid" "$dn/addr"
	rm -rf "$dn/data"
}

pids=()
for cluster in open_cluster secure_cluster ha_cluster dn_cluster; do
	"$cluster" &
	pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
	wait "$pid" || rc=1
done
exit $rc
