#!/usr/bin/env bash
# Stops the server started by scripts/azure-start.sh (only that pid) and
# removes .cache/azure.env; the installed Azurite stays for the next start.
# Safe to run when nothing is running. Honours STATEUTIL_CACHE_DIR.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/azure"
pidfile="$state/server.pid"

name=azure-stop
mark="$state/azurite-"
. "$root/scripts/server-lib.sh"
stop_server
rm -f "$cache/azure.env" "$pidfile"
