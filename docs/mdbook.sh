#!/usr/bin/env bash
# Installs the pinned mdBook when it is missing, then prints its path (for `.ci/run` and for anyone
# building the guide: `"$(docs/mdbook.sh)" build docs`).
#
# Debian (bookworm, this project's machines) has no mdbook package, so it is built from crates.io,
# without default features (no `serve`, `watch` or search index: the guide only needs `build`): about
# 2.5 minutes of CPU (8.5 minutes wall on a 2-core machine busy with other builds), once per machine;
# later runs find it and take no time. MDBOOK_ROOT installs it elsewhere than ~/.cargo.
set -euo pipefail

version=0.5.4
root=${MDBOOK_ROOT:-$HOME/.cargo}
bin=$root/bin/mdbook

if ! [[ -x $bin && $("$bin" --version) == "mdbook v$version" ]]; then
    cargo install mdbook --locked --version "$version" --no-default-features --root "$root" >&2
fi
echo "$bin"
