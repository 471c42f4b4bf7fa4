#!/usr/bin/env bash
# The hostile trials of writes and inputs, as an attacker or a careless
# user would run them, with their counts:
#
#   - every write (a convert to each format, a key deletion, a Flink
#     savepoint's rewrite), with --force and without, over what is not a
#     snapshot: a text file, an empty file, a directory of a garbage
#     _metadata and a user's file, one of a writing marker and user files,
#     a snapshot beside a user's file; all refused, nothing changed;
#   - forced writes killed (SIGKILL) at a progress report, a user's file
#     put beside what they left, then written again: refused until the
#     user's file is moved away, then complete, nothing of the killed
#     write left, the user's file never lost;
#   - two writers of one place by two names (a symbolic link to it, to
#     where it will be, a path through "..", a linked parent and ".."),
#     one held in the middle of its write, then both at once; and on HDFS,
#     S3, GCS and Azure (with their servers up: scripts/hdfs-start.sh,
#     scripts/s3-start.sh, scripts/gcs-start.sh, scripts/azure-start.sh)
#     through "..", with --force over users' files there too;
#   - verify of a savepoint stateutil wrote whose checksum manifest is
#     gone; load and put of what JSON takes and changes without a word;
#     a read killed while its RocksDB instances are unpacked.
#
# Then scripts/hostile-trials-serve.sh, if there is one (with
# STATEUTIL_TRIALS=quick under --quick): its counts follow these, as it
# prints them, and its exit status (non-zero when a bound of serve's does
# not hold) counts as a test's. The script prints every count, summed
# across trials, and exits non-zero if a test fails or a count that must
# be 0 is not.
#
#   scripts/hostile-trials.sh            the full run (make hostile-trials)
#   scripts/hostile-trials.sh --quick    a sample, as make test runs it
#
# Environment: STATEUTIL_HOSTILE_ROUNDS (rounds of the trials that repeat;
# 20 by default, 1 with --quick).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
quick=0
case ${1:-} in
--quick) quick=1 ;;
"") ;;
*)
	echo "usage: scripts/hostile-trials.sh [--quick]" >&2
	exit 2
	;;
esac
if ((quick)); then
	export STATEUTIL_HOSTILE_ROUNDS=${STATEUTIL_HOSTILE_ROUNDS:-1} STATEUTIL_TRIALS=quick
else
	export STATEUTIL_HOSTILE_ROUNDS=${STATEUTIL_HOSTILE_ROUNDS:-20}
fi
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
for env in hdfs.env s3.env gcs.env azure.env; do
	if [[ -f $cache/$env ]]; then
		# shellcheck disable=SC1090
		. "$cache/$env"
	else
		echo "hostile-trials: no $env (scripts/${env%.env}-start.sh): the ${env%.env} trials skip" >&2
	fi
done

trials='^(TestForceReplacesOnlyASnapshot|TestKilledForceKeepsUserFiles|TestClaimsHoldAcrossSpellings|TestRemoteClaimsHoldAcrossSpellings|TestRemoteForceReplacesOnlyASnapshot|TestVerifyWarnsOfALostManifest|TestHostileLoadAndPut|TestKilledReadLeavesNoTempDirs)$'
log=$(mktemp)
serve=$(mktemp)
trap 'rm -f "$log" "$log.counts" "$serve"' EXIT
status=0
echo "== hostile writes and inputs ($STATEUTIL_HOSTILE_ROUNDS rounds)"
go test ./cmd -run "$trials" -count=1 -v -timeout 3h >"$log" 2>&1 || status=1
grep -E '^\s*--- (FAIL|SKIP)|^(FAIL|ok|panic)' "$log" || true
if ((status)); then
	grep -E '\.go:[0-9]+: ' "$log" | grep -v 'hostile-trials: ' | head -40 >&2 || true
fi

if [[ -x scripts/hostile-trials-serve.sh ]]; then
	echo "== serve (scripts/hostile-trials-serve.sh)"
	scripts/hostile-trials-serve.sh >"$serve" 2>&1 || status=1
fi

# Every count, summed over the trials that report it.
echo "== counts"
must_be_zero=' user-files-removed paths-changed-by-refused-writes double-successes unclear-refusals leftovers-after-rewrite unexpected-outcomes lost-manifest-unreported hostile-inputs-accepted reader-temp-dirs-left '
sed -nE 's/.*hostile-trials: ([a-z0-9-]+) ([0-9]+)$/\1 \2/p' "$log" |
	awk '{ n[$1] += $2 } END { for (k in n) print k, n[k] }' | sort >"$log.counts"
while read -r name n; do
	mark=""
	if [[ $must_be_zero == *" $name "* ]] && ((n > 0)); then
		mark="  <- must be 0"
		status=1
	fi
	printf '  %-36s %8d%s\n' "$name" "$n" "$mark"
done <"$log.counts"
if [[ -s $serve ]]; then
	echo "== serve's counts"
	grep -v '^== ' "$serve" | sed 's/^/  /'
fi
exit $status
