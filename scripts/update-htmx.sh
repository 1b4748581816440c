#!/bin/sh
# The console's htmx (broker/http/console/static/htmx.min.js and its licence), taken from the npm registry's
# htmx.org package at a pinned version: `npm pack` fetches it, nothing is built. Change HTMX_VERSION to update it
# (tests/unit/test_console.py checks the shipped file is that version).
set -e
HTMX_VERSION=2.0.11
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX_VERSION" >/dev/null && tar xzf "htmx.org-$HTMX_VERSION.tgz")
cp "$work/package/dist/htmx.min.js" broker/http/console/static/htmx.min.js
cp "$work/package/LICENSE" broker/http/console/static/htmx-LICENSE.txt
echo "htmx $HTMX_VERSION in broker/http/console/static/"
