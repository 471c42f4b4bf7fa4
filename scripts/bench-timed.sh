# Sourced by the Flink benchmarks (bench-flink.sh, bench-flink-upgrade.sh):
# their results line and their clock. Needs $work (a scratch directory) and
# $results (where the lines go besides stdout).
say() { printf '%s\n' "$*" | tee -a "$results"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f\n", a / b}'; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# timed NAME CMD...: "seconds peak-RSS-MiB CPU-seconds" of one run, the
# seconds including the sync of what it wrote, appended to $work/t.NAME.
timed() {
  local name=$1
  shift
  sync
  /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" >/dev/null
  local t0 t1
  t0=$(date +%s.%N)
  sync
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" '{printf "%.2f %.0f %.2f\n", $1 + b - a, $2/1024, $3 + $4}' "$work/time" >>"$work/t.$name"
}
med() { cut -d" " -f1 "$work/t.$1" | median; }
cpu() { cut -d" " -f3 "$work/t.$1" | median; }
rss() { cut -d" " -f2 "$work/t.$1" | sort -n | tail -1; }
