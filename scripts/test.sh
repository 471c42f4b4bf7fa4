#!/usr/bin/env bash
# make test: lint and every Go test, with a real HDFS (Hadoop's MiniDFSCluster), an
# S3-compatible server (moto), a Google Cloud Storage emulator
# (fake-gcs-server) and an Azure Blob Storage emulator (Azurite) on
# loopback. HDFS, S3, GCS and Azure tests fail rather than skip here if
# their server is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase's wall time, printed as a table when the run ends (failed or
# not), so that a slow phase shows.
phases=()
phase_start=$SECONDS
run_start=$SECONDS
phase() {
  phases+=("$(printf '%-46s %6ss' "$1" $((SECONDS - phase_start)))")
  phase_start=$SECONDS
}
print_phases() {
  echo "make test phases (wall time):"
  printf '  %s\n' "${phases[@]}"
  if ((SECONDS > phase_start)); then
    local rest="(the phase that failed, and stopping servers)"
    [[ -z ${finished:-} ]] || rest="stopping the servers"
    printf '  %-46s %6ss\n' "$rest" $((SECONDS - phase_start))
  fi
  printf '  %-46s %6ss\n' "total" $((SECONDS - run_start))
}
# finish VAR LOG PHASE WHAT: waits for the job started in the background
# whose pid is in VAR (cleared then, so that stop_servers leaves it be),
# shows its log, closes the phase, and stops the run if WHAT failed.
finish() {
  local pid=${!1} rc=0
  printf -v "$1" ''
  wait "$pid" || rc=$?
  cat "$2" >&2
  phase "$3"
  if ((rc != 0)); then
    echo "$4 failed (exit $rc)" >&2
    exit 1
  fi
}
stop_servers() {
  [[ -z ${lint:-} ]] || kill "$lint" 2>/dev/null || true
  [[ -z ${corpus:-} ]] || kill -- -"$corpus" 2>/dev/null || kill "$corpus" 2>/dev/null || true
  [[ -z ${cmd_test:-} ]] || kill -- -"$cmd_test" 2>/dev/null || kill "$cmd_test" 2>/dev/null || true
  [[ -z ${serve_trials:-} ]] || kill "$serve_trials" 2>/dev/null || true
  # Side by side: each stops its own servers, and a JVM takes seconds to go.
  local stops=()
  for server in hdfs s3 gcs azure; do
    scripts/$server-stop.sh &
    stops+=($!)
  done
  wait "${stops[@]}" || true
  print_phases
}

# The kerberized cluster (scripts/hdfs-start.sh --secure: a MiniKdc beside
# it) starts in a JVM of its own alongside the open one; its variables are
# the STATEUTIL_TEST_SECURE_* ones, so that the rest of its env file (a
# kinit'ed shell's) reaches no other test. So does the HA cluster
# (scripts/hdfs-start.sh --ha: two NameNodes of one nameservice), whose
# variables for the tests are the STATEUTIL_TEST_HA_* ones, and the cluster of
# three DataNodes (scripts/hdfs-start.sh --dn), whose are STATEUTIL_TEST_DN_*.
logs=${STATEUTIL_CACHE_DIR:-.cache}
mkdir -p "$logs"
# Lint (make lint) runs while the servers start, which mostly wait on JVMs
# and downloads, and then beside the tests; its result is awaited last.
scripts/lint.sh >"$logs/lint.log" 2>&1 &
lint=$!
scripts/hdfs-start.sh --secure >"$logs/hdfs-secure-start.log" 2>&1 &
secure_start=$!
scripts/hdfs-start.sh --ha >"$logs/hdfs-ha-start.log" 2>&1 &
ha_start=$!
scripts/hdfs-start.sh --dn >"$logs/hdfs-dn-start.log" 2>&1 &
dn_start=$!
# S3: moto (installed into a venv on first use); storage/s3's tests restart
# it, so they run in the first go test below, where nothing else uses it.
scripts/s3-start.sh >"$logs/s3-start.log" 2>&1 &
s3_start=$!
# The GCS and Azure emulators (built from fake-gcs-server's Go module and
# installed from npm on first use); their storage tests restart them too.
scripts/gcs-start.sh >"$logs/gcs-start.log" 2>&1 &
gcs_start=$!
scripts/azure-start.sh >"$logs/azure-start.log" 2>&1 &
azure_start=$!
trap stop_servers EXIT
scripts/hdfs-start.sh
phase "HDFS and YARN harness (build, start)"
. .cache/hdfs.env
export STATEUTIL_REQUIRE_HDFS=1
if ! wait "$secure_start"; then
  cat "$logs/hdfs-secure-start.log" >&2
  echo "the kerberized HDFS harness did not start" >&2
  exit 1
