#!/usr/bin/env bash
# Starts the HDFS test harness (testenv/hdfs: one NameNode + one DataNode, a
# YARN ResourceManager, and a NodeManager in a JVM of its own, all on
# 127.0.0.1) in the background and writes .cache/hdfs.env for the Go tests:
#
#   scripts/hdfs-start.sh && . .cache/hdfs.env && go test ./storage/...; scripts/hdfs-stop.sh
#
# With --secure it starts the kerberized cluster instead (a MiniKdc beside a
# NameNode and DataNode with Kerberos, SASL on RPC and on data transfer), in
# a JVM of its own under .cache/hdfs-secure, and beside it a kerberized YARN
# (a ResourceManager with SPNEGO on its web endpoint, and a NodeManager,
# each in a JVM of its own; not with STATEUTIL_YARN=0), and writes
# .cache/hdfs-secure.env: HADOOP_CONF_DIR, KRB5_CONFIG, KRB5CCNAME (a cache
# holding a valid ticket of alice@EXAMPLE.COM) and STATEUTIL_TEST_HDFS, for a
# shell, and the same under STATEUTIL_TEST_SECURE_* names for the tests:
#
#   scripts/hdfs-start.sh --secure && . .cache/hdfs-secure.env && stateutil inspect hdfs:///path
#
# With --ha it starts the highly available cluster instead (two NameNodes of
# one nameservice sharing their edits, the first active, one DataNode, no
# YARN), in a JVM of its own under .cache/hdfs-ha, and writes
# .cache/hdfs-ha.env: HADOOP_CONF_DIR (dfs.nameservices and the NameNodes'
# addresses), STATEUTIL_TEST_HDFS (hdfs://NAMESERVICE) and
# STATEUTIL_TEST_HA_ADMIN (a command that makes the other NameNode active),
# for a shell, and the same under STATEUTIL_TEST_HA_* names for the tests:
#
#   scripts/hdfs-start.sh --ha && . .cache/hdfs-ha.env && stateutil inspect $STATEUTIL_TEST_HDFS/path
#
# With --dn it starts an open cluster of three DataNodes and replication 3
# (no YARN), under .cache/hdfs-dn, for the DataNode fault tests, and writes
# .cache/hdfs-dn.env: STATEUTIL_TEST_HDFS for a shell, and
# STATEUTIL_TEST_DN_HDFS, STATEUTIL_TEST_DN_CONTROL and STATEUTIL_TEST_DN_PID
# for the tests.
#
# All four can run at once; scripts/hdfs-stop.sh stops them all.
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR           where state goes (default: <repo>/.cache)
#   STATEUTIL_HDFS_PORT           fixed NameNode RPC port (default: a free one;
#                                 --secure always takes a free one)
#   STATEUTIL_HDFS_START_TIMEOUT  seconds to wait for the cluster (default 120)
#   STATEUTIL_HDFS_JAVA           java binary (default: a Java 17 if found, else java)
#   STATEUTIL_YARN                0 starts HDFS alone, without YARN (default 1)
#   STATEUTIL_HDFS_PROTECTION     --secure: dfs.data.transfer.protection and
#                                 hadoop.rpc.protection (default privacy)
#
# Exits non-zero, with the tail of the harness log, if the cluster does not
# come up. If a harness started from this tree still runs, it is reused.
set -euo pipefail

secure=0
ha=0
dn=0
case ${1:-} in
--secure) secure=1 ;;
--ha) ha=1 ;;
--dn) dn=1 ;;
"") ;;
*)
	echo "usage: scripts/hdfs-start.sh [--secure | --ha | --dn]" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
harness="$root/testenv/hdfs"
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/hdfs"
envfile="$cache/hdfs.env"
if ((secure)); then
	state="$cache/hdfs-secure"
	envfile="$cache/hdfs-secure.env"
elif ((ha)); then
	state="$cache/hdfs-ha"
	envfile="$cache/hdfs-ha.env"
elif ((dn)); then
	state="$cache/hdfs-dn"
	envfile="$cache/hdfs-dn.env"
fi
pidfile="$state/harness.pid"
log="$state/harness.log"
addrfile="$state/addr"
timeout=${STATEUTIL_HDFS_START_TIMEOUT:-120}
t0=$SECONDS

say() { echo "hdfs-start: $*" >&2; }
die() {
	say "$*"
	if [[ -f $log ]]; then
		say "last lines of $log:"
		tail -n 60 "$log" >&2
	fi
	exit 1
}

