#!/bin/bash
#
# Install what building and testing ucx-gaudi needs on Debian 12, and fetch
# the UCX source tree matching the installed UCX. Idempotent; prints the
# UCX source path on stdout.
#
set -euo pipefail

pkgs=(build-essential g++ autoconf automake libtool pkg-config dpkg-dev
      libucx-dev ucx-utils libucx0 linux-libc-dev libcjson-dev libnuma-dev
      libdrm-dev libgtest-dev openmpi-bin libopenmpi-dev valgrind python3
      lintian chrpath)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    sudo=
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "setup: installing ${missing[*]}" >&2
    $sudo apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
        "${missing[@]}" >&2
fi

"$(dirname "$0")/ucx-src.sh"
