#!/usr/bin/env bash
# One device call (the `device` tool's H200): vkblr-fit's targets of the GPU
# fit (3584x1024 and 4096x14336 from .npy files, 2000 steps, 1 bpw, 2
# paths, 32768 + 4096 tokens), the recipe sweep on three families, the
# PyTorch peer on the same files, and the f32 GEMM's rates. Results go to
# $OUT as JSON lines as they come (a cut-off run keeps what it measured).
# Needs build/device (stripped binaries in $B) and .devkit carried.
#   tools/lab/h200-fit-probe.sh [bin dir]
set -uo pipefail
cd "$(dirname "$0")/../.."
source tools/dev/device-env.sh
B=${1:-build/device/tools}
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
log() { echo "== $* ($(date +%T))"; }

log info
$B/vkblr-info --check > "$OUT/info.txt" 2>&1; tail -2 "$OUT/info.txt"

log families
python3 tools/lab/fit_peer.py families --out /tmp/fam --shape 3584x1024 --rank 352 2>&1 | tail -3
python3 tools/lab/fit_peer.py families --out /tmp/big --shape 4096x14336 --rank 1568 --family exponential --x-f16 \
  2>&1 | tail -1

fit() {  # name, args...: one vkblr-fit run, a JSON line in $OUT/fit.jsonl
  local name=$1; shift
  local t0=$(date +%s.%N)
  $B/vkblr-fit "$@" --quiet --out /tmp/out-$name > /tmp/$name.log 2>&1
  local rc=$? t1=$(date +%s.%N)
  python3 - "$name" "$rc" "$t0" "$t1" "$*" <<'PY' | tee -a "$OUT/fit.jsonl"
import json, sys
name, rc, t0, t1, args = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
row = {"name": name, "rc": rc, "wall_s": round(t1 - t0, 2), "args": args}
try:
    r = json.load(open(f"/tmp/out-{name}.json"))
    row.update(init=r["errors"]["init"]["output"], trained=r["errors"]["trained"]["output"],
               saved=r["saved"]["stage"], stages=r.get("stages"), steps_per_s=r["training"]["settings"]["steps_per_s"])
except Exception:
    row["log"] = open(f"/tmp/{name}.log").read()[-600:]
print(json.dumps(row))
PY
}
files() { echo "--weight /tmp/$1/$2.w.npy --activations /tmp/$1/$2.x.npy --tokens 32768 --held-out 4096 --bpw 1"; }

log targets
fit warm $(files fam exponential) --steps 50
fit exp-default $(files fam exponential)
fit exp-default-again $(files fam exponential)
cmp /tmp/out-exp-default.safetensors /tmp/out-exp-default-again.safetensors && echo "same bits run after run"
fit def-default $(files fam default)
fit big-default $(files big exponential)
fit big-adam $(files big exponential) --refit-sweeps 0 --sign-opt adam --sign-lr 0.02 --flip-budget 0

log recipes
for fam in exponential default planted; do
  F=$(files fam $fam)
  fit $fam-scales $F --refit-sweeps 0 --sign-lr 0
  fit $fam-refit $F --refit-sweeps 4 --sign-lr 0
  for lr in 0.01 0.02 0.05; do fit $fam-adam$lr $F --refit-sweeps 0 --sign-opt adam --sign-lr $lr --flip-budget 0; done
  fit $fam-adam0.02b $F --refit-sweeps 0 --sign-opt adam --sign-lr 0.02 --flip-budget 0.001
  fit $fam-fact0.02 $F --refit-sweeps 0 --sign-opt fact --sign-lr 0.02
  fit $fam-bop $F --refit-sweeps 0 --sign-opt bop --sign-lr 0.02 --flip-budget 0
  fit $fam-refit-adam0.02 $F --refit-sweeps 4 --sign-opt adam --sign-lr 0.02 --flip-budget 0
done

log peer
peer() {  # family dir, family, rank, extra...
  local d=$1 f=$2 r=$3; shift 3
  python3 tools/lab/fit_peer.py train --w /tmp/$d/$f.w.npy --x /tmp/$d/$f.x.npy --rank $r "$@" 2>/tmp/peer.err \
    | tail -1 | tee -a "$OUT/peer.jsonl" || tail -3 /tmp/peer.err
}
for lr in 0.001 0.003 0.01; do peer fam exponential 352 --lr $lr; done
for lr in 0.001 0.003 0.01; do peer fam default 352 --lr $lr; done
peer fam planted 352 --lr 0.003
peer big exponential 1568 --lr 0.003
log gemm_f32
$B/vkblr-bench --json gemm-f32 --shape 4096x1600x14336 --shape 1600x1600x4096 --shape 4096x1600x1600 \
  --shape 3584x384x1024 > "$OUT/gemm_f32.json" 2> "$OUT/gemm_f32.err"; tail -3 "$OUT/gemm_f32.err"
log done
