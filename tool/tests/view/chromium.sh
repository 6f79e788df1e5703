#!/usr/bin/env bash
# The browser the `view` tests and `cargo xtask bench` load `acp view` pages in: Debian's
# `chromium`, installed with apt when it is missing. Prints the browser's path (what
# ACP_VIEW_BROWSER is set to). Needs root (or a chromium already on PATH).
set -euo pipefail
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
