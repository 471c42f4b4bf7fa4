# Sourced by scripts/bench.sh (it uses its helpers, $work/fs and $work/rdb, the
# 1 GiB filesystem and rocksdb snapshots): get against inspect in every
# format, process start to exit (get reads one key group, inspect only the
# metadata), and dump -o jsonl against RocksDB's own `ldb scan` of the same
# column families, in entries per second. Rounds interleaved; medians.

"$bin" generate --format memory --keys "$(keys_for "$big")" --value-bytes 1000 --parallelism 2 \
  --max-state-size "$big" --output "$work/mem.dump" >/dev/null
lookup_runs=$((rounds * 4))
say "== get vs inspect ($(mib "$big") MiB, process start to exit, median of $lookup_runs runs each, interleaved)"
for pair in "memory $work/mem.dump" "filesystem $work/fs" "rocksdb $work/rdb"; do
  set -- $pair
  # A key from the middle of the snapshot, not the first one written.
  key=$("$bin" dump "$2" --operator word-counter --state count --key-group 60 --limit 1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
  : >"$work/get-$1"
  : >"$work/inspect-$1"
  for _ in $(seq "$lookup_runs"); do
    median_ms 1 "$bin" get "$2" --operator word-counter --state count --key "$key" >>"$work/get-$1"
    median_ms 1 "$bin" inspect "$2" >>"$work/inspect-$1"
  done
  g=$(median <"$work/get-$1")
  i=$(median <"$work/inspect-$1")
  say "$(printf '%-10s get %4s ms   inspect %4s ms   get/inspect = %s' "$1" "$g" "$i" "$(ratio "$g" "$i")")"
done
rm -rf "$work/mem.dump"
say ""

# ldb opens each subtask's database as a secondary instance, so that it
# writes nothing into the snapshot. A script, for /usr/bin/time to run.
cat >"$work/ldb-scan" <<'SCAN'
#!/usr/bin/env bash
set -euo pipefail
for d in "$1"/*/; do
  [ -f "$d/CURRENT" ] || continue
  for cf in $(ldb list_column_families --db="$d" | tail -1 | tr -d '{}' | tr ',' ' '); do
    [ "$cf" = default ] && continue
    ldb --db="$d" --secondary_path="$2" --column_family="$cf" scan ${3:+--hex}
  done
done
SCAN
chmod +x "$work/ldb-scan"
entries=$("$bin" dump "$work/rdb" -o jsonl | wc -l)
# Counted from the hex scan: raw values hold newline bytes.
scanned=$("$work/ldb-scan" "$work/rdb" "$work/ldb-secondary" hex | wc -l)
say "== dump -o jsonl vs ldb scan (rocksdb, $(mib "$big") MiB, $entries records, $scanned RocksDB entries; median of $rounds rounds)"
for _ in $(seq "$rounds"); do
  round dump - "$bin" dump "$work/rdb" -o jsonl
  round ldb - "$work/ldb-scan" "$work/rdb" "$work/ldb-secondary"
  round ldbhex - "$work/ldb-scan" "$work/rdb" "$work/ldb-secondary" hex
done
t_dump=$(med_s dump)
t_ldb=$(med_s ldb)
t_ldbhex=$(med_s ldbhex)
say "dump:      ${t_dump}s   $(awk -v n="$scanned" -v t="$t_dump" 'BEGIN {printf "%.0f", n / t}') RocksDB entries/s as $(awk -v n="$entries" -v t="$t_dump" 'BEGIN {printf "%.0f", n / t}') records/s   peak RSS $(max_rss dump) MiB   (runs: $(cut -d' ' -f1 "$work/dump" | tr '\n' ' '))"
say "ldb scan --hex (bytes as text, as dump writes them): ${t_ldbhex}s   $(awk -v n="$scanned" -v t="$t_ldbhex" 'BEGIN {printf "%.0f", n / t}') entries/s   (runs: $(cut -d' ' -f1 "$work/ldbhex" | tr '\n' ' '))"
say "ldb scan (raw bytes):  ${t_ldb}s   $(awk -v n="$scanned" -v t="$t_ldb" 'BEGIN {printf "%.0f", n / t}') entries/s   (runs: $(cut -d' ' -f1 "$work/ldb" | tr '\n' ' '))"
# Both read the same RocksDB entries, so their rates in entries/s compare
# as their times do. A record is one key's value, list or map: RocksDB
# holds a map's entries apart, so there are fewer records than entries.
say "dump over ldb scan, RocksDB entries/s (= ldb time / dump time): $(ratio "$t_ldb" "$t_dump"), with --hex $(ratio "$t_ldbhex" "$t_dump");   dump records/s over ldb entries/s: $(awk -v a="$entries" -v b="$t_dump" -v c="$scanned" -v d="$t_ldb" 'BEGIN {printf "%.2f", (a / b) / (c / d)}')"
rm -rf "$work/ldb-secondary"
say ""
