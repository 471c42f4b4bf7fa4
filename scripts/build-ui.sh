#!/usr/bin/env bash
# Rebuilds serve/assets (stateutil serve's UI, embedded in the binary) from
# serve/ui: the libraries at the versions package-lock.json pins, bundled
# and minified by esbuild. The bundle is committed, so that building
# stateutil needs no npm; running this again gives the same bytes.
# --check rebuilds into a temporary folder and fails if the committed
# bundle differs.
set -euo pipefail
cd "$(dirname "$0")/../serve/ui"
out=../assets
if [ "${1:-}" = --check ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
esbuild=node_modules/.bin/esbuild
"$esbuild" src/app.js --bundle --minify --format=iife --target=es2020 --legal-comments=eof \
  --log-level=warning --outfile="$out/app.js"
"$esbuild" src/app.css --bundle --minify --log-level=warning --outfile="$out/app.css"
# The JSON-tree library adds this stylesheet to the page itself; the
# server's Content-Security-Policy allows exactly it, by its hash.
cp node_modules/json-formatter-js/dist/json-formatter.css "$out/json-formatter.css"
if [ "${1:-}" = --check ]; then
  for f in app.js app.css json-formatter.css; do
    cmp -s "$out/$f" "../assets/$f" || { echo "serve/assets/$f is not what scripts/build-ui.sh builds: run it and commit" >&2; exit 1; }
  done
  echo "serve/assets is what scripts/build-ui.sh builds"
fi
