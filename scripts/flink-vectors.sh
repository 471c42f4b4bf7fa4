# Sourced by the scripts that regenerate a directory of serializer vectors
# (flink-core-value-vectors.sh, flink-serializer-vectors.sh): vectors CLASS
# NAME VERSION... runs testenv/flink's main class stateutil.flink.CLASS on
# the harness's class path of each Flink version, writing
# testdata/NAME/VERSION.jsonl through a temporary file.
vectors() {
	local class=$1 name=$2
	shift 2
	local root out v target tmp
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	out="$root/testdata/$name"
	mkdir -p "$out"
	for v in "$@"; do
		"$root/scripts/flink-harness.sh" "$v" build
		target="$root/testenv/flink/target/$v"
		tmp="$out/.$v.jsonl.tmp"
		java -cp "$target/classes:$(cat "$target/classpath.txt")" "stateutil.flink.$class" "$tmp"
		mv "$tmp" "$out/$v.jsonl"
		echo "$name: $out/$v.jsonl" >&2
	done
}
