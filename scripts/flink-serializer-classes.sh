#!/usr/bin/env bash
# Lists every serializer snapshot class that Apache Flink's own modules ship,
# for each Flink minor stateutil reads (1.15 to 2.3), from the release jars on
# Maven Central: testdata/flink-serializers.tsv (VERSION, MODULE, CLASS), which
# the coverage test (backends/flink, TestSerializerCoverage) turns into
# docs/serializers.md. A module a release does not publish is left out.
#
#   scripts/flink-serializer-classes.sh [VERSION...]
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
if [ ${#versions[@]} -eq 0 ]; then
  # One release per minor, x.y.0 where every module below was published.
  versions=(1.15.4 1.16.3 1.17.2 1.18.1 1.19.1 1.20.0 2.0.0 2.1.0 2.2.0 2.3.0)
fi
modules=(flink-core flink-java flink-streaming-java flink-runtime flink-table-common flink-table-runtime
  flink-cep flink-scala_2.12 flink-avro flink-protobuf)

central=${MAVEN_CENTRAL:-https://repo.maven.apache.org/maven2}
cache=${STATEUTIL_CACHE_DIR:-$PWD/.cache}/flink-serializer-jars
mkdir -p "$cache"
go build -o "$cache/serializerscan" ./internal/serializerscan

out=testdata/flink-serializers.tsv
tmp=$(mktemp "$out.XXXXXX")
trap 'rm -f "$tmp"' EXIT
printf '# version\tmodule\tclass (made by scripts/flink-serializer-classes.sh)\n' >"$tmp"
for v in "${versions[@]}"; do
  jars=()
  for m in "${modules[@]}"; do
    # A module some patch releases lack is taken from its minor's x.y.0.
    found=""
    for mv in "$v" "${v%.*}.0"; do
      jar="$cache/$m-$mv.jar"
      if [ ! -s "$jar" ] && curl -sfL -o "$jar.part" "$central/org/apache/flink/$m/$mv/$m-$mv.jar"; then
        mv "$jar.part" "$jar"
      fi
      rm -f "$jar.part"
      if [ -s "$jar" ]; then
        found=$jar
        break
      fi
    done
    if [ -z "$found" ]; then
      echo "$m $v: not on Maven Central, left out" >&2
      continue
    fi
    jars+=("$found")
  done
  "$cache/serializerscan" "$v" "${jars[@]}" >>"$tmp"
done
mv "$tmp" "$out"
trap - EXIT
echo "wrote $out: $(grep -vc '^#' "$out") classes over ${#versions[@]} releases"
