# Sourced by scripts/bench.sh (it uses its helpers and $work/fs, the 1 GiB
# filesystem snapshot): convert to Google Cloud Storage and to Azure and
# back, against internal/cloudcp's recursive copy of the same directory on
# the official SDKs (as their samples upload and download, eight files at a
# time), on the same emulators (fake-gcs-server, scripts/gcs-start.sh;
# Azurite, scripts/azure-start.sh). Medians of interleaved rounds; ratio =
# baseline time / stateutil time, so above 1 is stateutil faster.

cloud_cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}
cloudcp="$work/cloudcp"
go build -o "$cloudcp" ./internal/cloudcp
cloud_started=()
for emulator in gcs azure; do
  if [ ! -f "$cloud_cache/$emulator.env" ]; then
    "scripts/$emulator-start.sh"
    cloud_started+=("$emulator")
  fi
  # shellcheck disable=SC1090
  . "$cloud_cache/$emulator.env"
done
if [ ${#cloud_started[@]} -gt 0 ]; then
  trap 'rm -rf "$work"; for e in "${cloud_started[@]}"; do scripts/$e-stop.sh; done' EXIT
fi

# cloud_round NAME PID OUT CMD...: round, with the server PID's CPU-seconds
# during it appended to $work/NAME-server.
cloud_round() {
  local name=$1 pid=$2 before
  shift 2
  before=$(awk '{printf "%.2f\n", ($14 + $15) / 100}' "/proc/$pid/stat")
  round "$name" "$@"
  awk -v a="$before" -v b="$(awk '{printf "%.2f\n", ($14 + $15) / 100}' "/proc/$pid/stat")" 'BEGIN {printf "%.2f\n", b - a}' >>"$work/$name-server"
}
cloud_line() { echo "$(med_s "$1")s (CPU $(med_cpu "$1") s, server CPU $(median <"$work/$1-server") s)"; }

# cloud_bench NAME LOCATION PID: the rounds on one store.
cloud_bench() {
  local name=$1 base=$2 pid=$3
  say "== $name: convert to $name and back vs cloudcp on the SDK ($(mib "$big") MiB, median of $rounds rounds)"
  rm -f "$work/$name".* "$work/$name"-*
  for i in $(seq "$rounds"); do
    cloud_round "$name-up" "$pid" - "$bin" convert "$work/fs" --to filesystem --output "$base/su-$i" --quiet
    cloud_round "$name-cliup" "$pid" - "$cloudcp" up "$work/fs" "$base/cli-$i"
    cloud_round "$name-down" "$pid" "$work/cloud-down" "$bin" convert "$base/su-$i" --to filesystem --output "$work/cloud-down" --quiet
    cloud_round "$name-clidown" "$pid" "$work/cli-down" "$cloudcp" down "$base/cli-$i" "$work/cli-down"
    # The emulators hold what they store in memory.
    "$cloudcp" rm "$base/su-$i"
    "$cloudcp" rm "$base/cli-$i"
  done
  rm -rf "$work/cloud-down" "$work/cli-down"
  say "local -> $name:  stateutil convert $(cloud_line "$name-up"), cloudcp $(cloud_line "$name-cliup"): ratio $(ratio "$(med_s "$name-cliup")" "$(med_s "$name-up")")   peak RSS $(max_rss "$name-up") MiB vs $(max_rss "$name-cliup") MiB   (runs: $(cut -d' ' -f1 "$work/$name-up" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/$name-cliup" | tr '\n' ' '))"
  say "$name -> local:  stateutil convert $(cloud_line "$name-down"), cloudcp $(cloud_line "$name-clidown"): ratio $(ratio "$(med_s "$name-clidown")" "$(med_s "$name-down")")   peak RSS $(max_rss "$name-down") MiB vs $(max_rss "$name-clidown") MiB   (runs: $(cut -d' ' -f1 "$work/$name-down" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/$name-clidown" | tr '\n' ' '))"
  say ""
}
cloud_bench GCS "$STATEUTIL_TEST_GCS/bench-$$" "$STATEUTIL_TEST_GCS_PID"
cloud_bench Azure "$STATEUTIL_TEST_AZURE/bench-$$" "$STATEUTIL_TEST_AZURE_PID"
for emulator in "${cloud_started[@]}"; do
  "scripts/$emulator-stop.sh"
done
trap 'rm -rf "$work"' EXIT
