#!/usr/bin/env bash
# One device call (the `device` tool's H200) for the checks still open:
#   1. the Catch2 suite under validation (the structure issue);
#   2. vkblr-bench blr and train, this tree against a baseline build, runs
#      alternated (within 2 % is the bar);
#   3. the default vkblr-fit run of both builds: the same bytes;
#   4. the gradient exchange of two ranks sharing the GPU (mpi_exchange_share
#      with a 231 MB block, and vkblr-fit's 3584x1024 layer with sign
#      training) through messages and through shared memory: times, the
#      same bits;
#   5. the same on the 4096x14336 layer at 1 bpw (a 231 MB block);
#   6. the whole-checkpoint manifest (tools/lab/llm_manifest.py, 8 layers):
#      uniform 1 bpw against --model-bpw 1 (total wall time, report rows).
# MANIFEST_JOBS picks the manifest stage's jobs and their order (default
# "uniform budget"); SUITE_FILTER, the suite's Catch2 test spec (default all);
# BIG_STEPS, the exchange-big stage's steps (default 100).
# Stages print their key figures on stdout (only 8 files come back) and
# write JSON and logs under $OUT as they go: a cut-off run keeps what it got.
#
# Here, before the call (both in the device preset, stripped). The builds
# run in the dev root, which sees only this repository: the baseline's
# worktree goes under build/ (git-ignored).
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2'
#   git worktree add build/base-src <baseline commit>   # e.g. cedb8cb, before the structure issue
#   (cd build/base-src && ../../tools/dev/devenv.sh run -- sh -c \
#     'cmake --preset device && cmake --build --preset device -j2 --target vkblr-bench vkblr-fit')
#   mkdir -p .h200 && for t in vkblr-fit vkblr-bench vkblr-info; do strip -o .h200/$t build/device/tools/$t; done
#   strip -o .h200/vkblr-tests build/device/tests/vkblr-tests
#   strip -o .h200/vkblr-mpi-test-trainer build/device/tests/vkblr-mpi-test-trainer
#   for t in vkblr-fit vkblr-bench; do strip -o .h200/base-$t build/base-src/build/device/tools/$t; done
#   gzip .h200/*
#   tar -C .devkit -czf .devkit/layers.tgz layers   # the validation layer: 27 MB, 8 MB packed
# and carry [".h200", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz", ".devkit/mpi.tar.gz"]
# (54 MiB with the tree; the limit is 64). Stages: tools/lab/h200-open-checks.sh [stage...] (default all).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
B=.h200
for f in $B/*.gz; do [ -e "${f%.gz}" ] || gunzip -k "$f"; done
chmod +x $B/* 2>/dev/null
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log() { echo "== $* ($(date +%T))"; }
stages=${*:-suite bench fit exchange exchange-big manifest}
want() { [[ " $stages " == *" $1 "* ]]; }
# Two result files: the same tensors and metadata but the command line
# (each run's, which names its binary and --out) and its checksum.
same_tensors() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def split(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n])
    meta = {k: v for k, v in h.pop("__metadata__", {}).items() if k not in ("command_line", "xxh3:__metadata__")}
    return h, meta, b[8 + n:]
a, b = split(sys.argv[1]), split(sys.argv[2])
print("same tensors and metadata but the command line" if a == b else
      f"DIFFER: tensors {'same' if a[0] == b[0] and a[2] == b[2] else 'differ'}, metadata keys differing: "
      f"{sorted(k for k in set(a[1]) | set(b[1]) if a[1].get(k) != b[1].get(k))}")
PY
}

$B/vkblr-info > "$OUT/info.txt" 2>&1
head -3 "$OUT/info.txt"; grep "host memory" "$OUT/info.txt"
df -h /dev/shm | tail -1   # the shared-memory exchange's window lives there

if want suite; then
  log suite under validation
  $B/vkblr-tests ${SUITE_FILTER:+"$SUITE_FILTER"} --reporter compact > "$OUT/suite.log" 2>&1
  echo "rc $?"; tail -3 "$OUT/suite.log"; grep -E "FAILED|failed" "$OUT/suite.log" | head -20
fi

if want bench; then
  log bench: this tree vs the baseline, alternated
  for pass in 1 2; do
    for who in base this; do
      bin=$B/vkblr-bench; [ $who = base ] && bin=$B/base-vkblr-bench
      for what in blr train; do
        $bin --json $what > /tmp/bench-$who-$what-$pass.json 2>/tmp/bench.err || tail -3 /tmp/bench.err
      done
    done
  done
  python3 - <<'PY' | tee "$OUT/bench.txt"
import glob, json, statistics as st
def load(who, what):
    rows = {}
    for f in sorted(glob.glob(f"/tmp/bench-{who}-{what}-*.json")):
        for r in json.load(open(f)).get(what, []):
            key = f"{r['m']}x{r['n']} r{r['r']} ntok {r['ntok']} P{r['paths']}"
            ms = r.get("step_ms") if what == "blr" else r.get("gpu_ms", {}).get("median")
            rows.setdefault(key, []).append(ms)
    return rows
for what in ("blr", "train"):
    b, t = load("base", what), load("this", what)
    for k in b:
        if k in t and None not in b[k] + t[k]:
            mb, mt = st.median(b[k]), st.median(t[k])
            print(f"{what} {k}: base {mb:.4f} ms, this {mt:.4f} ms, {100 * (mt / mb - 1):+.2f} %")
PY
  tar -C /tmp -czf "$OUT/bench.tgz" $(cd /tmp && ls bench-*.json) 2>/dev/null
fi

if want fit; then
  log default vkblr-fit: this tree vs the baseline
  $B/vkblr-fit --quiet --out /tmp/fit-this > /tmp/fit-this.log 2>&1; echo "this rc $?"
  $B/base-vkblr-fit --quiet --out /tmp/fit-base > /tmp/fit-base.log 2>&1; echo "base rc $?"
  cmp /tmp/fit-this.svg /tmp/fit-base.svg && echo "same svg bytes"
  same_tensors /tmp/fit-this.safetensors /tmp/fit-base.safetensors
  cp /tmp/fit-this.json "$OUT/fit-this.json"
fi

if want exchange; then
  log exchange: two ranks sharing the GPU
  mpirun -np 2 --bind-to none $B/vkblr-mpi-test-trainer --timing 57802752 2>&1 | grep -E "rank|sum" | tee "$OUT/exchange.txt"
  for ex in messages shared; do
    VKBLR_MPI_EXCHANGE=$ex mpirun -np 2 --bind-to none -x VKBLR_MPI_EXCHANGE $B/vkblr-fit --quiet --steps 300 --refit-sweeps 0 \
      --sign-lr 0.02 --timing-barrier --out /tmp/mpi-$ex > /tmp/mpi-$ex.log 2>&1
    echo "$ex rc $?"
    python3 -c "import json,sys; t=json.load(open('/tmp/mpi-$ex.json'))['training']['parallel']['step_timing']; print('$ex', json.dumps(t))" \
      | tee -a "$OUT/exchange.txt"
  done
  same_tensors /tmp/mpi-messages.safetensors /tmp/mpi-shared.safetensors
fi

if want exchange-big; then
  log "exchange: the 4096x14336 layer at 1 bpw (231 MB block), two ranks sharing the GPU"
  python3 tools/lab/fit_peer.py families --out /tmp/big --shape 4096x14336 --rank 1568 --family exponential \
    --x-f16 2>&1 | tail -1
  for ex in messages shared; do
    VKBLR_MPI_EXCHANGE=$ex mpirun -np 2 --bind-to none -x VKBLR_MPI_EXCHANGE $B/vkblr-fit --quiet --weight /tmp/big/exponential.w.npy \
      --activations /tmp/big/exponential.x.npy --tokens 32768 --held-out 4096 --bpw 1 --steps ${BIG_STEPS:-100} --refit-sweeps 0 \
      --sign-opt adam --sign-lr 0.02 --flip-budget 0 --timing-barrier --out /tmp/big-$ex > /tmp/big-$ex.log 2>&1
    echo "$ex rc $?"; tail -2 /tmp/big-$ex.log
    python3 -c "import json; t=json.load(open('/tmp/big-$ex.json'))['training']['parallel']['step_timing']; print('big $ex', json.dumps(t))" \
      | tee -a "$OUT/exchange.txt"
  done
  same_tensors /tmp/big-messages.safetensors /tmp/big-shared.safetensors
fi

if want manifest; then
  log manifest: 8 LLM layers, uniform 1 bpw vs --model-bpw 1
  python3 tools/lab/llm_manifest.py --out /tmp/llm 2>&1 | tail -2
  for job in ${MANIFEST_JOBS:-uniform budget}; do
    extra=""; [ $job = budget ] && extra="--model-bpw 1"
    t0=$(date +%s.%N)
    # the log goes straight to $OUT: a run the call's limit cuts off keeps its progress
    $B/vkblr-fit --manifest /tmp/llm/$job.json $extra --out /tmp/llm-$job > "$OUT/llm-$job.log" 2>&1
    echo "$job rc $? wall $(python3 -c "import time; print(round(time.time() - $t0, 1))") s"
    tail -4 "$OUT/llm-$job.log"
    cp /tmp/llm-$job.json "$OUT/llm-$job.json" 2>/dev/null
  done
fi
log done
