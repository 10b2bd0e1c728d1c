#!/usr/bin/env bash
# One device call for the row-wise transformer ops (issue 35): vkblr's GB/s
# against a copy's and PyTorch's on the same cases.
#   vkblr  $B/vkblr-bench --json rows (RMSNorm, SwiGLU, embedding, RoPE at
#          the reference, Qwen-0.5B and Llama-8B shapes; rows_bench.hpp)
#          → $OUT/rows-vkblr.json
#   torch  tools/lab/rows_torch.py (eager, torch.compile, CUDA graph) on the
#          same cases → $OUT/rows-torch.json
#   table  one line per case: vkblr GB/s and its share of the copy, PyTorch's
#          three, and vkblr's time over the best of PyTorch's
# Binaries in $B (default .gpu): vkblr-bench, gzipped or not.
#
# Here, before the call:
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2 --target vkblr-bench'
#   tools/dev/device-kit.sh
#   mkdir -p .gpu && strip -o .gpu/vkblr-bench build/device/tools/vkblr-bench && gzip -f .gpu/vkblr-bench
# and carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"].
# Stages: tools/lab/rows-checks.sh [stage...] (default: vkblr torch table);
# ARGS="--model llama-8b" passes a selection to both.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
B=${B:-.gpu}
for f in "$B"/*.gz; do [ -e "$f" ] && { [ -e "${f%.gz}" ] || gunzip -k "$f"; }; done
chmod +x "$B"/* 2>/dev/null
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
stages=${*:-vkblr torch table}
want() { [[ " $stages " == *" $1 "* ]]; }
read -r -a args <<< "${ARGS:-}"

if want vkblr; then
  echo "== vkblr-bench rows ($(date +%T))"
  "$B"/vkblr-bench --json rows "${args[@]}" > "$OUT/rows-vkblr.json"
  echo "rc=$?"
fi
if want torch; then
  echo "== rows_torch.py ($(date +%T))"
  python3 tools/lab/rows_torch.py "${args[@]}" > "$OUT/rows-torch.json"
  echo "rc=$?"
fi
if want table; then
  python3 - "$OUT/rows-vkblr.json" "$OUT/rows-torch.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
t = {(r["model"], r["op"]): r for r in json.load(open(sys.argv[2]))["rows"]}
print(f"vkblr on {v['device']}; GB/s of each op's compulsory bytes")
print(f"{'model':10s} {'op':22s} {'vkblr':>7s} {'×copy':>6s} {'eager':>7s} {'compile':>7s} {'graph':>7s} {'t/best':>6s}")
for r in v["rows"]:
    p = t.get((r["model"], r["op"]), {})
    if "error" in r:
        print(f"{r['model']:10s} {r['op']:22s} error: {r['error']}")
        continue
    rates = [p.get(m, {}).get("gbps") for m in ("eager", "compile", "graph")]
    best = max((x for x in rates if x), default=None)
    cells = " ".join(f"{x:7.0f}" if x else f"{'-':>7s}" for x in rates)
    ratio = f"{best / r['gbps']:6.2f}" if best else f"{'-':>6s}"
    print(f"{r['model']:10s} {r['op']:22s} {r['gbps']:7.0f} {r['of_copy']:6.2f} {cells} {ratio}")
PY
fi
