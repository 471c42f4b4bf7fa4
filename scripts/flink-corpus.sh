#!/usr/bin/env bash
# Generates the real-Flink snapshot corpus with scripts/flink-harness.sh:
#
#   $CACHE/flink-corpus/<flink version>/<entry>/{snapshot/,dump.jsonl,manifest.json}
#
# where <entry> is <job>-<backend>-<kind>[-incremental][-compressed][-changelog][-unaligned].
# snapshot/ is the directory Flink wrote into (--dir); the snapshot itself (the
# directory holding _metadata) is snapshot/<manifest.snapshot_subpath>.
# Checkpoints (and changelog state) record absolute paths: manifest.original_dir
# is where snapshot/ was when Flink wrote it (map it with --path-map OLD=NEW).
#
#   scripts/flink-corpus.sh                      # the whole matrix (skips entries already there)
#   scripts/flink-corpus.sh --slice 3/7          # the 3rd of 7 deterministic slices
#   scripts/flink-corpus.sh --versions "1.20.3 2.2.1" --entries "basic-hashmap-canonical"
#   scripts/flink-corpus.sh --list               # print the matrix (version entry), run nothing
#
# Options:
#   --slice K/N        run entries whose index i (0-based, in --list order) has i % N == K-1
#   --versions "V..."  Flink versions (default: the newest patch of every minor that runs here)
#   --entries "E..."   only these entry names
#   --out DIR          corpus root (default $CACHE/flink-corpus)
#   --records N        records per snapshot (default 200)
#   --verify           also restore each snapshot in Flink (at parallelism 3: a rescale) into
#                      restore.jsonl and read it with the State Processor API into spa.jsonl
#                      (spa.err instead when the State Processor API cannot read it); a
#                      restore Flink refuses or a restore dump that differs fails the entry.
#                      internal/flinkharness's tests compare all three with EqualDumps.
#   --force            regenerate entries that exist
#   --jobs N           entries made at once (default 1; each is a JVM at a time)
# Environment: as scripts/flink-harness.sh (STATEUTIL_CACHE_DIR, ...);
# STATEUTIL_FLINK_JOB_VERSIONS, the versions the DataStream zoo jobs run on.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
harness="$root/scripts/flink-harness.sh"

say() { echo "flink-corpus: $*" >&2; }

# Newest patch of each minor that runs here (testenv/flink/README.md has the table).
all_versions="1.18.1 1.19.3 1.20.5 2.0.2 2.1.3 2.2.1 2.3.0"
# The other DataStream jobs run on the newest 1.20 and the newest 2.x only,
# unless STATEUTIL_FLINK_JOB_VERSIONS names more (they run on 1.19.3 and
# 2.2.1 too).
job_versions=${STATEUTIL_FLINK_JOB_VERSIONS:-"1.20.5 2.3.0"}

versions=$all_versions
entries=""
out="$cache/flink-corpus"
records=200
slice=""
verify=0
force=0
list=0
jobs=1
while [[ $# -gt 0 ]]; do
	case $1 in
	--slice) slice=$2; shift 2 ;;
	--versions) versions=$2; shift 2 ;;
	--entries) entries=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--records) records=$2; shift 2 ;;
	--verify) verify=1; shift ;;
	--force) force=1; shift ;;
	--jobs) jobs=$2; shift 2 ;;
	--list) list=1; shift ;;
	*) say "unknown argument $1"; exit 2 ;;
	esac
done
if [[ ! $jobs =~ ^[1-9][0-9]*$ ]]; then
	say "--jobs wants a number of at least 1"
	exit 2
fi
if [[ -n $slice && ! $slice =~ ^[0-9]+/[0-9]+$ ]]; then
	say "--slice wants K/N"
	exit 2
fi

