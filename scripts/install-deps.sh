#!/usr/bin/env bash
# Installs the Debian 12 packages clmcache needs to build and test. Skips
# apt entirely when everything is already there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libxxhash-dev libbenchmark-dev
  libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev libre2-dev
  libboost-dev libsqlite3-dev libhiredis-dev redis-server
  chromium
)
# The server's client tests (tests/app/node) need node and npm; a Node.js
# installed some other way is kept.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