fi
cat "$logs/hdfs-secure-start.log" >&2
. <(grep '^export STATEUTIL_TEST_SECURE_' "$logs/hdfs-secure.env")
phase "kerberized HDFS harness (start, beside the above)"
if ! wait "$ha_start"; then
  cat "$logs/hdfs-ha-start.log" >&2
  echo "the HA HDFS harness did not start" >&2
  exit 1
fi
cat "$logs/hdfs-ha-start.log" >&2
. <(grep '^export STATEUTIL_TEST_HA_' "$logs/hdfs-ha.env")
phase "HA HDFS harness (start, beside the above)"
if ! wait "$dn_start"; then
  cat "$logs/hdfs-dn-start.log" >&2
  echo "the 3-DataNode HDFS harness did not start" >&2
  exit 1
fi
cat "$logs/hdfs-dn-start.log" >&2
. <(grep '^export STATEUTIL_TEST_DN_' "$logs/hdfs-dn.env")
phase "3-DataNode HDFS harness (start, beside the above)"

if ! wait "$s3_start"; then
  cat "$logs/s3-start.log" >&2
  echo "the S3 server (moto) did not start" >&2
  exit 1
fi
cat "$logs/s3-start.log" >&2
phase "S3 server (moto: install, start; beside the above)"
. "${STATEUTIL_CACHE_DIR:-.cache}/s3.env"
export STATEUTIL_REQUIRE_S3=1
for emulator in gcs azure; do
  pid_var=${emulator}_start
  if ! wait "${!pid_var}"; then
    cat "$logs/$emulator-start.log" >&2
    echo "the $emulator emulator did not start" >&2
    exit 1
  fi
  cat "$logs/$emulator-start.log" >&2
  . "${STATEUTIL_CACHE_DIR:-.cache}/$emulator.env"
done
phase "GCS and Azure emulators (build, install, start; beside the above)"
export STATEUTIL_REQUIRE_GCS=1 STATEUTIL_REQUIRE_AZURE=1
# scripts/deps.sh installed Chromium: the browser tests of stateutil serve
# fail rather than skip without it.
export STATEUTIL_REQUIRE_BROWSER=1
# The hostile trials of the sharded path run as a quick sample here
# (scripts/shard-trials.sh runs them; STATEUTIL_TRIALS=full for all).
export STATEUTIL_TRIALS=${STATEUTIL_TRIALS:-quick}
# Real Flink (testenv/flink, Flink's MiniCluster from Maven Central): one
# slice of the real-Flink matrices per run, so that successive days cover all
# of it. A day's slice is one of the newest 1.20 and the newest 2.x (the
# writer's restore matrix and the other harness tests run on it) and one
# eighth of that version's corpus matrix (scripts/flink-corpus.sh --list),
# regenerated from scratch so that a broken generator shows. `make
# test-flink-matrix` runs everything on every version.
# STATEUTIL_FLINK_VERSIONS and STATEUTIL_FLINK_SLICE=K/N choose otherwise.
export STATEUTIL_REQUIRE_FLINK=1
# The tests' Flink jobs are small and each JVM lives seconds: compiling with
# C1 alone halves the CPU a run takes (C2 pays off only in long runs, such
# as make bench's).
export STATEUTIL_FLINK_JAVA_OPTS=${STATEUTIL_FLINK_JAVA_OPTS--XX:TieredStopAtLevel=1}
flink_versions=(1.20.5 2.3.0)
day=$(($(date -u +%s) / 86400))
export STATEUTIL_FLINK_VERSIONS=${STATEUTIL_FLINK_VERSIONS:-${flink_versions[day % 2]}}
for v in $STATEUTIL_FLINK_VERSIONS; do
  scripts/flink-harness.sh "$v" build