# stop PID: TERM, then KILL if it lingers; only ever the pid we started.
stop() {
	kill -TERM "$1" 2>/dev/null || return 0
	for _ in $(seq 40); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.25
	done
	kill -KILL "$1" 2>/dev/null || true
}

# is_harness PID: true if PID is a live harness JVM (guards against reused pids).
is_harness() {
	[[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null &&
		tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q "stateutil.testenv.${2:-HdfsHarness}"
}
yarn=${STATEUTIL_YARN:-1}
((ha == 0 && dn == 0)) || yarn=0
nmpidfile="$state/nodemanager.pid"
rmpidfile="$state/resourcemanager.pid"
rmlog="$state/resourcemanager.log"
rmaddrfile="$state/rm-addr"
nmlog="$state/nodemanager.log"
nmaddrfile="$state/nm-addr"
yarnconf="$state/yarn-conf"

mkdir -p "$state"

if [[ -f $pidfile && -f $envfile ]] && is_harness "$(cat "$pidfile")" &&
	{ [[ $yarn == 0 ]] || is_harness "$(cat "$nmpidfile" 2>/dev/null)" YarnHarness; } &&
	{ [[ $yarn == 0 || $secure == 0 ]] || is_harness "$(cat "$rmpidfile" 2>/dev/null)" YarnHarness; }; then
	say "already running (pid $(cat "$pidfile")); reusing $envfile"
	exit 0
fi

# Hadoop 3.3 does not run on Java 23+ (Subject.getSubject is gone); prefer 17.
pick_java() {
	if [[ -n ${STATEUTIL_HDFS_JAVA:-} ]]; then
		echo "$STATEUTIL_HDFS_JAVA"
		return
	fi
	local c
	for c in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} "$(command -v java || true)" /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/temurin-17-*/bin/java; do
		[[ -x $c ]] || continue
		local v
		v=$("$c" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
		if [[ $v =~ ^[0-9]+$ ]] && ((v >= 11 && v <= 21)); then
			echo "$c"
			return
		fi
	done
	die "no Java 11..21 found for Hadoop 3.3 (set STATEUTIL_HDFS_JAVA)"
}
java=$(pick_java)
javahome=$(dirname "$(dirname "$(readlink -f "$java")")")

# Build when sources changed or the cached jars are gone. Maven's ~/.m2 holds
# the jars; an unchanged harness costs no Maven run at all.
cpfile="$harness/target/classpath.txt"
stamp="$harness/target/.built"
dsjar="$harness/target/lib/hadoop-yarn-applications-distributedshell-3.3.5.jar"
needs_build() {
	[[ -f $stamp && -f $cpfile && -f $dsjar ]] || return 0
	[[ -n $(find "$harness/pom.xml" "$harness/src" -newer "$stamp" -print -quit) ]] && return 0
	local jar
	while IFS= read -r -d: jar || [[ -n $jar ]]; do
		[[ -f $jar ]] || return 0
	done <"$cpfile"
	return 1
}
# One build at a time: the open and the secured cluster may start together.
exec 9>"$cache/.hdfs-build.lock"
flock 9
if needs_build; then
	say "building harness (mvn -q -B compile; first run downloads ~90 MB into ~/.m2)"
	mvnargs=(-q -B -Dstyle.color=never -f "$harness/pom.xml" compile)
	# Offline first so a warm ~/.m2 needs no network; online if it lacks something.
	if ! JAVA_HOME=$javahome mvn -o "${mvnargs[@]}" >"$state/build.log" 2>&1; then
		JAVA_HOME=$javahome mvn "${mvnargs[@]}" >"$state/build.log" 2>&1 ||
			{ cat "$state/build.log" >&2; die "harness build failed"; }
	fi
	# DistributedShell's POM names a parent the repository lacks, so it is no
	# dependency of pom.xml: its jar alone (what it needs at run time is in
	# pom.xml), copied from ~/.m2, fetched there first if need be (from a
	# directory without a POM: in a project Maven insists on the parent).
	m2jar="$HOME/.m2/repository/org/apache/hadoop/hadoop-yarn-applications-distributedshell/3.3.5/$(basename "$dsjar")"
	if [[ ! -f $m2jar ]]; then
		(cd "$state" && JAVA_HOME=$javahome mvn -q -B -Dstyle.color=never dependency:copy \
			-Dartifact=org.apache.hadoop:hadoop-yarn-applications-distributedshell:3.3.5 \
			-Dtransitive=false -DoutputDirectory="$harness/target/lib") >>"$state/build.log" 2>&1 ||
			{ cat "$state/build.log" >&2; die "fetching DistributedShell failed"; }
	fi
	mkdir -p "$(dirname "$dsjar")"
	[[ -f $dsjar ]] || cp "$m2jar" "$dsjar"
	touch "$stamp"
	say "built in $((SECONDS - t0))s"
fi
flock -u 9

# Hadoop reflects into these JDK internals.
opens=()
for p in java.lang java.lang.reflect java.util java.util.concurrent java.nio java.net java.io \
	sun.nio.ch sun.net.dns sun.net.util sun.security.util sun.security.x509; do
	opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done

for f in "$nmpidfile" "$rmpidfile"; do
	if [[ -f $f ]] && is_harness "$(cat "$f")" YarnHarness; then
		stop "$(cat "$f")"
	fi
done
krb="$state/krb"
haconf="$state/conf"
admin="$state/failover"
rm -rf "$state/data" "$addrfile" "$envfile" "$nmaddrfile" "$rmaddrfile" "$yarnconf" "$krb" "$haconf" "$admin" "$state/nm-local" "$state/nm-logs"
: >"$log"
port=${STATEUTIL_HDFS_PORT:-0}
((secure == 0 && ha == 0 && dn == 0)) || port=0
args=(--port "$port" --base-dir "$state/data")
((yarn == 0 || secure)) || args+=(--yarn "$yarnconf")
if ((secure)); then
	level=${STATEUTIL_HDFS_PROTECTION:-privacy}
	mkdir -p "$krb"
	args+=(--secure "$krb" --protection "$level" --rpc-protection "$level")
fi
((ha == 0)) || args+=(--ha "$haconf")
((dn == 0)) || args+=(--datanodes 3)
args+=("$addrfile")
classpath="$harness/target/classes:$(cat "$cpfile"):$dsjar"
# setsid: a Ctrl-C aimed at the caller (make, go test) must not half-kill
# the cluster; hdfs-stop.sh stops it.
setsid "$java" -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${opens[@]}" \
	-cp "$classpath" stateutil.testenv.HdfsHarness "${args[@]}" \
	</dev/null >>"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

deadline=$((SECONDS + timeout))
until [[ -f $addrfile ]]; do
	kill -0 "$pid" 2>/dev/null || die "harness (pid $pid) exited before the cluster came up"
	if ((SECONDS >= deadline)); then
		stop "$pid"
		die "cluster not up after ${timeout}s; stopped it"
	fi
	sleep 0.5
done

# shellcheck disable=SC1090
. <(sed 's/^/export /' "$addrfile")
# The harness only announces itself after a probe write+read; check the RPC
# port from outside too.
if ! timeout 5 bash -c "exec 3<>/dev/tcp/${HDFS_NAMENODE%:*}/${HDFS_NAMENODE##*:}" 2>/dev/null; then
	stop "$pid"
	die "namenode $HDFS_NAMENODE does not accept connections"
fi

# wait_for FILE PID NAME: until FILE appears; gives up (stopping what
# started) when PID exits or the deadline passes.
wait_for() {
	until [[ -f $1 ]]; do
		if ! kill -0 "$2" 2>/dev/null || ((SECONDS >= deadline)); then
			local why="exited"
			kill -0 "$2" 2>/dev/null && why="not up after ${timeout}s"
			for f in "$nmpidfile" "$rmpidfile"; do
				[[ -f $f ]] && is_harness "$(cat "$f")" YarnHarness && stop "$(cat "$f")"
			done
			stop "$pid"
			die "$3 (pid $2) $why; stopped the cluster"
		fi
		sleep 0.5
	done
}

# yarn_jvm LOG PIDFILE HEAP CLASSPATH [JVM-OPTION...] -- ROLE [ARG...]: starts
# a YarnHarness role detached in a JVM of its own, logging to LOG; its pid
# goes to PIDFILE and to $started. The client's login variables are left
# out: a daemon logs in from its own keytab or not at all.
yarn_jvm() {
	local log=$1 pidfile=$2 heap=$3 cp=$4
	shift 4
	local jvmopts=()
	while [[ $1 != -- ]]; do
		jvmopts+=("$1")
		shift
	done
	shift
	: >"$log"
	env -u KRB5CCNAME -u STATEUTIL_KEYTAB -u HADOOP_TOKEN_FILE_LOCATION \
		setsid "$java" -Xmx"$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${opens[@]}" "${jvmopts[@]}" \
		-cp "$cp" stateutil.testenv.YarnHarness "$@" </dev/null >>"$log" 2>&1 &
	started=$!
	echo "$started" >"$pidfile"
}

yarnenv=
if [[ $yarn != 0 ]] && ((secure)); then
	# The kerberized ResourceManager in a JVM of its own: its Kerberos login
	# replaces its JVM's login user. The NodeManager registers before it
	# announces itself.
	yarn_jvm "$rmlog" "$rmpidfile" 384m "$classpath" -Djava.security.krb5.conf="$krb/krb5.conf" -- \
		resourcemanager "$krb/yarn-server" "$yarnconf" "$rmaddrfile"
	rmpid=$started
	log=$rmlog wait_for "$rmaddrfile" "$rmpid" "resourcemanager"
	# shellcheck disable=SC1090
	. <(sed 's/^/export /' "$rmaddrfile")
	yarn_jvm "$nmlog" "$nmpidfile" 256m "$yarnconf:$classpath" -Djava.security.krb5.conf="$krb/krb5.conf" -- \
		nodemanager "$yarnconf" "$nmaddrfile" "$krb/yarn-server"
	nmpid=$started
	log=$nmlog wait_for "$nmaddrfile" "$nmpid" "nodemanager"
	yarnenv="export STATEUTIL_TEST_SECURE_YARN=http://$YARN_RM_WEB
export STATEUTIL_TEST_SECURE_YARN_AM_CLASSPATH=$yarnconf:$classpath
export STATEUTIL_TEST_SECURE_YARN_NM_LOCAL=$state/nm-local"
elif [[ $yarn != 0 ]]; then
	# The NodeManager in a JVM of its own: in the harness's JVM its web app
	# would take the ResourceManager's REST calls.
	yarn_jvm "$nmlog" "$nmpidfile" 256m "$yarnconf:$classpath" -- nodemanager "$yarnconf" "$nmaddrfile"
	nmpid=$started
	# Registered once the ResourceManager lists the node as RUNNING.
	until curl -fsS "http://$YARN_RM_WEB/ws/v1/cluster/nodes" 2>/dev/null | grep -q RUNNING; do
		kill -0 "$nmpid" 2>/dev/null || { log=$nmlog; stop "$pid"; die "nodemanager (pid $nmpid) exited before registering"; }
		if ((SECONDS >= deadline)); then
			stop "$nmpid"
			stop "$pid"
			log=$nmlog
			die "nodemanager not registered with http://$YARN_RM_WEB after ${timeout}s; stopped both"
		fi
		sleep 0.5
	done
	yarnenv="export STATEUTIL_TEST_YARN=http://$YARN_RM_WEB
export STATEUTIL_TEST_YARN_CONF=$yarnconf
export STATEUTIL_TEST_YARN_AM_CLASSPATH=$yarnconf:$classpath
export STATEUTIL_TEST_YARN_NM_PID=$nmpid"
fi

if ((secure)); then
	cat >"$envfile.tmp" <<ENV
# Written by scripts/hdfs-start.sh --secure; removed by scripts/hdfs-stop.sh.
# A shell that sources this is alice@$HDFS_REALM on the kerberized cluster.
export HADOOP_CONF_DIR=$krb/conf
export KRB5_CONFIG=$krb/krb5.conf
export KRB5CCNAME=FILE:$krb/alice.ccache
export STATEUTIL_TEST_HDFS=$HDFS_NAMENODE
# For the tests, which leave the variables above alone.
export STATEUTIL_TEST_SECURE_HDFS=$HDFS_NAMENODE
export STATEUTIL_TEST_SECURE_CONF=$krb/conf
export STATEUTIL_TEST_SECURE_KRB5_CONFIG=$krb/krb5.conf
export STATEUTIL_TEST_SECURE_CCACHE=$krb/alice.ccache
export STATEUTIL_TEST_SECURE_EXPIRED_CCACHE=$krb/alice-expired.ccache
export STATEUTIL_TEST_SECURE_KEYTAB=$krb/alice.keytab
export STATEUTIL_TEST_SECURE_PRINCIPAL=alice@$HDFS_REALM
export STATEUTIL_TEST_SECURE_REALM=$HDFS_REALM
export STATEUTIL_TEST_SECURE_SERVICE_PRINCIPAL=$HDFS_SERVICE_PRINCIPAL
# A realm whose KDC allows no clock skew: every login there fails as with a clock that is off.
export STATEUTIL_TEST_SECURE_NOSKEW_KRB5_CONFIG=$krb/noskew-krb5.conf
export STATEUTIL_TEST_SECURE_NOSKEW_KEYTAB=$krb/carol.keytab
export STATEUTIL_TEST_SECURE_NOSKEW_PRINCIPAL=$HDFS_NOSKEW_PRINCIPAL
export STATEUTIL_TEST_SECURE_DATANODE=$HDFS_DATANODE
export STATEUTIL_TEST_SECURE_CONTROL=$HDFS_CONTROL
export STATEUTIL_TEST_SECURE_PROTECTION=$level
export STATEUTIL_TEST_SECURE_PID=$pid
$yarnenv
ENV
	mv "$envfile.tmp" "$envfile"
	say "secured namenode $HDFS_NAMENODE (realm $HDFS_REALM, protection $level, control $HDFS_CONTROL, pid $pid)${YARN_RM_WEB:+, resourcemanager http://$YARN_RM_WEB} up in $((SECONDS - t0))s; env in $envfile"
	exit 0
fi

if ((ha)); then
	control=$HDFS_CONTROL
	cat >"$admin" <<ADMIN
#!/usr/bin/env bash
# Makes the other NameNode of the HA test cluster active (the harness's
# control command failover, or the command given); prints the harness's answer.
set -euo pipefail
exec 3<>/dev/tcp/${control%:*}/${control##*:}
echo "\${1:-failover}" >&3
read -r reply <&3
echo "\$reply"
[[ \$reply == ok* ]]
ADMIN
	chmod +x "$admin"
	cat >"$envfile.tmp" <<ENV
# Written by scripts/hdfs-start.sh --ha; removed by scripts/hdfs-stop.sh.
export HADOOP_CONF_DIR=$haconf
export STATEUTIL_TEST_HDFS=hdfs://$HDFS_NAMESERVICE
export STATEUTIL_TEST_HA_ADMIN=$admin
# For the tests, which leave the variables above alone.
export STATEUTIL_TEST_HA_HDFS=hdfs://$HDFS_NAMESERVICE
export STATEUTIL_TEST_HA_CONF=$haconf
export STATEUTIL_TEST_HA_NAMENODES=$HDFS_NAMENODES
export STATEUTIL_TEST_HA_CONTROL=$HDFS_CONTROL
export STATEUTIL_TEST_HA_PID=$pid
ENV
	mv "$envfile.tmp" "$envfile"
	say "HA nameservice $HDFS_NAMESERVICE (namenodes $HDFS_NAMENODES, control $HDFS_CONTROL, pid $pid) up in $((SECONDS - t0))s; env in $envfile"
	exit 0
fi

if ((dn)); then
	cat >"$envfile.tmp" <<ENV
# Written by scripts/hdfs-start.sh --dn; removed by scripts/hdfs-stop.sh.
export STATEUTIL_TEST_HDFS=$HDFS_NAMENODE
# For the tests, which leave the variable above alone.
export STATEUTIL_TEST_DN_HDFS=$HDFS_NAMENODE
export STATEUTIL_TEST_DN_CONTROL=$HDFS_CONTROL
export STATEUTIL_TEST_DN_PID=$pid
ENV
	mv "$envfile.tmp" "$envfile"
	say "3-datanode namenode $HDFS_NAMENODE (control $HDFS_CONTROL, pid $pid) up in $((SECONDS - t0))s; env in $envfile"
	exit 0
fi

cat >"$envfile.tmp" <<ENV
# Written by scripts/hdfs-start.sh; removed by scripts/hdfs-stop.sh.
export STATEUTIL_TEST_HDFS=$HDFS_NAMENODE
export STATEUTIL_TEST_HDFS_CONTROL=$HDFS_CONTROL
export STATEUTIL_TEST_HDFS_SUPERUSER=$(id -un)
export STATEUTIL_TEST_HDFS_PID=$pid
$yarnenv
ENV
mv "$envfile.tmp" "$envfile"
say "namenode $HDFS_NAMENODE (control $HDFS_CONTROL, pid $pid)${YARN_RM_WEB:+, resourcemanager http://$YARN_RM_WEB} up in $((SECONDS - t0))s; env in $envfile"
