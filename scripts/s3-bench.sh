# Sourced by scripts/bench.sh (it uses its helpers and $work/fs, the 1 GiB
# filesystem snapshot): convert to S3 and back, against the AWS CLI's
# `aws s3 cp --recursive` of the same directory on the same server (moto,
# scripts/s3-start.sh). The CLI is pip's awscli, pinned, in a venv under the
# cache dir. Medians of interleaved rounds; ratio = CLI time / stateutil
# time, so above 1 is stateutil faster.

s3_cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}
awscli_version=1.46.2
awscli="$s3_cache/s3/awscli-$awscli_version"
if [ ! -x "$awscli/bin/aws" ]; then
  rm -rf "$awscli"
  python3 -m venv "$awscli"
  "$awscli/bin/pip" install -q --disable-pip-version-check "awscli==$awscli_version" >"$work/awscli-install.log" 2>&1 ||
    { cat "$work/awscli-install.log"; exit 1; }
fi
s3_started=""
if [ ! -f "$s3_cache/s3.env" ]; then
  scripts/s3-start.sh
  s3_started=1
  trap 'rm -rf "$work"; scripts/s3-stop.sh' EXIT
fi
# shellcheck disable=SC1091
. "$s3_cache/s3.env"
bench_s3="$STATEUTIL_TEST_S3/bench-$$"
aws() { "$awscli/bin/aws" "$@"; }
s3_clear() { aws s3 rm --recursive --quiet "$1" >/dev/null; }
# The server's CPU-seconds so far: on a loaded machine the clients and the
# server share the cores, so what each client makes the server spend
# counts as much as its own time.
server_cpu() { awk '{printf "%.2f\n", ($14 + $15) / 100}' "/proc/$STATEUTIL_TEST_S3_PID/stat"; }
# s3_round NAME OUT CMD...: round, with the server's CPU-seconds during
# it appended to $work/NAME-server.
s3_round() {
  local before
  before=$(server_cpu)
  round "$@"
  awk -v a="$before" -v b="$(server_cpu)" 'BEGIN {printf "%.2f\n", b - a}' >>"$work/$1-server"
}
# s3_line NAME: "Ns (CPU c s, server CPU s s)", medians.
s3_line() { echo "$(med_s "$1")s (CPU $(med_cpu "$1") s, server CPU $(median <"$work/$1-server") s)"; }

say "== S3 (moto on loopback): convert to S3 and back vs aws s3 cp --recursive ($(mib "$big") MiB, median of $rounds rounds)"
for i in $(seq "$rounds"); do
  s3_clear "$bench_s3/"
  s3_round s3up - "$bin" convert "$work/fs" --to filesystem --output "$bench_s3/su" --quiet
  s3_round cliup - "$awscli/bin/aws" s3 cp --recursive --quiet "$work/fs" "$bench_s3/cli"
  s3_round s3down "$work/s3-down" "$bin" convert "$bench_s3/su" --to filesystem --output "$work/s3-down" --quiet
  s3_round clidown "$work/cli-down" "$awscli/bin/aws" s3 cp --recursive --quiet "$bench_s3/cli" "$work/cli-down"
done
s3_clear "$bench_s3/"
rm -rf "$work/s3-down" "$work/cli-down"
say "local -> S3:  stateutil convert $(s3_line s3up), aws s3 cp $(s3_line cliup): ratio $(ratio "$(med_s cliup)" "$(med_s s3up)")   peak RSS $(max_rss s3up) MiB vs $(max_rss cliup) MiB   (runs: $(cut -d' ' -f1 "$work/s3up" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/cliup" | tr '\n' ' '))"
say "S3 -> local:  stateutil convert $(s3_line s3down), aws s3 cp $(s3_line clidown): ratio $(ratio "$(med_s clidown)" "$(med_s s3down)")   peak RSS $(max_rss s3down) MiB vs $(max_rss clidown) MiB   (runs: $(cut -d' ' -f1 "$work/s3down" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/clidown" | tr '\n' ' '))"
if [ -n "$s3_started" ]; then
  scripts/s3-stop.sh
  trap 'rm -rf "$work"' EXIT
fi
say ""
