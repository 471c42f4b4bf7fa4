#!/usr/bin/env bash
# Starts an Azure Blob Storage emulator on 127.0.0.1 for the tests (Azurite,
# from npm, pinned, installed into the cache dir) and writes .cache/azure.env:
#
#   scripts/azure-start.sh && . .cache/azure.env && go test ./storage/azure/; scripts/azure-stop.sh
#
# Environment (all optional):
#   STATEUTIL_CACHE_DIR             where state goes (default: <repo>/.cache)
#   STATEUTIL_AZURE_PORT            fixed port (default: a free one); a test that
#                                   restarts the server passes the port it had
#   STATEUTIL_AZURE_START_TIMEOUT   seconds to wait for the server (default 60)
#
# Azurite keeps blobs in memory: a restart starts empty, with the container
# created anew. If a server started from this cache dir still runs, it is
# reused.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${STATEUTIL_CACHE_DIR:-$root/.cache}
state="$cache/azure"
envfile="$cache/azure.env"
pidfile="$state/server.pid"
log="$state/server.log"
version=3.37.0
prefix="$state/azurite-$version"
server="$prefix/node_modules/.bin/azurite-blob"
container=stateutil-test
# Azurite's one account and its published key.
account=devstoreaccount1
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
timeout=${STATEUTIL_AZURE_START_TIMEOUT:-60}
t0=$SECONDS

name=azure-start
mark="$state/azurite-"
. "$root/scripts/server-lib.sh"

mkdir -p "$state"
reuse "$envfile"

if [[ ! -x $server || ! -f $prefix/.installed ]]; then
	command -v npm >/dev/null || die "npm is needed (Debian: apt-get install npm)"
	say "installing azurite@$version into $prefix"
	rm -rf "$prefix"
	mkdir -p "$prefix"
	npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "azurite@$version" >"$state/install.log" 2>&1 ||
		{ cat "$state/install.log" >&2; die "npm install azurite failed"; }
	touch "$prefix/.installed"
fi

port=${STATEUTIL_AZURE_PORT:-$(free_port)}
endpoint="http://127.0.0.1:$port/$account"
rm -f "$envfile"
: >"$log"
# setsid: a Ctrl-C aimed at the caller must not half-stop the server;
# azure-stop.sh stops it. No telemetry: nothing leaves this machine.
setsid "$server" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence \
	--skipApiVersionCheck --disableTelemetry --silent </dev/null >>"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

# Shared Key signing, as the SDKs do it, to create the container with curl.
sign() { # METHOD RESOURCE-LINES DATE
	python3 -c 'import base64, hashlib, hmac, sys
method, resource, date, account, key = sys.argv[1:]
text = method + "\n" * 12 + "x-ms-date:" + date + "\nx-ms-version:2021-08-06\n/" + account + "/" + account + resource.replace("|", "\n")
print(base64.b64encode(hmac.new(base64.b64decode(key), text.encode(), hashlib.sha256).digest()).decode())' "$1" "$2" "$3" "$account" "$key"
}
create_container() {
	local date sig
	date=$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S GMT')
	sig=$(sign PUT "/$container|restype:container" "$date")
	curl -sf -o /dev/null -X PUT -H "x-ms-date: $date" -H "x-ms-version: 2021-08-06" -H 'Content-Length: 0' \
		-H "Authorization: SharedKey $account:$sig" "$endpoint/$container?restype=container"
}

deadline=$((SECONDS + timeout))
until create_container; do
	kill -0 "$pid" 2>/dev/null || die "server (pid $pid) exited before it answered"
	if ((SECONDS >= deadline)); then
		kill -TERM "$pid" 2>/dev/null || true
		die "server not up (or creating container $container failed) after ${timeout}s; stopped it"
	fi
	sleep 0.2
done

cat >"$envfile.tmp" <<ENV
# Written by scripts/azure-start.sh; removed by scripts/azure-stop.sh.
export STATEUTIL_TEST_AZURE=abfss://$container@$account.dfs.core.windows.net/t
export STATEUTIL_TEST_AZURE_PORT=$port
export STATEUTIL_TEST_AZURE_PID=$pid
export STATEUTIL_TEST_AZURE_SERVER=$server
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=$account;AccountKey=$key;BlobEndpoint=$endpoint;"
ENV
mv "$envfile.tmp" "$envfile"
say "Azurite $version at $endpoint (pid $pid), container $container, up in $((SECONDS - t0))s; env in $envfile"
