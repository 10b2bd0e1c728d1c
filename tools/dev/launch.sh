#!/usr/bin/env bash
# tools/dev/launch.sh TOOL [ARGS...] — build the release preset (incrementally)
# and run one of vkblr's tools (vkblr-fit, vkblr-info, vkblr-bench).
# Runs inside the dev root: tools/dev/devenv.sh run -- tools/dev/launch.sh vkblr-info
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 TOOL [ARGS...]" >&2; exit 2; }
tool=$1
shift
log=$(mktemp)
if ! { cmake --preset release && cmake --build --preset release --target "$tool"; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    echo "launch: building $tool failed" >&2
    exit 1
fi
rm -f "$log"
exec "build/release/tools/$tool" "$@"
