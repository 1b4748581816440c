#!/bin/sh
# A fresh Debian has python3 without the venv module (package python3-venv): install it when root.
PYTHON=${1:-python3}
if "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && exit 0
fi
echo "Python's venv module is missing: install it (Debian: apt-get install python3-venv) and rerun." >&2
exit 1
