#!/usr/bin/env bash
# The hostile trials of the sharded path (issue 29), with their counts:
#
#   - every single-field edit of a plan file (go test ./migrate -run
#     TestEveryPlanFieldEdit);
#   - every staged file flipped at sampled offsets (a fixed seed) and
#     truncated, a shard's record removed, a subtask removed from a
#     record, in every format that shards write;
#   - SIGKILL at random points of `shard` and `commit` (and at their own
#     kill points), on local disk and, with scripts/s3-start.sh run
#     first, on S3; after each kill the shards and the commit run again.
#
# Each trial is refused (nothing at the destination that a reader
# accepts), completed (the destination verifies equal to the source) or
# BAD (a silent wrong result, a panic or exit 70, or a destination that a
# rerun and a forced convert cannot use). The script prints the table and
# exits non-zero when any trial is BAD or a test fails.
#
#   scripts/shard-trials.sh                 quick sample (about a minute)
#   STATEUTIL_TRIALS=full scripts/shard-trials.sh   the closing count
#
# Environment: STATEUTIL_TRIALS (quick|full), STATEUTIL_TRIALS_SEED (29).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export STATEUTIL_TRIALS=${STATEUTIL_TRIALS:-quick}
if [[ -f .cache/s3.env ]]; then
  # shellcheck disable=SC1091
  . .cache/s3.env
else
  echo "shard-trials: no S3 server (scripts/s3-start.sh): the kill trials run on local disk only" >&2
fi

status=0
echo "== every single-field edit of a plan"
go test ./migrate -run 'TestEveryPlanFieldEdit' -count=1 -v | grep -v '^=== ' || status=1

echo "== damaged staging, missing shards, killed shards and commits ($STATEUTIL_TRIALS, seed ${STATEUTIL_TRIALS_SEED:-29})"
go test ./migrate -run 'TestShardTrials' -count=1 -v -timeout 60m | grep -v '^=== ' || status=1
exit $status
