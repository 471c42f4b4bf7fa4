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

say "== S3 (moto on loopback): convert to S3 and back vs aws s3 cp --recursive ($(mib "$big") MiB, median of $rounds rounds)"
for i in $(seq "$rounds"); do
  s3_clear "$bench_s3/"
  round s3up - "$bin" convert "$work/fs" --to filesystem --output "$bench_s3/su" --quiet
  round cliup - aws s3 cp --recursive --quiet "$work/fs" "$bench_s3/cli"
  round s3down "$work/s3-down" "$bin" convert "$bench_s3/su" --to filesystem --output "$work/s3-down" --quiet
  round clidown "$work/cli-down" aws s3 cp --recursive --quiet "$bench_s3/cli" "$work/cli-down"
done
s3_clear "$bench_s3/"
rm -rf "$work/s3-down" "$work/cli-down"
say "local -> S3:  stateutil convert $(med_s s3up)s, aws s3 cp $(med_s cliup)s: ratio $(ratio "$(med_s cliup)" "$(med_s s3up)")   peak RSS $(max_rss s3up) MiB vs $(max_rss cliup) MiB   (runs: $(cut -d' ' -f1 "$work/s3up" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/cliup" | tr '\n' ' '))"
say "S3 -> local:  stateutil convert $(med_s s3down)s, aws s3 cp $(med_s clidown)s: ratio $(ratio "$(med_s clidown)" "$(med_s s3down)")   peak RSS $(max_rss s3down) MiB vs $(max_rss clidown) MiB   (runs: $(cut -d' ' -f1 "$work/s3down" | tr '\n' ' ')/ $(cut -d' ' -f1 "$work/clidown" | tr '\n' ' '))"
if [ -n "$s3_started" ]; then
  scripts/s3-stop.sh
  trap 'rm -rf "$work"' EXIT
fi
say ""
