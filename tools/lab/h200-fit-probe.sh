#!/usr/bin/env bash
# One device call (the `device` tool's H200): the f32 GEMM's rates, the
# GPU init at the two target shapes, the PyTorch peer and vkblr-fit on the
# same .npy layers. Needs build/device and .devkit carried; writes $OUT.
#   tools/lab/h200-fit-probe.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/device-env.sh
B=build/device
FIT=$B/tools/vkblr-fit
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
log() { echo "== $* ($(date +%T))"; }

log info
$B/tools/vkblr-info --check > "$OUT/info.txt" 2>&1; tail -3 "$OUT/info.txt"

log gemm_f32
$B/tools/vkblr-bench gemm-f32 --shape 4096x1584x14336 --shape 14336x1584x4096 --shape 1584x1584x4096 \
  --shape 3584x384x1024 --shape 4096x4096x4096 --json > "$OUT/gemm_f32.json" 2> "$OUT/gemm_f32.err"
python3 -c "import json,sys; [print(c.get('shape'), c.get('tflops'), c.get('median_ms')) for c in json.load(open('$OUT/gemm_f32.json')).get('cases', [])]" 2>&1 | head -20

log families
python3 tools/lab/fit_peer.py families --out /tmp/fam --shape 3584x1024 --rank 352 2>&1 | tail -3
python3 tools/lab/fit_peer.py families --out /tmp/big --shape 4096x14336 --rank 1568 --family exponential 2>&1 | tail -2

run_fit() {  # name, args...
  local name=$1; shift
  local t0=$(date +%s.%N)
  $FIT "$@" --quiet --json --out /tmp/out-$name > /tmp/$name.json 2> /tmp/$name.err
  local rc=$?
  local t1=$(date +%s.%N)
  python3 - "$name" "$rc" "$t0" "$t1" <<'PY' | tee -a "$OUT/fit.jsonl"
import json, sys
name, rc, t0, t1 = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
row = {"name": name, "rc": rc, "wall_s": round(t1 - t0, 2)}
try:
    r = json.load(open(f"/tmp/{name}.json"))
    row.update(init=r["errors"]["init"]["output"] if "errors" in r else r.get("init", {}).get("output"),
               trained=r["errors"]["trained"]["output"] if "errors" in r else r.get("trained", {}).get("output"))
except Exception as e:
    row["error"] = open(f"/tmp/{name}.err").read()[-400:]
print(json.dumps(row))
PY
}
E="--weight /tmp/fam/exponential.w.npy --activations /tmp/fam/exponential.x.npy --tokens 32768 --held-out 4096"
D="--weight /tmp/fam/default.w.npy --activations /tmp/fam/default.x.npy --tokens 32768 --held-out 4096"
log vkblr-fit 3584x1024
run_fit exp-adam $E --refit-sweeps 0 --sign-opt adam --sign-lr 0.02 --flip-budget 0
run_fit exp-scales $E --refit-sweeps 0
run_fit def-adam $D --refit-sweeps 0 --sign-opt adam --sign-lr 0.02 --flip-budget 0
run_fit def-scales $D --refit-sweeps 0
log peer
python3 tools/lab/fit_peer.py train --w /tmp/fam/exponential.w.npy --x /tmp/fam/exponential.x.npy --rank 352 \
  | tee -a "$OUT/peer.jsonl"
python3 tools/lab/fit_peer.py train --w /tmp/fam/default.w.npy --x /tmp/fam/default.x.npy --rank 352 \
  | tee -a "$OUT/peer.jsonl"
python3 tools/lab/fit_peer.py train --w /tmp/big/exponential.w.npy --x /tmp/big/exponential.x.npy --rank 1568 \
  --steps 500 | tee -a "$OUT/peer.jsonl"
log done
