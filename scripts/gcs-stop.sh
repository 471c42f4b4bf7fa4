#!/usr/bin/env bash
# Stops the server started by scripts/gcs-start.sh (only that pid) and
# removes .cache/gcs.env; the built server stays for the next start. Safe to
# run when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/gcs"
pidfile="$state/server.pid"

name=gcs-stop
mark="$state/fake-gcs-server-"
. "$root/scripts/server-lib.sh"
stop_server
rm -f "$cache/gcs.env" "$pidfile"
