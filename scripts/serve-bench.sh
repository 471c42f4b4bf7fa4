# Sourced by scripts/bench.sh (it uses its helpers, $work/fs and $work/rdb, the
# 1 GiB filesystem and rocksdb snapshots): the state browser's first page, as
# the UI asks for it (GET entries, 50 records) and at the API's largest page
# (1000), from one `stateutil serve` of both snapshots, against a target of
# 200 ms. Side by side: `stateutil dump --limit N` of the same records,
# process start to exit, which opens the snapshot as well. A request's time is
# curl's, from connect to the last byte. Medians.

serve_runs=$((rounds * 4))
say "== serve: the state browser's first page ($(mib "$big") MiB, median of $serve_runs requests; target under 200 ms) vs dump --limit N (process start to exit, median of $serve_runs runs)"
(
  "$bin" serve "$work/fs" "$work/rdb" --listen 127.0.0.1:0 >"$work/serve.out" 2>"$work/serve.err" &
  serve_pid=$!
  trap 'kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true' EXIT
  # serve prints its address once it has opened every snapshot.
  for _ in $(seq 600); do
    grep -q '^serving ' "$work/serve.out" && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 0.1
  done
  base=$(sed -n 's/^serving .* at \(http:[^ ]*\)$/\1/p' "$work/serve.out")
  [ -n "$base" ] || { echo "serve printed no address in 60 s" >&2; exit 1; }
  # page_ms URL RECORDS: one request's milliseconds; its answer must be a
  # page of RECORDS records.
  page_ms() {
    local out
    out=$(curl -sS -o "$work/page.json" -w '%{http_code} %{time_total}' "$1")
    [ "${out% *}" = 200 ] || { echo "GET $1: ${out% *}: $(head -c 300 "$work/page.json")" >&2; return 1; }
    python3 -c 'import json, sys; n = len(json.load(open(sys.argv[1]))["records"]); sys.exit(0 if n == int(sys.argv[2]) else f"{sys.argv[1]}: {n} records, want {sys.argv[2]}")' "$work/page.json" "$2"
    awk -v s="${out#* }" 'BEGIN {printf "%.1f\n", s * 1000}'
  }
  id=0
  for snap in fs rdb; do
    entries=$(curl -sS "$base/api/snapshots/$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["totals"]["keyed_entries"])')
    for limit in 50 1000; do
      url="$base/api/snapshots/$id/entries?operator=word-counter&state=count&limit=$limit"
      first=$(page_ms "$url" "$limit")
      : >"$work/page-$snap-$limit"
      for _ in $(seq "$serve_runs"); do
        page_ms "$url" "$limit" >>"$work/page-$snap-$limit"
      done
      p=$(median <"$work/page-$snap-$limit")
      d=$(median_ms "$serve_runs" "$bin" dump "$work/$snap" --operator word-counter --state count --limit "$limit" -o jsonl)
      verdict=met
      awk -v p="$p" 'BEGIN {exit !(p < 200)}' || verdict="NOT MET"
      say "$(printf '%-4s (%s keyed entries) page of %4d: %6s ms (first request %s ms, target < 200 ms: %s)   dump --limit %4d: %4s ms   dump/page = %s' \
        "$snap" "$entries" "$limit" "$p" "$first" "$verdict" "$limit" "$d" "$(ratio "$d" "$p")")"
    done
    id=$((id + 1))
  done
)
say ""
