#!/usr/bin/env bash
# The restore check of a witness snapshot (testdata/flink-witness or $CACHE/flink-witness):
# Flink goes on from the snapshot (scripts/flink-harness.sh continue, to twice its records),
# from stateutil's `rescale --parallelism 3` of it (at parallelism 3, through the entry's backend;
# a ForSt one with its timers on the heap, the setting with which ForSt restores a canonical
# savepoint) and from its `convert --to flink` (a canonical savepoint, through hashmap), and the
# three outputs must be the same (a checkpoint is read where Flink wrote it: a symbolic link
# from there to the entry's snapshot/ stands while the check runs). Prints one line per copy:
# "same", "differs" (the outputs are kept), or what refused; exit 1 if any copy that stateutil
# wrote gives other output than the original.
#
#   scripts/flink-witness-restore-check.sh testdata/flink-witness/2.3.0/cep-rocksdb-native [STATEUTIL]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
entry=$(cd "$1" && pwd)
su=${2:-$root/bin/stateutil}
field() { sed -E "s/.*\"$1\":(\"([^\"]*)\"|([^,}]*)).*/\2\3/" "$entry/manifest.json"; }
v=$(field flink_version)
job=$(field job)
backend=$(field backend)
records=$(field records)
p=$(field parallelism)
snap="$entry/snapshot/$(field snapshot_subpath)"
old=$(field original_dir)
work=$(mktemp -d)
# A checkpoint names its files by absolute path, under the directory Flink wrote it into:
# while the check runs, that path leads to the entry's snapshot/.
linked=
if [[ ! -e $old ]]; then
	mkdir -p "$(dirname "$old")"
	ln -s "$entry/snapshot" "$old"
	linked=$old
fi
cleanup() {
	rm -rf "$work"
	if [[ -n $linked ]]; then
		rm -f "$linked"
		rmdir -p --ignore-fail-on-non-empty "$(dirname "$linked")" 2>/dev/null || true
	fi
}
trap cleanup EXIT
flags=()
[[ $(field changelog) == true ]] && flags+=(--changelog)
go_on() { # NAME SNAPSHOT BACKEND PARALLELISM
	local conf=${STATEUTIL_FLINK_CONF:-}
	if [[ $1 != original && $3 == forst ]]; then
		conf="state.backend.forst.timer-service.factory=HEAP${conf:+;$conf}"
	fi
	STATEUTIL_FLINK_CONF=$conf "$root/scripts/flink-harness.sh" "$v" continue --job "$job" --snapshot "$2" --backend "$3" --parallelism "$4" \
		--records "$records" --continue-to $((2 * records)) --out "$work/$1.jsonl" "${flags[@]}" 2>"$work/$1.err"
}
say() { echo "$v/$(basename "$entry"): $*"; }
if ! go_on original "$snap" "$backend" "$p"; then
	say "Flink did not go on from the original: $(grep 'failed:' "$work/original.err" | tail -1)"
	exit 1
fi
say "original: $(wc -l <"$work/original.jsonl") outputs"
rc=0
copy() { # NAME BACKEND PARALLELISM STATEUTIL-ARGS...
	local name=$1 be=$2 par=$3
	shift 3
	local code=0
	"$su" "$@" --path-map "$old=$entry/snapshot" --output "$work/$name.snap" >"$work/$name.su" 2>&1 || code=$?
	if ((code != 0)); then
		say "$name: stateutil refused (exit $code): $(tail -1 "$work/$name.su" | cut -c1-300)"
		return
	fi
	if ! go_on "$name" "$work/$name.snap" "$be" "$par"; then
		say "$name: Flink did not go on from it: $(grep 'failed:' "$work/$name.err" | tail -1)"
		rc=1
	elif cmp -s "$work/original.jsonl" "$work/$name.jsonl"; then
		say "$name: same output"
	else
		local keep="${TMPDIR:-/tmp}/restore-check-$v-$(basename "$entry")"
		mkdir -p "$keep"
		cp "$work/original.jsonl" "$work/$name.jsonl" "$keep/"
		say "$name: output differs (both kept in $keep)"
		rc=1
	fi
}
copy rescaled "$backend" 3 rescale "$snap" --parallelism 3
copy converted hashmap "$p" convert "$snap" --to flink
exit $rc
