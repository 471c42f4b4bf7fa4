#!/usr/bin/env bash
# Installs what building and testing stateutil needs on Debian: RocksDB's
# library and tools, and the Go modules. Safe to run again: it only installs
# what is missing.
set -euo pipefail

# The modules download while apt works (neither waits for the other).
go mod download &
modules=$!

missing=()
for pkg in librocksdb-dev rocksdb-tools; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# S3 test server (scripts/s3-start.sh): moto in a venv, reached with curl.
python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
command -v curl >/dev/null || missing+=(curl)
# Azure test server (scripts/azure-start.sh): Azurite, from npm.
command -v npm >/dev/null || missing+=(npm)
# The HDFS, YARN and Flink test harnesses: a Java 17 and Maven.
ls /usr/lib/jvm/java-17-openjdk-*/bin/javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
# stateutil serve's browser tests: Debian's headless Chromium.
command -v chromium >/dev/null || missing+=(chromium chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} with apt-get"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
wait "$modules"