# matrix: one "version entry" line per snapshot, in a fixed order.
matrix() {
	local v b k c l inc name j
	for v in $versions; do
		for b in hashmap rocksdb; do
			for k in checkpoint canonical native; do
				for inc in "" -incremental; do
					[[ -n $inc && ($b != rocksdb || $k != checkpoint) ]] && continue
					for c in "" -compressed; do
						for l in "" -changelog; do
							echo "$v basic-$b-$k$inc$c$l"
						done
					done
				done
			done
		done
		if [[ " $job_versions " == *" $v "* ]]; then
			for j in longkeys tuplekeys types rowdata orders avro rowtypes collections windows; do
				for b in hashmap rocksdb; do
					for k in canonical native; do
						echo "$v $j-$b-$k"
					done
				done
				# And the checkpoints a running job leaves: a full heap one and an
				# incremental RocksDB one.
				echo "$v $j-hashmap-checkpoint"
				echo "$v $j-rocksdb-checkpoint-incremental"
			done
			# Heap key groups only: a native savepoint, and a compressed checkpoint
			# (each state's section a Snappy stream of its own).
			echo "$v heapkryo-hashmap-native"
			echo "$v heapkryo-hashmap-checkpoint-compressed"
			# The JDK classes Flink registers for Kryo from id 73: a heap savepoint and
			# RocksDB's native one.
			echo "$v kryojdk-hashmap-canonical"
			echo "$v kryojdk-rocksdb-native"
			# The witness jobs (CEP, the SQL operators and the value zoo): a heap
			# savepoint, RocksDB's native one and an incremental checkpoint; on Flink 2
			# a changelog checkpoint too, ForSt's native savepoint and checkpoint where
			# the harness has ForSt (versions.tsv), and an unaligned checkpoint with
			# records in flight.
			for j in cep zoo sqlops sqlevents sqlbatch; do
				for e in hashmap-canonical rocksdb-native rocksdb-checkpoint-incremental; do
					echo "$v $j-$e"
				done
				if [[ $v == 2.* ]]; then
					echo "$v $j-hashmap-checkpoint-changelog"
					if [[ $(awk -v v="$v" '$1 == v { print $7 }' "$root/testenv/flink/versions.tsv") =~ ^[0-9] ]]; then
						echo "$v $j-forst-native"
						echo "$v $j-forst-checkpoint"
					fi
					echo "$v $j-hashmap-checkpoint-unaligned"
				fi
			done
			# Flink 1.x's Scala API types (Flink 2 has no Scala API).
			if [[ $v == 1.* ]]; then
				for e in hashmap-canonical rocksdb-native hashmap-checkpoint; do
					echo "$v scala-$e"
				done
			fi
		fi
		# The planner's jobs on every version: a heap savepoint, RocksDB's
		# canonical and native ones (a heap native savepoint is the canonical
		# format), and the checkpoints a running job leaves.
		for j in sql sqltime; do
			for e in hashmap-canonical rocksdb-canonical rocksdb-native hashmap-checkpoint rocksdb-checkpoint-incremental; do
				echo "$v $j-$e"
			done
		done
	done
}

