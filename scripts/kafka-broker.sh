#!/usr/bin/env bash
# Runs a command with a fresh single-node Kafka broker (KRaft: broker and
# controller in one JVM, testenv/kafka) listening on 127.0.0.1 only, then
# stops the broker and removes its data:
#
#   scripts/kafka-broker.sh scripts/flink-harness.sh 2.3.0 snapshot --job kafka \
#       --backend hashmap --kind canonical --dir /tmp/k --dump /tmp/k/dump.jsonl
#
# The command sees the broker's address in STATEUTIL_KAFKA_BOOTSTRAP; its exit
# code is this script's. The first run resolves Kafka's jars into ~/.m2
# (mvn dependency:build-classpath, about 40 MB); the broker's log goes to
# $CACHE/kafka/broker-*.log.
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR   where the broker's data and log go (default: <repo>/.cache)
#   STATEUTIL_KAFKA_JAVA  java binary (default: a Java 17, Kafka 4's minimum for brokers)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
module="$root/testenv/kafka"
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/kafka"

say() { echo "kafka-broker.sh: $*" >&2; }
[[ $# -ge 1 ]] || { say "usage: kafka-broker.sh COMMAND [ARGS...]"; exit 2; }

java=${STATEUTIL_KAFKA_JAVA:-}
if [[ -z $java ]]; then
	for c in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/temurin-17-*/bin/java "$(command -v java || true)"; do
		[[ -x $c ]] && { java=$c; break; }
	done
fi
[[ -n $java ]] || { say "no java found (set STATEUTIL_KAFKA_JAVA)"; exit 1; }
command -v mvn >/dev/null || { say "mvn not found (Maven resolves the broker's jars)"; exit 1; }
mkdir -p "$state"

# The broker's classpath, resolved once per pom change (offline first: a warm ~/.m2 needs no network).
cpfile="$state/classpath.txt"
if [[ ! -s $cpfile || $module/pom.xml -nt $cpfile ]] || ! tr ':' '\n' <"$cpfile" | xargs -r ls >/dev/null 2>&1; then
	say "resolving the broker's jars (testenv/kafka)"
	args=(-q -B -Dstyle.color=never -f "$module/pom.xml" dependency:build-classpath "-Dmdep.outputFile=$cpfile")
	if ! mvn -o "${args[@]}" >"$state/resolve.log" 2>&1 && ! mvn "${args[@]}" >"$state/resolve.log" 2>&1; then
		tail -n 20 "$state/resolve.log" >&2
		say "resolving the broker's jars failed; log: $state/resolve.log"
		exit 1
	fi
fi
cp=$(cat "$cpfile")

# Two free loopback ports: the client listener and the controller's.
read -r port cport < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')

run="$state/run.$$"
rm -rf "$run"
mkdir -p "$run/data"
log="$state/broker-$(date +%Y%m%d-%H%M%S)-$$.log"
# Keep the 20 newest broker logs.
{ ls -1t "$state"/broker-*.log 2>/dev/null || true; } | tail -n +20 | xargs -r rm -f
cat >"$run/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$run/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS

kjava=("$java" -Xmx512m -XX:+UseParallelGC -XX:ParallelGCThreads=1 -cp "$cp")
"${kjava[@]}" kafka.tools.StorageTool format -t "$("${kjava[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null)" \
	-c "$run/server.properties" >"$log" 2>&1 || { tail -n 20 "$log" >&2; say "formatting the broker's storage failed"; exit 1; }
"${kjava[@]}" kafka.Kafka "$run/server.properties" >>"$log" 2>&1 &
broker=$!
stop() {
	kill "$broker" 2>/dev/null && wait "$broker" 2>/dev/null || true
	rm -rf "$run"
}
trap stop EXIT

# Ready when the client port accepts connections (the broker binds it once the controller is up).
for ((i = 0; i < 120; i++)); do
	kill -0 "$broker" 2>/dev/null || { tail -n 20 "$log" >&2; say "the broker died on start; log: $log"; exit 1; }
	python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null && break
	sleep 0.5
done
((i < 120)) || { say "the broker did not listen on 127.0.0.1:$port within 60s; log: $log"; exit 1; }
say "broker on 127.0.0.1:$port (log: $log)"

set +e
STATEUTIL_KAFKA_BOOTSTRAP=127.0.0.1:$port "$@"
rc=$?
set -e
exit $rc
