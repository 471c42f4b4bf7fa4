#!/usr/bin/env bash
# Runs stateutil's real-Flink test harness (testenv/flink: Flink's MiniCluster
# in-process) for one Flink version, building it first if needed:
#
#   scripts/flink-harness.sh 1.20.3 snapshot --job basic --backend rocksdb \
#       --kind canonical --dir /tmp/out --dump /tmp/out/dump.jsonl
#   scripts/flink-harness.sh 2.2.1 version
#   scripts/flink-harness.sh 1.20.3 build        # build only
#
# Commands: snapshot, uids, restore-dump, unrestorable, spa-dump, spa-rewrite, spa-count, spa-export, spa-import, continue, proto-descriptors, in-flight, table-vectors, version (see
# testenv/flink/README.md). Results go to stdout (the snapshot path, timings);
# the JVM's log to $CACHE/flink/VERSION/COMMAND-*.log. On failure: exit 1 with
# one line "flink-harness: failed: <Flink's root cause>" and the log's tail on
# stderr; exit 2 for usage errors.
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR      where logs and temp files go (default: <repo>/.cache)
#   STATEUTIL_FLINK_JAVA     java binary (default: a Java 17 if found, else 11..21)
#   STATEUTIL_FLINK_XMX      JVM heap (default 768m)
#   STATEUTIL_FLINK_MANAGED  Flink managed (RocksDB) memory (default 256m)
#   STATEUTIL_FLINK_TIMEOUT  seconds to wait for records, snapshots, restores (default 600)
#   STATEUTIL_FLINK_JAVA_OPTS more JVM options (make test: -XX:TieredStopAtLevel=1)
#   STATEUTIL_FLINK_CONF     more Flink settings, "key=value;key=value"
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
harness="$root/testenv/flink"
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}

say() { echo "flink-harness.sh: $*" >&2; }
usage() {
	say "usage: flink-harness.sh VERSION build|version|snapshot|uids|restore-dump|unrestorable|spa-dump|spa-rewrite|spa-count|spa-export|spa-import|continue|proto-descriptors|in-flight|table-vectors [ARGS...]"
	exit 2
}
[[ $# -ge 2 ]] || usage
version=$1
cmd=$2
shift 2
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { say "not a Flink version: $version"; exit 2; }

state="$cache/flink/$version"
mkdir -p "$state"

# Which artifact versions this Flink version is built with (versions.tsv).
row=$(awk -v v="$version" '$1 == v { print; exit }' "$harness/versions.tsv")
minor=${version%.*}
dstl=
forst=-
if [[ -n $row ]]; then
	read -r _ major spa extra kafkaconn dstl forst <<<"$row"
	forst=${forst:--}
else
	major=${version%%.*}
	spa=$minor.0
	extra=$version
	# flink-connector-kafka (the kafka job): that of the newest listed version of this minor, else
	# of this major.
	kafkaconn=$(awk -v m="$major" -v n="$minor." '$1 !~ /^#/ && $2 == m { k = $5; if (index($1, n) == 1) km = $5 }
		END { print (km != "" ? km : k) }' "$harness/versions.tsv")
fi
dstl=${dstl:-$version}
# The State Processor API names operators by OperatorIdentifier from 1.17 on, by uid before.
case $minor in
1.15 | 1.16) spalayer=uid ;;
*) spalayer=id ;;
esac
# The sink API with writer state and a committer (the connector jobs): StatefulSink and
# TwoPhaseCommittingSink in 1.18, SupportsWriterState and SupportsCommitter from 1.19 on.
case $minor in
1.15 | 1.16 | 1.17) sinklayer=none ;;
1.18) sinklayer=twophase ;;
*) sinklayer=v2 ;;
esac
[[ $major == 1 || $major == 2 ]] || { say "Flink $version: only 1.x and 2.x are supported"; exit 2; }

case $cmd in
spa-dump | spa-rewrite | spa-export | spa-import)
	if [[ $spa == - ]]; then
		say "Flink $version: no flink-state-processor-api is published for $minor; $cmd is not available"
		exit 2
	fi
	if [[ $spa != "$version" ]]; then
		say "note: flink-state-processor-api is published for $spa, not $version; running the $spa State Processor API on the $version runtime"
	fi
	;;
esac
if [[ $major == 2 && " $* " == *" --job scala "* ]]; then
	say "Flink $version: the scala job needs Flink 1.x (flink-scala); Flink 2 has no Scala API"
	exit 2
fi
if [[ $forst == - && " $* " == *" --backend forst "* ]]; then
	say "Flink $version: no flink-statebackend-forst is built in for it (versions.tsv); --backend forst is not available"
	exit 2
fi
if [[ $dstl == - && " $* " == *" --changelog "* ]]; then
	say "Flink $version: Maven Central has no usable flink-dstl-dfs for $minor (the changelog backend's storage); --changelog is not available"
	exit 2
fi