done
phase "Flink harness build ($STATEUTIL_FLINK_VERSIONS)"
flink_slice=${STATEUTIL_FLINK_SLICE:-$((day / 2 % 8 + 1))/8}
export STATEUTIL_FLINK_CORPUS="${STATEUTIL_CACHE_DIR:-$PWD/.cache}/flink-corpus-slice"
rm -rf "$STATEUTIL_FLINK_CORPUS"
echo "real Flink: $STATEUTIL_FLINK_VERSIONS; corpus slice $flink_slice, into $STATEUTIL_FLINK_CORPUS (beside the storage tests; its log follows them)"
# In a session of its own, so that a failure below stops its JVMs too.
setsid scripts/flink-corpus.sh --versions "$STATEUTIL_FLINK_VERSIONS" --slice "$flink_slice" --verify --jobs 2 \
  --out "$STATEUTIL_FLINK_CORPUS" >"$logs/flink-corpus.log" 2>&1 &
corpus=$!
# serve's hostile trials, a sample (make hostile-trials runs them whole with
# the trials of writes and inputs, whose tests the go test below runs once).
STATEUTIL_TRIALS=quick scripts/hostile-trials-serve.sh >"$logs/serve-trials.log" 2>&1 &
serve_trials=$!

# The storage tests stop and restart the DataNode, and restart the
# kerberized cluster at each protection level; run them before the packages
# that write to HDFS, not beside them (the corpus slice writes no HDFS).
# -v so that the log shows each HDFS test running against the cluster. The
# whole output of each go test is kept in the cache; the lines shown include
# every failure's messages, from test helpers' files too.
go test -count=1 -timeout 30m -v ./storage/... 2>&1 | tee "$logs/go-test-storage.log" |
  grep -E '^\s*(=== RUN|--- )|^(ok|FAIL|PASS|panic)|\.go:[0-9]+: '
phase "go test ./storage/... (the corpus slice beside it)"

# cmd, the package that takes longest, starts now, beside what is left of
# the corpus slice, and runs beside the other packages, which follow the
# slice (backends/flink and internal/flinkharness read it). -parallel 4:
# its parallel tests wait on YARN, object stores and JVMs much of their
# time. In a session of its own, so that a failure elsewhere stops it too.
cmd_pkg=$(go list ./cmd)
setsid go test -count=1 -timeout 60m -v -parallel 4 "$cmd_pkg" >"$logs/go-test-cmd.log" 2>&1 &
cmd_test=$!
finish corpus "$logs/flink-corpus.log" "real-Flink corpus slice $flink_slice (what was left of it)" "the real-Flink corpus slice"
finish serve_trials "$logs/serve-trials.log" "serve's hostile trials, a sample (what was left of them)" "serve's hostile trials"

# -v again so that the log names every HDFS and object-store test and every skip; other
# passing tests show only in their package's ok line.
show='^(ok|FAIL|panic)|^\s*--- (FAIL|SKIP)|^\s*--- PASS: \S*(HDFS|Hdfs|S3|GCS|Azure|ObjectStore|YARN)|\.go:[0-9]+: '
go test -count=1 -timeout 60m -v $(go list ./... | grep -v '/storage' | grep -vxF "$cmd_pkg") 2>&1 | tee "$logs/go-test.log" |
  grep -E "$show"
phase "go test (every other package but cmd)"
cmd_rc=0
wait "$cmd_test" || cmd_rc=$?
cmd_test=
grep -E "$show" "$logs/go-test-cmd.log" || true
phase "go test ./cmd (what was left of it)"
if ((cmd_rc != 0)); then
  echo "go test ./cmd failed (exit $cmd_rc); its whole output: $logs/go-test-cmd.log" >&2
  exit 1
fi
finish lint "$logs/lint.log" "lint (what was left of it)" "lint"
finished=1
