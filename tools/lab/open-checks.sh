#!/usr/bin/env bash
# One device call for what issues 35 and 36 still need measured, the
# quick stages first under their own limits, so that a call cut short by
# little device time keeps them:
#   rows      vkblr-bench rows of .gpu/old (gpu-kit.sh --old REV) and of
#             this build: GB/s and share of a copy, before and after
#   attention vkblr-bench attention at each block (0 = the library's choice,
#             64, 32, 16; ATT_ARGS replaces these options, e.g. "--block 0
#             --prefetch on --prefetch off") with the kernels' statistics,
#             beside flash SDPA
#             (attention-sdpa.py, SDPA_QUICK: f16, eager and CUDA graph):
#             attention_table.py (with .gpu/old's vkblr-bench at its
#             automatic block, where there)
#   suite     the ops' tests under the validation layers (TAGS)
#   ref1x     the reference model trained (no transformers check), its
#             token files, then the peer on the calibration tokens at the
#             rates of PEER_LRS1 (default 1e-3,3e-3; PEER_COMPILE as in
#             model-checks.sh) with vkblr-train from Dual-SVID beside it on
#             the same GPU (VT_GRID1, settings lr:latent-rms; perplexities
#             do not depend on the sharing, the times of this stage are not
#             reported), then VT_GRID2 alone while time is left
#   fit4x     the reference model trained, vkblr-fit's 1 bpw layers (bpw1),
#             the token files, then the peer from those layers on 4x the
#             calibration tokens at PEER_LRS4 (default 3e-3; PEER_COMPILE as
#             in model-checks.sh) with vkblr-train beside it at VT_LRS4
#             (default 3e-3,5e-3) and the latent starts of VT_RMS4 (default
#             vkblr-train's --latent-rms)
#   qwen      token files and vkblr-train on a Qwen2.5-0.5B-shaped model
#             (model-checks.sh qwen; QWEN_STEPS, default 200)
# Stages: tools/lab/open-checks.sh [stage...] (default: rows attention suite
# ref1x). LIMIT (seconds, default 595) bounds the whole; the model stages
# get what is left. Results: $OUT/ops.tgz (rows, attention, suite logs),
# $OUT/model.tgz (.model-work's reports and logs), the tables on stdout.
# Before the call, here: tools/lab/gpu-kit.sh --old <rev>; carry
# [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz"].
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
LIMIT=${LIMIT:-595}
left() { local l=$(( LIMIT - $(el) )); echo $(( l > 1 ? l : 1 )); }  # never 0: `timeout 0` waits forever
export PYTHONUNBUFFERED=1 VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
stages=${*:-rows attention suite ref1x}
want() { [[ " $stages " == *" $1 "* ]]; }
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
for f in .gpu/*.gz .gpu/old/*.gz; do [ -e "$f" ] && { [ -e "${f%.gz}" ] || gunzip -k "$f"; }; done
chmod +x .gpu/vkblr-* .gpu/old/vkblr-* 2>/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
O=/tmp/open-checks; mkdir -p "$O"

if want rows; then
  echo "== rows ($(el) s)"
  [ -x .gpu/old/vkblr-bench ] && { timeout 40 .gpu/old/vkblr-bench --json rows > "$O/rows-old.json"; echo "old rc $?"; }
  timeout 40 .gpu/vkblr-bench --json rows > "$O/rows-new.json"; echo "new rc $?"
  python3 - "$O/rows-old.json" "$O/rows-new.json" <<'PY'
import json, sys
try:
    old = {(r["model"], r["op"]): r for r in json.load(open(sys.argv[1]))["rows"]}
except (OSError, ValueError):
    old = {}
new = json.load(open(sys.argv[2]))
print(f"{new['device']}: GB/s (share of a copy), before and after")
for r in new["rows"]:
    o = old.get((r["model"], r["op"]), {})
    print(f"{r['model']:10s} {r['op']:22s} {o.get('gbps', 0):7.0f} ({o.get('of_copy', 0):.2f})  "
          f"{r.get('gbps', 0):7.0f} ({r.get('of_copy', 0):.2f})")
PY
fi
if want attention; then
  echo "== attention ($(el) s)"
  read -r -a att_args <<< "${ATT_ARGS:---block 0 --block 64 --block 32 --block 16}"
  timeout 50 .gpu/vkblr-bench --json attention "${att_args[@]}" --stats > "$O/attention-vkblr.json"
  echo "vkblr rc $?"
  [ -x .gpu/old/vkblr-bench ] && { timeout 30 .gpu/old/vkblr-bench --json attention \
    > "$O/attention-old.json"; echo "old rc $?"; }
  SDPA_QUICK=1 timeout 35 python3 tools/lab/attention-sdpa.py "$O/attention-torch.json" > /dev/null 2> "$O/sdpa.log"
  echo "sdpa rc $?"
  python3 tools/lab/attention_table.py "$O" | tee "$O/attention-table.txt"
fi
if want suite; then
  echo "== tests under validation ($(el) s)"
  timeout 75 .gpu/vkblr-tests "${TAGS:-[attention],[rmsnorm],[embedding],[rope]}" --reporter compact \
    > "$O/suite.log" 2>&1
  echo "rc $?"; tail -2 "$O/suite.log"; grep -E "FAILED|failed" "$O/suite.log" | head -10
fi
tar -czf "$OUT/ops.tgz" -C "$O" .

M=/tmp/open-checks-m; mkdir -p "$M"
pack() { tar -czf "$OUT/model.tgz" -C .model-work --exclude='*.npy' --exclude='*.safetensors' --exclude='*.bin' \
  --exclude='*.pt' . 2>/dev/null; }
if want qwen; then
  echo "== qwen ($(el) s)"
  QWEN_STEPS=${QWEN_STEPS:-200} OUT=$M timeout "$(left)" tools/lab/model-checks.sh tokens qwen 2>&1 | tee -a "$OUT/mc.txt"
  pack
fi
if want fit4x; then
  echo "== fit4x ($(el) s)"
  HF_CHECK=0 OUT=$M timeout "$(left)" tools/lab/model-checks.sh train bpw1 tokens 2>&1 | tee -a "$OUT/mc.txt"
  echo "== elapsed $(el) s"; pack
  (VT_LRS=${VT_LRS4:-3e-3,5e-3} VT_RMS=${VT_RMS4:-} OUT=$M timeout "$(left)" tools/lab/model-checks.sh vt-fit4x > "$O/vtf.log" 2>&1) &
  vt=$!
  PEER_LRS=${PEER_LRS4:-3e-3} OUT=$M timeout "$(left)" tools/lab/model-checks.sh peer-fit4x 2>&1 | tee -a "$OUT/mc.txt"
  wait $vt; tee -a "$OUT/mc.txt" < "$O/vtf.log"
  echo "== elapsed $(el) s"; pack
fi
if want ref1x; then
  echo "== ref1x ($(el) s)"
  HF_CHECK=0 OUT=$M timeout "$(left)" tools/lab/model-checks.sh train tokens 2>&1 | tee -a "$OUT/mc.txt"
  echo "== elapsed $(el) s"; pack
  vt_grid() {  # lr:rms ... → one vt-ds stage per setting (the stage's JSON gathers every run so far)
    for s in "$@"; do
      [ "$(left)" -gt 45 ] || break
      VT_LRS=${s%:*} VT_RMS=${s#*:} OUT=$M timeout "$(left)" tools/lab/model-checks.sh vt-ds
    done
  }
  read -r -a grid1 <<< "${VT_GRID1:-3e-3:0.1 3e-3:0.2}"
  read -r -a grid2 <<< "${VT_GRID2:-5e-3:0.2 1e-3:0.04}"
  (vt_grid "${grid1[@]}" > "$O/vt1.log" 2>&1) &
  vt=$!
  PEER_LRS=${PEER_LRS1:-1e-3,3e-3} OUT=$M timeout "$(left)" tools/lab/model-checks.sh peer 2>&1 | tee -a "$OUT/mc.txt"
  wait $vt; tee -a "$OUT/mc.txt" < "$O/vt1.log"
  echo "== elapsed $(el) s"; pack
  vt_grid "${grid2[@]}" 2>&1 | tee -a "$OUT/mc.txt"
  echo "== elapsed $(el) s"; pack
fi
ls -la "$OUT"
