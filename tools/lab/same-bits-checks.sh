#!/usr/bin/env bash
# One device call for the same-bits work: results that must not depend on
# the thread or rank count, and the bit budget's allocation time.
#   suite    the Catch2 suite under validation ($B/vkblr-tests), its log in
#            the archive
#   data     the six-layer block (llm_manifest.py --layout block1k: q, k, o,
#            gate, up, down of hidden 1024, MLP 2816; 32768 + 4096 tokens)
#            and the 8-layer LLM slice (--layout llama8b), on the GPU
#   ranks    the block at 1 bpw (2000 steps): one process, and mpirun -np 2
#            (both ranks on the GPU, each bound to a core, mpirun's
#            default); every layer's tensors compared
#   budget   --model-bpw 1 on the block: the allocation's and the fits'
#            wall and device times (the report's stages) and the ranks,
#            of $B/old-vkblr-fit (the baseline) where it is there, then of
#            this tree's; with PROFILE=1 this tree's runs under gperftools'
#            CPU profiler in wall-clock mode (a binary linked with it:
#            $B/prof-vkblr-fit), the profile in $OUT
#   llm      --model-bpw 1 on the 8 LLM layers: the allocation stage (with
#            PROFILE=1, profiled; LLM_WHOLE=1 runs the whole job, else it
#            is stopped once the first layer's fit begins)
#   threads  the init of the LLM gate_proj (1 bpw, 2 paths of rank 1568:
#            r×r problems of 1600): this tree's (OpenBLAS on one thread)
#            and the baseline's (all cores) init stage wall time
# Binaries in $B (default .gpu): vkblr-fit (and prof-vkblr-fit for
# PROFILE=1), gzipped or not. Stages print their key figures on stdout and
# write logs and JSON under $OUT as they go; at the end everything under
# $OUT is packed into $OUT/same-bits.tgz (only 8 files come back from a
# call).
#
# Here, before the call:
#   tools/dev/devenv.sh run -- sh -c 'cmake --preset device && cmake --build --preset device -j2'
#   tools/dev/device-kit.sh
#   mkdir -p .gpu && strip -o .gpu/vkblr-fit build/device/tools/vkblr-fit && gzip -f .gpu/vkblr-fit
# and carry [".gpu", ".devkit/lib", ".devkit/debs", ".devkit/layers.tgz", ".devkit/mpi.tar.gz"].
# Stages: tools/lab/same-bits-checks.sh [stage...] (default: suite data ranks budget llm threads).
set -uo pipefail
cd "$(dirname "$0")/../.."
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
B=${B:-.gpu}
for f in "$B"/*.gz; do [ -e "$f" ] && { [ -e "${f%.gz}" ] || gunzip -k "$f"; }; done
chmod +x "$B"/* 2>/dev/null
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
log() { echo "== $* ($(date +%T))"; }
stages=${*:-suite data ranks budget llm threads}
want() { [[ " $stages " == *" $1 "* ]]; }
now() { date +%s.%N; }
since() { python3 -c "import sys; print(round($(now) - $1, 1))"; }

# same_layers A B: the layers of two manifest result files, tensor by
# tensor (bytes), with the tensors that differ named.
same_layers() {
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(p):
    b = open(p, "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    return {k: b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]] for k, v in h.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
layers = sorted({k.rsplit(".weight", 1)[0] for k in a})
for layer in layers:
    names = sorted(k for k in set(a) | set(b) if k.startswith(layer + ".weight"))
    bad = [k[len(layer) + 1:] for k in names if a.get(k) != b.get(k)]
    print(f"  {layer}: {'same' if not bad else 'DIFFER in ' + str(len(bad)) + ' of ' + str(len(names)) + ' tensors'}")
print("all layers the same" if all(a.get(k) == b.get(k) for k in set(a) | set(b)) else "SOME LAYERS DIFFER")
PY
}
# stage_times REPORT: the report's stage times and totals
stage_times() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r["totals"]
print("  stages", json.dumps(r.get("stages", {})), "fits wall", round(t.get("fit_wall_s", 0), 1), "s, job wall",
      round(t.get("wall_s", 0), 1), "s; bpw", round(t.get("bpw", 0), 4), "weighted error",
      json.dumps(t.get("weighted_output_error")))
for row in r["layers"]:
    print(f"  {row['name']}: rank {row.get('rank')}, init {row.get('stages', {}).get('init', {})}")
PY
}

$B/vkblr-info > "$OUT/info.txt" 2>&1
head -2 "$OUT/info.txt"; nproc; grep -m1 "model name" /proc/cpuinfo

if want suite; then
  log suite under validation
  $B/vkblr-tests --reporter compact > "$OUT/suite.log" 2>&1
  echo "rc $?"; tail -3 "$OUT/suite.log"; grep -E "FAILED|failed" "$OUT/suite.log" | head -20
fi

if want data; then
  log data: the six-layer block and the 8-layer LLM slice
  python3 tools/lab/llm_manifest.py --layout block1k --blocks 1 --out /tmp/block 2>&1 | tail -1
  python3 tools/lab/llm_manifest.py --layout llama8b --blocks 2 --out /tmp/llm 2>&1 | tail -1
fi

if want ranks; then
  log "ranks: the block at 1 bpw, one process and two ranks"
  mkdir -p /tmp/one /tmp/two
  t0=$(now); $B/vkblr-fit --manifest /tmp/block/uniform.json --out /tmp/one/block > "$OUT/block-one.log" 2>&1
  echo "one process rc $? wall $(since $t0) s"
  t0=$(now); mpirun -np 2 $B/vkblr-fit --manifest /tmp/block/uniform.json --out /tmp/two/block > "$OUT/block-two.log" 2>&1
  echo "mpirun -np 2 rc $? wall $(since $t0) s"
  echo "one process vs two ranks:"; same_layers /tmp/one/block.safetensors /tmp/two/block.safetensors
  cp /tmp/one/block.json "$OUT/block-one.json"; cp /tmp/two/block.json "$OUT/block-two.json"
  stage_times /tmp/one/block.json
fi

# profiled RUN...: RUN under the CPU profiler (wall clock) when PROFILE=1
profiled() {
  local name=$1; shift
  if [ "${PROFILE:-0}" = 1 ]; then
    CPUPROFILE="$OUT/$name.prof" CPUPROFILE_REALTIME=1 CPUPROFILE_FREQUENCY=200 "$@"
  else
    "$@"
  fi
}

if want budget; then
  log "budget: --model-bpw 1 on the block"
  if [ -x $B/old-vkblr-fit ]; then
    t0=$(now); $B/old-vkblr-fit --manifest /tmp/block/budget.json --model-bpw 1 --out /tmp/block-budget-old \
      > "$OUT/block-budget-old.log" 2>&1
    echo "baseline rc $? wall $(since $t0) s"; stage_times /tmp/block-budget-old.json
  fi
  fit=$B/vkblr-fit; [ "${PROFILE:-0}" = 1 ] && fit=$B/prof-vkblr-fit
  t0=$(now); profiled block-budget $fit --manifest /tmp/block/budget.json --model-bpw 1 --out /tmp/block-budget \
    > "$OUT/block-budget.log" 2>&1
  echo "this tree rc $? wall $(since $t0) s"
  stage_times /tmp/block-budget.json; cp /tmp/block-budget.json "$OUT/block-budget.json"
  [ -x $B/old-vkblr-fit ] && { echo "baseline vs this tree:"; same_layers /tmp/block-budget-old.safetensors /tmp/block-budget.safetensors; }
fi

if want llm; then
  log "llm: --model-bpw 1 on the 8 LLM layers"
  fit=$B/vkblr-fit; [ "${PROFILE:-0}" = 1 ] && fit=$B/prof-vkblr-fit
  t0=$(now)
  if [ "${LLM_WHOLE:-0}" = 1 ]; then
    $fit --manifest /tmp/llm/budget.json --model-bpw 1 --out /tmp/llm-budget > "$OUT/llm-budget.log" 2>&1
    echo "rc $? wall $(since $t0) s"; stage_times /tmp/llm-budget.json; cp /tmp/llm-budget.json "$OUT/llm-budget.json"
  else
    # profiled from the start to the end of the allocation (CPUPROFILESIGNAL:
    # SIGUSR2 starts the profile, the next one writes it as llm-alloc.prof.0),
    # then the job is stopped
    prof=(); [ "${PROFILE:-0}" = 1 ] && prof=(env CPUPROFILE="$OUT/llm-alloc.prof" CPUPROFILE_REALTIME=1 CPUPROFILESIGNAL=12)
    "${prof[@]}" $fit --manifest /tmp/llm/budget.json --model-bpw 1 --out /tmp/llm-budget > "$OUT/llm-alloc.log" 2>&1 &
    job=$!
    sleep 0.2; [ "${PROFILE:-0}" = 1 ] && kill -USR2 $job
    until grep -q "^layer 1/" "$OUT/llm-alloc.log" 2>/dev/null || ! kill -0 $job 2>/dev/null; do sleep 0.5; done
    echo "allocation ended after $(since $t0) s"
    [ "${PROFILE:-0}" = 1 ] && { kill -USR2 $job; sleep 2; }
    kill -INT $job; wait $job
    grep -E "PROBE|--model-bpw 1:" "$OUT/llm-alloc.log" | tail -3
    grep -a -o "allocate[^[]*\][^(]*([^)]*)" "$OUT/llm-alloc.log" | tail -1
    ls "$OUT"
  fi
fi

if want threads; then
  log "threads: the init of the LLM gate_proj, OpenBLAS on one thread (this tree) and on all cores (baseline)"
  for who in this old; do
    bin=$B/vkblr-fit; [ $who = old ] && bin=$B/old-vkblr-fit
    [ -x $bin ] || continue
    t0=$(now)
    $bin --weight /tmp/llm/model.safetensors --tensor model.layers.0.mlp.gate_proj.weight \
      --activations /tmp/llm/inputs.safetensors --activations-tensor model.layers.0.mlp.gate_proj.input \
      --tokens 32768 --held-out 4096 --bpw 1 --steps 1 --quiet --out /tmp/gate-$who > "$OUT/gate-$who.log" 2>&1
    echo "$who rc $? wall $(since $t0) s"
    python3 -c "import json; r=json.load(open('/tmp/gate-$who.json')); print('  stages', json.dumps(r.get('stages')))"
  done
fi
log done
(cd "$OUT" && tar -czf /tmp/same-bits.tgz --exclude same-bits.tgz . && mv /tmp/same-bits.tgz .)
