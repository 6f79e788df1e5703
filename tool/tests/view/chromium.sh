#!/usr/bin/env bash
# The browser the `view` tests and `cargo xtask bench` load `acp view` pages in: Debian's
# `chromium`.
#
#   chromium.sh            installs it with apt when it is missing (needs root) and prints its path
#                          (what CI sets ACP_VIEW_BROWSER to)
#   chromium.sh run ARG…   runs $ACP_VIEW_BROWSER (else `chromium`) headless with ARG… and the
#                          flags this machine needs, in a fresh profile directory removed after
set -euo pipefail
if [ "${1:-}" = run ]; then
    shift
    profile=$(mktemp -d)
    trap 'rm -rf "$profile"' EXIT
    "${ACP_VIEW_BROWSER:-chromium}" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile" "$@"
    exit
fi
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "chromium.sh: chromium is not installed and this is not root; install Debian's chromium" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends chromium >&2 \
        || { apt-get update >&2 && apt-get install -y --no-install-recommends chromium >&2; }
fi
command -v chromium
