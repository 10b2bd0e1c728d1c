#!/usr/bin/env bash
# Device calls for whole-model distillation (vkblr::model::LlamaTrainer,
# vkblr-train) on the GPU machine.
#   suite   $B/vkblr-tests "[model]" under the validation layers
#   bench   vkblr-bench --json model: tokens/s and memory of a distillation
#           step at the reference model's shape (8 windows of 1024, as the
#           peer's batch; keep and recompute; the dense and the factored
#           blr route; a cached and a live teacher) and at Qwen-0.5B's (one
#           window of 4096; keep and recompute)
#   profile the reference shape's step on the dense route, GPU time per
#           dispatch name
# Everything under $OUT is packed into $OUT/train.tgz at the end (only 8
# files come back from a call).
#
# Here, before the call:
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2 --target vkblr-tests vkblr-bench'
#   tools/dev/device-kit.sh && tar -C .devkit -czf .devkit/layers.tgz layers
#   for b in vkblr-tests vkblr-bench; do strip -o .gpu/$b build/device/tools/$b 2>/dev/null \
#     || strip -o .gpu/$b build/device/tests/$b; gzip -f .gpu/$b; done
# and carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"].
# Stages: tools/lab/train-checks.sh [stage...] (default: suite bench profile).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
B=${B:-.gpu}
for f in "$B"/*.gz; do [ -e "$f" ] && { [ -e "${f%.gz}" ] || gunzip -k "$f"; }; done
chmod +x "$B"/* 2>/dev/null
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
STAGE_S=${STAGE_S:-200}
log() { echo "== $* ($(date +%T))"; }
stages=${*:-suite bench profile}
want() { [[ " $stages " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if want suite; then
  log "suite under validation: ${TAGS:=[model],[blr]}"
  timeout "$STAGE_S" "$B"/vkblr-tests "$TAGS" --reporter compact -d yes > "$OUT/suite.log" 2>&1
  echo "rc $?"; tail -2 "$OUT/suite.log"; grep -E "FAILED|failed" "$OUT/suite.log" | head -20
fi

if want bench; then
  log "vkblr-bench model"
  timeout "$STAGE_S" "$B"/vkblr-bench --json model --case ref,8x1024,keep --case ref,8x1024,keep,factored \
    --case ref,8x1024,recompute --case qwen0.5b,1x4096,keep --case qwen0.5b,1x4096,recompute --steps 20 \
    > "$OUT/model-bench.json"
  echo "rc $?"
  timeout 60 "$B"/vkblr-bench --json model --case ref,8x1024,keep --live-teacher --steps 20 \
    > "$OUT/model-bench-live.json"
  echo "live rc $?"
  python3 - "$OUT" <<'PY'
import json, sys
for name in ("model-bench.json", "model-bench-live.json"):
    try:
        r = json.load(open(f"{sys.argv[1]}/{name}"))
    except Exception as e:
        print(name, "unreadable:", e); continue
    for c in r.get("model", []):
        if "error" in c:
            print(c["model"], c["sequences"], c["seq"], c["memory"], "error:", c["error"]); continue
        print(f'{c["model"]:9} {c["sequences"]}x{c["seq"]} {c["memory"]:9} {c.get("route", "factored"):8} '
              f'live={c["live_teacher"]!s:5} '
              f'{c["tokens_per_s"]/1e6:.3f} M tok/s  step {c["step_wall_ms"]["median"]:.2f} ms  '
              f'trainer {c["trainer_bytes"]/2**30:.2f} GiB  kept {c["activation_bytes"]/2**30:.2f} GiB  '
              f'weights {c["weights_bytes"]/2**30:.2f} GiB  KL {c["kl_first"]:.4g} -> {c["kl_last"]:.4g}')
PY
fi

if want profile; then
  log "vkblr-bench model --profile (dense route)"
  timeout "$STAGE_S" "$B"/vkblr-bench model --case ref,8x1024,keep --profile --steps 5 > "$OUT/model-profile.txt" 2>&1
  echo "rc $?"; head -40 "$OUT/model-profile.txt"
fi

tar -C "$OUT" -czf /tmp/train.tgz . && mv /tmp/train.tgz "$OUT/train.tgz"
