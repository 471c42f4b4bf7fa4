#!/usr/bin/env bash
# Stops the server started by scripts/s3-start.sh (only that pid) and
# removes .cache/s3.env; the venv stays for the next start. Safe to run
# when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/s3"
pidfile="$state/server.pid"

name=s3-stop
mark="$state/server.py"
. "$root/scripts/server-lib.sh"
stop_server
rm -f "$cache/s3.env" "$pidfile" "$state/ready"
