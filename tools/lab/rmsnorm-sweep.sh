#!/usr/bin/env bash
# tools/lab/rmsnorm-sweep.sh — one device call: RMSNorm backward's geometry swept through the lab
# build's knobs (tools/lab/rmsnorm-knobs.py): row-pass workgroup (VKBLR_LAB_RMS_WG), invocations over
# the batch (2^VKBLR_LAB_RMS_INV_LOG2), the dw pass's columns and slices,
# the row pass alone (ROWS_ONLY); all rows and attention before (.gpu/old: 0c138ec) and after; the
# [rmsnorm] and [attention] tests under validation (rmsnorm at the extreme geometries).
# Before, here: python3 tools/lab/rmsnorm-knobs.py; tools/lab/gpu-kit.sh --old <the baseline rev>; then
# `git checkout engine/src/ops/rmsnorm.cpp`. Carry [".gpu", ".devkit/lib", ".devkit/debs",
# ".devkit/layers.tgz"]. About 6 minutes; results in $OUT/rmsnorm-sweep.tgz, the tables on stdout.
set -u
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
for f in .gpu/*.gz .gpu/old/*.gz; do gunzip -kf $f; done; chmod +x .gpu/vkblr-* .gpu/old/vkblr-*
[ -d .devkit/layers ] || { mkdir -p .devkit/layers && tar -C .devkit -xzf .devkit/layers.tgz; }
source tools/dev/device-env.sh
export VKBLR_PIPELINE_CACHE_DIR=/tmp/vkblr-pc
A=/tmp/rmsnorm-sweep; mkdir -p $A/sweep
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
b() { local tag=$1; shift; env "$@" timeout 30 .gpu/vkblr-bench --json rows --op rmsnorm_bwd --reps 50 --stats > $A/sweep/$tag.json 2>/dev/null || echo "$tag rc $?"; }
echo "== sweep ($(el) s)"
b base0
for wg in 128 256 512 1024; do for inv in 15 16 17 18 19 20; do
  b wg$wg-inv$inv VKBLR_LAB_RMS_WG=$wg VKBLR_LAB_RMS_INV_LOG2=$inv
  b wg$wg-inv$inv-rows VKBLR_LAB_RMS_WG=$wg VKBLR_LAB_RMS_INV_LOG2=$inv VKBLR_LAB_RMS_ROWS_ONLY=1
done; done
echo "== dw ($(el) s)"
for c in 4 8 16 32; do for s in 8 16 32 64; do
  [ $((c * s)) -le 1024 ] && b dw$c-$s VKBLR_LAB_RMS_DW_COLS=$c VKBLR_LAB_RMS_DW_SLICES=$s
done; done
b base1
echo "== table ($(el) s)"
python3 - $A/sweep <<'PY' | tee $A/table.txt
import glob, json, os, sys
res = {}
for p in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        rows = json.load(open(p))["rows"]
    except Exception as e:
        print("bad", p, e); continue
    for r in rows:
        regs = r.get("kernel_stats", {}).get("rmsnorm_bwd", {}).get("Register Count", "?")
        split = "/".join(f"{v * 1e3:.1f}" for v in r.get("per_name_ms", {}).values())
        res.setdefault(r["model"], {})[os.path.basename(p)[:-5]] = (r["median_ms"] * 1e3, r.get("of_copy", 0), regs, split)
for m, d in res.items():
    print(f"{m}: base {d.get('base0', (0, 0))[0]:.1f} / {d.get('base1', (0, 0))[0]:.1f} us")
    for k in sorted(d, key=lambda k: d[k][0]):
        if not k.endswith("-rows"):
            ro = d.get(k + "-rows")
            print(f"  {k:16s} {d[k][0]:6.1f} us ({d[k][1]:.2f}) regs {d[k][2]} split {d[k][3]}"
                  + (f"  rows alone {ro[0]:6.1f} us" if ro else ""))
PY
echo "== rows, attention old/new ($(el) s)"
for v in old new; do
  bin=.gpu/vkblr-bench; [ $v = old ] && bin=.gpu/old/vkblr-bench
  timeout 40 $bin --json rows > $A/rows-$v.json; echo "rows $v rc $?"
  timeout 40 $bin --json attention > $A/attention-$v.json; echo "attention $v rc $?"
done
python3 - $A <<'PY' | tee $A/oldnew.txt
import json, os, sys
d = sys.argv[1]
for kind, key in (("rows", lambda r: (r["model"], r["op"])), ("attention", None)):
    try:
        old, new = (json.load(open(os.path.join(d, f"{kind}-{v}.json"))) for v in ("old", "new"))
    except Exception as e:
        print(kind, "missing", e); continue
    lo = old.get(kind) or old.get("rows") or []
    ln = new.get(kind) or new.get("rows") or []
    for a, b in zip(lo, ln):
        if kind == "rows":
            name, ms, share = f"{a['model']} {a['op']}", "median_ms", "of_copy"
        else:  # forward + backward
            name, ms, share = f"{a['batch']}x{a['seq']} h{a['heads']}/{a['kv_heads']} d{a['head_dim']}", "step_ms", "step_tflops"
        print(f"{kind:9s} {name:34s} {a.get(ms, 0) * 1e3:8.1f} -> {b.get(ms, 0) * 1e3:8.1f} us "
              f"({a.get(share, 0):.2f} -> {b.get(share, 0):.2f})")
PY
echo "== suite ($(el) s)"
timeout 120 .gpu/vkblr-tests "[attention]" --reporter compact > $A/suite-attention.log 2>&1; echo "[attention] rc $? $(grep -E 'passed|failed' $A/suite-attention.log | tail -1)"
for cfg in "" "VKBLR_LAB_RMS_WG=256 VKBLR_LAB_RMS_INV_LOG2=15" "VKBLR_LAB_RMS_WG=1024 VKBLR_LAB_RMS_INV_LOG2=20" \
           "VKBLR_LAB_RMS_DW_COLS=4 VKBLR_LAB_RMS_DW_SLICES=64" "VKBLR_LAB_RMS_DW_COLS=32 VKBLR_LAB_RMS_DW_SLICES=16" \
           "VKBLR_LAB_RMS_WG=128 VKBLR_LAB_RMS_INV_LOG2=16"; do
  env $cfg timeout 60 .gpu/vkblr-tests "[rmsnorm]" --reporter compact > $A/suite.log 2>&1
  echo "[rmsnorm] [$cfg] rc $? $(grep -E 'passed|failed' $A/suite.log | tail -1)"
done
tar -czf $OUT/rmsnorm-sweep.tgz -C $A .
echo "== done ($(el) s)"