selected() {
	local i=0 v e
	matrix | while read -r v e; do
		if [[ -n $entries && " $entries " != *" $e "* ]]; then
			continue
		fi
		if [[ -n $slice ]]; then
			if ((i % ${slice#*/} != ${slice%/*} - 1)); then
				i=$((i + 1))
				continue
			fi
		fi
		i=$((i + 1))
		echo "$v $e"
	done
}

canon() { sed -E 's/"subtask":-?[0-9]+,//' "$1" | sort -u; }

if ((list)); then
	selected
	exit 0
fi

t0=$SECONDS
# Flink's refusals of a combination (e.g. 1.18: the changelog backend over hashmap takes no
# native savepoint).
refusals='does not support NATIVE savepoints'
# What became of each entry, a word a line (started, then written, refused or failed, and
# mismatched beside written), counted at the end.
mkdir -p "$out"
outcomes=$(mktemp "$out/.outcomes.XXXXXX")
trap 'rm -f "$outcomes"' EXIT
outcome() { echo "$1" >>"$outcomes"; }

# make_entry V E: one snapshot, its dump and manifest (and its witnesses with --verify).
make_entry() {
	local v=$1 e=$2 job backend kind rest
	local dest="$out/$v/$e"
	IFS=- read -r job backend kind rest <<<"$e"
	local args=(--job "$job" --backend "$backend" --kind "$kind" --records "$records")
	[[ $e == *-incremental* ]] && args+=(--incremental)
	[[ $e == *-compressed* ]] && args+=(--compression)
	[[ $e == *-changelog* ]] && args+=(--changelog)
	[[ $e == *-unaligned* ]] && args+=(--unaligned)
	local work="$out/$v/.$e.tmp" t1 path msg flags
	rm -rf "$work"
	mkdir -p "$work"
	t1=$SECONDS
	if ! path=$("$harness" "$v" snapshot "${args[@]}" --dir "$work/snapshot" --dump "$work/dump.jsonl" \
		--manifest "$work/manifest.json" 2>"$work/harness.err"); then
		# The harness's own verdict, else its last line (a failed build says no "failed:").
		msg=$(grep '^flink-harness: failed' "$work/harness.err" | tail -1 || true)
		[[ -n $msg ]] || msg=$(tail -n 1 "$work/harness.err")
		# Combinations a Flink version refuses are its answer, recorded next to the entries.
		if [[ $msg =~ $refusals ]]; then
			echo "$msg" >"$dest.refused"
			rm -rf "$work"
			say "$v $e: refused by Flink: $msg"
			outcome refused
			return
		fi
		say "$v $e: FAILED: $msg"
		tail -n 3 "$work/harness.err" >&2
		outcome failed
		return
	fi
	if ((verify)); then
		flags=()
		[[ $e == *-changelog* ]] && flags+=(--changelog)
		if ! "$harness" "$v" restore-dump --job "$job" --backend "$backend" --snapshot "$path" --parallelism 3 \
			--dump "$work/restore.jsonl" --records "$records" "${flags[@]}" 2>>"$work/harness.err"; then
			say "$v $e: Flink did not restore it: $(grep '^flink-harness: failed' "$work/harness.err" | tail -1 || true)"
			outcome failed
			return
		fi
		# A quick textual check (subtasks dropped, duplicates merged); EqualDumps is exact.
		# A difference is kept, not fatal: it is Flink's answer (e.g. FLINK-34063 on 1.18.1).
		if ! diff -q <(canon "$work/dump.jsonl") <(canon "$work/restore.jsonl") >/dev/null; then
			mv "$work/restore.jsonl" "$work/restore-mismatch.jsonl"
			{
				echo "Flink $v restored other state than the job dumped (restore at parallelism 3):"
				diff <(canon "$work/dump.jsonl") <(canon "$work/restore-mismatch.jsonl") || true
			} >"$work/verify.txt"
			say "$v $e: Flink's restore differs from the job's dump; see verify.txt"
			outcome mismatched
		fi
		if ! "$harness" "$v" spa-dump --job "$job" --snapshot "$path" --records "$records" \
			--dump "$work/spa.jsonl" 2>>"$work/harness.err"; then
			grep '^flink-harness' "$work/harness.err" | tail -1 >"$work/spa.err" || true
			rm -f "$work/spa.jsonl"
			say "$v $e: the State Processor API cannot read it: $(cat "$work/spa.err")"
		elif ! diff -q <(canon "$work/dump.jsonl") <(canon "$work/spa.jsonl") >/dev/null; then
			mv "$work/spa.jsonl" "$work/spa-mismatch.jsonl"
			{
				echo "Flink $v's State Processor API read other state than the job dumped:"
				diff <(canon "$work/dump.jsonl") <(canon "$work/spa-mismatch.jsonl") || true
			} >>"$work/verify.txt"
			say "$v $e: the State Processor API dump differs; see verify.txt"
			outcome mismatched
		fi
	fi
	rm -f "$work/harness.err"
	rm -rf "$dest"
	mkdir -p "$(dirname "$dest")"
	mv "$work" "$dest"
	outcome written
	say "$v $e: $((SECONDS - t1))s"
}

while read -r v e; do
	if [[ (-f $out/$v/$e/manifest.json || -f $out/$v/$e.refused) && $force == 0 ]]; then
		continue
	fi
	while (($(jobs -rp | wc -l) >= jobs)); do
		wait -n || true
	done
	outcome started
	make_entry "$v" "$e" </dev/null &
done < <(selected)
wait
count() { grep -cx "$1" "$outcomes" || true; }
# An entry whose run stopped on an error of its own (set -e) left no outcome: a failure too.
failed=$(($(count started) - $(count written) - $(count refused)))
say "$(count written) snapshots written under $out in $((SECONDS - t0))s; $(count refused) refused by Flink (<entry>.refused); $failed failed; $(count mismatched) with a witness that differs (verify.txt)"
((failed == 0))
