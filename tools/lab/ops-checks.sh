#!/usr/bin/env bash
# One device call for the transformer ops: their tests under validation on
# the GPU, and vkblr-bench beside PyTorch on the same cases.
#   suite      $B/vkblr-tests on the ops' tags (TAGS; default every op of a
#              Llama block) under the validation layers
#   rows       tools/lab/rows-checks.sh: RMSNorm, SwiGLU, embedding, RoPE
#              (vkblr-bench rows, rows_torch.py, their table)
#   attention  vkblr-bench --json attention (the library's kernel choice,
#              with ATTN_ARGS passed on, e.g. "--block 0 --block 32 --stats";
#              and the plain kernel unless ATTN_PLAIN=0) and
#              tools/lab/attention-sdpa.py (PyTorch's flash SDPA), with a
#              table: TFLOP/s and vkblr's share of the best of PyTorch's
#   loss       vkblr-bench --json loss and adamw, and
#              tools/lab/torch-loss-adamw.py on the same shapes
# Each stage runs under its own limit (STAGE_S seconds, default 150), so a
# slow one leaves time for the next; everything under $OUT is packed into
# $OUT/ops.tgz at the end (only 8 files come back from a call).
#
# Here, before the call:
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2 --target vkblr-tests vkblr-bench'
#   tools/dev/device-kit.sh && tar -C .devkit -czf .devkit/layers.tgz layers
#   for b in vkblr-tests vkblr-bench; do strip -o .gpu/$b build/device/tools/$b 2>/dev/null \
#     || strip -o .gpu/$b build/device/tests/$b; gzip -f .gpu/$b; done
# and carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"].
# Stages: tools/lab/ops-checks.sh [stage...] (default: suite rows attention loss).
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
STAGE_S=${STAGE_S:-150}
TAGS=${TAGS:-"[attention],[rmsnorm],[embedding],[rope],[swiglu],[add],[logit_loss],[adamw],[optim],[model]"}
log() { echo "== $* ($(date +%T))"; }
stages=${*:-suite rows attention loss}
want() { [[ " $stages " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"

if want suite; then
  log "suite under validation: $TAGS"
  timeout "$STAGE_S" "$B"/vkblr-tests "$TAGS" --reporter compact > "$OUT/suite.log" 2>&1
  echo "rc $?"; tail -2 "$OUT/suite.log"; grep -E "FAILED|failed" "$OUT/suite.log" | head -20
fi

if want rows; then
  log rows
  OUT=$OUT/rows timeout "$STAGE_S" tools/lab/rows-checks.sh 2>&1 | tail -40
fi

if want attention; then
  log attention
  read -r -a attn_args <<< "${ATTN_ARGS:-}"
  timeout $((STAGE_S / 3)) "$B"/vkblr-bench --json attention "${attn_args[@]}" > "$OUT/attention-vkblr.json"
  echo "vkblr rc $?"
  if [ "${ATTN_PLAIN:-1}" != 0 ]; then
    timeout $((STAGE_S / 3)) "$B"/vkblr-bench --json attention --kernel plain > "$OUT/attention-vkblr-plain.json"
    echo "vkblr plain rc $?"
  fi
  timeout $((STAGE_S / 2)) python3 tools/lab/attention-sdpa.py "$OUT/attention-torch.json" > /dev/null
  echo "torch rc $?"
  python3 tools/lab/attention_table.py "$OUT"
fi

if want loss; then
  log "loss and adamw"
  timeout $((STAGE_S / 3)) "$B"/vkblr-bench --json loss > "$OUT/loss-vkblr.json"; echo "vkblr loss rc $?"
  timeout $((STAGE_S / 6)) "$B"/vkblr-bench --json adamw > "$OUT/adamw-vkblr.json"; echo "vkblr adamw rc $?"
  timeout $((STAGE_S / 2)) python3 tools/lab/torch-loss-adamw.py > "$OUT/loss-adamw-torch.json"
  echo "torch rc $?"
fi

log "packing $OUT"
tar -C "$OUT" -czf /tmp/ops.tgz . && mv /tmp/ops.tgz "$OUT/ops.tgz"
ls -la "$OUT"