pick_java() {
	if [[ -n ${STATEUTIL_FLINK_JAVA:-} ]]; then
		echo "$STATEUTIL_FLINK_JAVA"
		return
	fi
	local c v
	for c in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/temurin-17-*/bin/java ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)"; do
		[[ -x $c ]] || continue
		v=$("$c" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
		if [[ $v =~ ^[0-9]+$ ]] && ((v >= 11 && v <= 21)); then
			echo "$c"
			return
		fi
	done
	say "no Java 11..21 found (set STATEUTIL_FLINK_JAVA)"
	exit 1
}
java=$(pick_java)
javahome=$(dirname "$(dirname "$(readlink -f "$java")")")
command -v mvn >/dev/null || { say "mvn not found (Maven 3 builds the harness)"; exit 1; }

# Build when sources changed or the cached jars are gone; ~/.m2 holds the jars,
# target/VERSION/classpath.txt lists them. An unchanged harness costs no Maven run.
out="$harness/target/$version"
cpfile="$out/classpath.txt"
stamp="$out/.built"
needs_build() {
	[[ -f $stamp && -f $cpfile ]] || return 0
	[[ -n $(find "$harness/pom.xml" "$harness/versions.tsv" "$harness/src" -newer "$stamp" -print -quit) ]] && return 0
	local jar
	while IFS= read -r -d: jar || [[ -n $jar ]]; do
		[[ -f $jar ]] || return 0
	done <"$cpfile"
	return 1
}
build() {
	local t0=$SECONDS log="$state/build.log"
	say "building the harness for Flink $version (spa $spa, avro/table $extra, kafka $kafkaconn, dstl $dstl, forst $forst; mvn -q -B compile; a first build downloads ~250 MB into ~/.m2)"
	local args=(-q -B -Dstyle.color=never -f "$harness/pom.xml" "-Dflink.version=$version" "-Dflink.major=$major"
		"-Dspa.version=${spa/#-/$minor.0}" "-Dextra.version=$extra" "-Ddstl.version=$dstl" "-Dspa.layer=$spalayer" "-Dsink.layer=$sinklayer" "-Dkafka.connector.version=$kafkaconn" "-Dforst.version=$forst" compile)
	# Offline first so a warm ~/.m2 needs no network; online if it lacks something.
	rm -f "$stamp"
	if ! JAVA_HOME=$javahome mvn -o "${args[@]}" >"$log" 2>&1; then
		if ! JAVA_HOME=$javahome mvn "${args[@]}" >"$log" 2>&1; then
			{ grep -E '^\[ERROR\].*(\.java|resolve|Could not)' "$log" || tail -n 40 "$log"; } | head -20 >&2
			say "harness build for Flink $version failed; full log: $log"
			exit 1
		fi
	fi
	touch "$stamp"
	say "built in $((SECONDS - t0))s"
}
# One build at a time per version (parallel test processes share target/).
exec 9>"$state/.build.lock"
flock 9
if needs_build; then
	build
fi
flock -u 9
[[ $cmd == build ]] && exit 0

opens=()
for p in java.lang java.lang.reflect java.lang.invoke java.util java.util.concurrent java.util.concurrent.atomic \
	java.io java.nio java.net java.text java.time java.math java.security sun.nio.ch sun.nio.cs sun.security.util \
	sun.net.util sun.util.calendar jdk.internal.misc; do
	opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
opens+=("--add-opens=java.sql/java.sql=ALL-UNNAMED" "--add-exports=java.base/sun.net.util=ALL-UNNAMED")

stamp_now=$(date +%Y%m%d-%H%M%S)
log="$state/$cmd-$stamp_now-$$.log"
tmp="$state/tmp/$$"
rm -rf "$tmp"
mkdir -p "$tmp"
# Keep the 40 newest logs per command.
{ ls -1t "$state/$cmd"-*.log 2>/dev/null || true; } | tail -n +40 | xargs -r rm -f
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

set +e
"$java" "-Xmx${STATEUTIL_FLINK_XMX:-768m}" -XX:+UseParallelGC -XX:ParallelGCThreads=2 ${STATEUTIL_FLINK_JAVA_OPTS:-} "${opens[@]}" \
	"-Djava.io.tmpdir=$tmp" "-Dstateutil.tmp=$tmp" "-Dstateutil.managed=${STATEUTIL_FLINK_MANAGED:-256m}" \
	"-Dstateutil.conf=${STATEUTIL_FLINK_CONF:-}" -Dlog4j2.configurationFile=classpath:log4j2.properties \
	-cp "$out/classes:$(cat "$cpfile")" stateutil.flink.Harness "$cmd" "$@" 2>"$log" </dev/null
rc=$?
set -e
# The harness's own summary lines (timings, notes) are worth seeing every time.
grep -E '^flink-harness: ' "$log" | grep -v '^flink-harness: failed' >&2 || true
if ((rc != 0)); then
	if ((rc == 2)); then
		grep -E '^flink-harness: ' "$log" >&2 || tail -n 20 "$log" >&2
		exit 2
	fi
	say "Flink $version $cmd failed (exit $rc); log: $log; its last lines:"
	tail -n 30 "$log" | grep -v '^flink-harness: ' >&2 || true
	grep -E '^flink-harness: failed' "$log" | tail -1 >&2 || say "the JVM died without a message (see the log)"
	exit 1
fi
