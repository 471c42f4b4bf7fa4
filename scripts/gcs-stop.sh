#!/usr/bin/env bash
# Stops the server started by scripts/gcs-start.sh (only that pid) and
# removes .cache/gcs.env; the built server stays for the next start. Safe to
# run when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/gcs"
pidfile="$state/server.pid"

. "$root/scripts/stop-server.sh"
stop_server gcs-stop "$pidfile" "$state/fake-gcs-server-"
rm -f "$cache/gcs.env" "$pidfile"
