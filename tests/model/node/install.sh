#!/bin/sh
# Installs the pinned npm packages of these reference checks unless package-lock.json
# is already installed. npm ci only installs what the lock file names.
set -eu
cd "$(dirname "$0")"
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --prefer-offline
fi
