#!/usr/bin/env bash
# Installs aotc's build and test dependencies from Debian 12's archive: as root with apt-get,
# otherwise it prints the exact apt-get line to run and stops.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config ccache python3 python3-venv dpkg-dev
  llvm-19-dev liblld-19-dev llvm-19-tools
  clang-19 libclang-rt-19-dev
  libprotobuf-dev protobuf-compiler libzip-dev
  libcli11-dev libfmt-dev libgtest-dev nlohmann-json3-dev libcpp-httplib-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "aotc: missing Debian packages; install them with:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "aotc: installing ${missing[*]}" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
